package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Version is the message schema version written by this package and the only one accepted.
const Version = 1

// Message is one value-carrying message on the bus (schema version 1). On the wire (JSON,
// the default) it reads
//
//	{"v":1,"run":"r1","ep":0,"step":3,"from":"plant.0","sent":1700000000000000000,"kind":"yhat","vals":[0.5,-1.25]}
//
// Every receiver requires Kind (the data stream, or the ctl word of a coordination message) and
// drops a message without it; EncodeJSON leaves out only an empty one.
type Message struct {
	V            int       `json:"v"`              // schema version (Version)
	Run          string    `json:"run"`            // run id (a subject token)
	Episode      int       `json:"ep"`             // Monte Carlo episode, 0-based
	Step         int       `json:"step"`           // time step t within the episode, 0-based
	Sender       string    `json:"from"`           // "<role>.<id>", e.g. "plant.0"
	SentUnixNano int64     `json:"sent"`           // sender's wall clock at publish, Unix ns
	Kind         string    `json:"kind,omitempty"` // required: yhat, u, y, or a ctl word
	Values       []float64 `json:"vals"`           // the payload vector
	// Route is the delivery metadata from the NATS headers (see Route); not in the payload.
	Route Route `json:"-"`
}

// Reset clears m but keeps the capacity of Values.
func (m *Message) Reset() {
	*m = Message{Values: m.Values[:0]}
}

// Encoding selects the wire format.
type Encoding uint8

const (
	// JSON is the default, human-readable encoding (watch it with `nats sub 'dpsim.>'`).
	JSON Encoding = iota
	// Binary is the compact little-endian encoding: see EncodeBinary.
	Binary
)

func (e Encoding) String() string {
	switch e {
	case JSON:
		return "json"
	case Binary:
		return "binary"
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

// ParseEncoding parses "json" or "binary".
func ParseEncoding(s string) (Encoding, error) {
	switch s {
	case "json", "":
		return JSON, nil
	case "binary", "bin":
		return Binary, nil
	}
	return JSON, fmt.Errorf("wire: unknown encoding %q (want json or binary)", s)
}

// BinaryMagic is the first byte of a binary-encoded message. It can never start a JSON
// text, so Decode tells the two encodings apart by the first byte.
const BinaryMagic byte = 0xD5

// binaryHeader is the fixed part of the binary encoding, see EncodeBinary.
const binaryHeader = 25

// ErrEncode is wrapped by encoding errors (non-finite values in JSON, oversized fields).
var ErrEncode = errors.New("wire: cannot encode message")

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("wire: cannot decode message")

// Encode appends the encoding of m to dst and returns the extended slice. It does not
// allocate when dst has enough capacity.
func Encode(dst []byte, m *Message, enc Encoding) ([]byte, error) {
	switch enc {
	case JSON:
		return EncodeJSON(dst, m)
	case Binary:
		return EncodeBinary(dst, m)
	}
	return dst, fmt.Errorf("%w: unknown encoding %v", ErrEncode, enc)
}

// EncodeJSON appends the JSON encoding of m to dst. Values use the shortest decimal that
// round-trips exactly (strconv 'g', -1). JSON has no NaN or infinity, so a non-finite value
// is an error (the binary encoding carries them, and receivers reject them in Validate).
func EncodeJSON(dst []byte, m *Message) ([]byte, error) {
	for i, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, fmt.Errorf("%w: value %d is %v (JSON carries finite numbers only)", ErrEncode, i, v)
		}
	}
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(m.V), 10)
	dst = append(dst, `,"run":`...)
	dst = appendJSONString(dst, m.Run)
	dst = append(dst, `,"ep":`...)
	dst = strconv.AppendInt(dst, int64(m.Episode), 10)
	dst = append(dst, `,"step":`...)
	dst = strconv.AppendInt(dst, int64(m.Step), 10)
	dst = append(dst, `,"from":`...)
	dst = appendJSONString(dst, m.Sender)
	dst = append(dst, `,"sent":`...)
	dst = strconv.AppendInt(dst, m.SentUnixNano, 10)
	if m.Kind != "" {
		dst = append(dst, `,"kind":`...)
		dst = appendJSONString(dst, m.Kind)
	}
	dst = append(dst, `,"vals":[`...)
	for i, v := range m.Values {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	}
	dst = append(dst, "]}"...)
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json does).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// EncodeBinary appends the compact binary encoding of m to dst. Layout (little-endian):
//
//	offset size field
//	0      1    magic 0xD5 (BinaryMagic)
//	1      1    schema version (uint8)
//	2      1    len(run)    (uint8)
//	3      1    len(from)   (uint8)
//	4      1    len(kind)   (uint8)
//	5      4    episode     (int32)
//	9      4    step        (int32)
//	13     8    sent        (int64, Unix ns)
//	21     4    len(vals)   (uint32)
//	25     ...  run, from, kind bytes, then len(vals) float64 (IEEE 754 bits)
//
// A message is exactly 25 + len(run)+len(from)+len(kind) + 8*len(vals) bytes.
func EncodeBinary(dst []byte, m *Message) ([]byte, error) {
	if m.V < 0 || m.V > math.MaxUint8 {
		return dst, fmt.Errorf("%w: version %d does not fit the binary header", ErrEncode, m.V)
	}
	if len(m.Run) > math.MaxUint8 || len(m.Sender) > math.MaxUint8 || len(m.Kind) > math.MaxUint8 {
		return dst, fmt.Errorf("%w: run, from and kind must be at most 255 bytes for the binary encoding", ErrEncode)
	}
	if m.Episode < math.MinInt32 || m.Episode > math.MaxInt32 || m.Step < math.MinInt32 || m.Step > math.MaxInt32 {
		return dst, fmt.Errorf("%w: episode %d or step %d outside int32", ErrEncode, m.Episode, m.Step)
	}
	if uint64(len(m.Values)) > math.MaxUint32 {
		return dst, fmt.Errorf("%w: %d values", ErrEncode, len(m.Values))
	}
	dst = append(dst, BinaryMagic, byte(m.V), byte(len(m.Run)), byte(len(m.Sender)), byte(len(m.Kind)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(m.Episode)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(m.Step)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.SentUnixNano))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Values)))
	dst = append(dst, m.Run...)
	dst = append(dst, m.Sender...)
	dst = append(dst, m.Kind...)
	for _, v := range m.Values {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst, nil
}

// DetectEncoding reports the encoding of data by its first byte.
func DetectEncoding(data []byte) Encoding {
	if len(data) > 0 && data[0] == BinaryMagic {
		return Binary
	}
	return JSON
}

// Decode decodes data (JSON or binary, detected by the first byte) into m, reusing the
// capacity of m.Values and keeping m's string fields when the decoded strings are equal,
// so decoding a stream into one Message does not allocate in the steady state. On error m
// is left in an unspecified (but safe) state. Decode never panics; it does not validate the
// contents (see Validate).
func Decode(data []byte, m *Message) error {
	if len(data) > 0 && data[0] == BinaryMagic {
		return decodeBinary(data, m)
	}
	return decodeJSON(data, m)
}

// internString returns old if b spells it (no allocation), else string(b).
func internString(old string, b []byte) string {
	if string(b) == old {
		return old
	}
	return string(b)
}

func decodeBinary(data []byte, m *Message) error {
	if len(data) < binaryHeader {
		return fmt.Errorf("%w: binary message of %d bytes is shorter than its %d-byte header", ErrDecode, len(data), binaryHeader)
	}
	if data[1] != Version {
		// The layout after the header may differ between versions: refuse to guess.
		return &InvalidError{Reason: ReasonVersion, Detail: fmt.Sprintf("binary schema version %d, want %d", data[1], Version)}
	}
	lr, lf, lk := int(data[2]), int(data[3]), int(data[4])
	n := uint64(binary.LittleEndian.Uint32(data[21:25]))
	want := uint64(binaryHeader+lr+lf+lk) + 8*n
	if uint64(len(data)) != want {
		return fmt.Errorf("%w: binary message is %d bytes, header announces %d", ErrDecode, len(data), want)
	}
	m.V = int(data[1])
	m.Episode = int(int32(binary.LittleEndian.Uint32(data[5:9])))
	m.Step = int(int32(binary.LittleEndian.Uint32(data[9:13])))
	m.SentUnixNano = int64(binary.LittleEndian.Uint64(data[13:21]))
	p := binaryHeader
	m.Run = internString(m.Run, data[p:p+lr])
	p += lr
	m.Sender = internString(m.Sender, data[p:p+lf])
	p += lf
	m.Kind = internString(m.Kind, data[p:p+lk])
	p += lk
	vals := m.Values[:0]
	for i := uint64(0); i < n; i++ {
		vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(data[p:p+8])))
		p += 8
	}
	m.Values = vals
	return nil
}

// maxJSONDepth bounds the nesting of unknown fields that the JSON decoder skips.
const maxJSONDepth = 32

type jsonDec struct {
	b []byte
	i int
}

func (d *jsonDec) errf(format string, args ...any) error {
	return fmt.Errorf("%w: JSON at byte %d: %s", ErrDecode, d.i, fmt.Sprintf(format, args...))
}

func (d *jsonDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (d *jsonDec) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *jsonDec) expect(c byte) error {
	if d.peek() != c {
		if d.i >= len(d.b) {
			return d.errf("unexpected end, want %q", c)
		}
		return d.errf("got %q, want %q", d.b[d.i], c)
	}
	d.i++
	return nil
}

// str reads a JSON string. Without escapes it returns a sub-slice of the input (no copy);
// with escapes it returns a newly allocated, unescaped copy.
func (d *jsonDec) str() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, nil
		case c == '\\':
			return d.strSlow(start)
		case c < 0x20:
			return nil, d.errf("control character in string")
		}
		d.i++
	}
	return nil, d.errf("unterminated string")
}

func (d *jsonDec) strSlow(start int) ([]byte, error) {
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return out, nil
		case c < 0x20:
			return nil, d.errf("control character in string")
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		// escape
		if d.i+1 >= len(d.b) {
			return nil, d.errf("unterminated escape")
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.errf("bad \\u escape")
			}
			if utf16IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					var ok2 bool
					r2, ok2 = d.hex4()
					if !ok2 {
						return nil, d.errf("bad \\u escape")
					}
					if dec := decodeSurrogates(r, r2); dec != utf8.RuneError {
						r = dec
						r2 = -2 // consumed
					} else {
						d.i = save
					}
				}
				if r2 != -2 {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, d.errf("bad escape \\%c", e)
		}
	}
	return nil, d.errf("unterminated string")
}

func utf16IsSurrogate(r rune) bool { return 0xd800 <= r && r < 0xe000 }

func decodeSurrogates(r1, r2 rune) rune {
	if 0xd800 <= r1 && r1 < 0xdc00 && 0xdc00 <= r2 && r2 < 0xe000 {
		return (r1-0xd800)<<10 | (r2 - 0xdc00) + 0x10000
	}
	return utf8.RuneError
}

func (d *jsonDec) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// numberToken scans a JSON number (strict grammar) and returns its bytes and whether it is
// an integer (no fraction or exponent).
func (d *jsonDec) numberToken() ([]byte, bool, error) {
	d.ws()
	start := d.i
	isInt := true
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == '0':
		d.i++
	case d.i < len(d.b) && '1' <= d.b[d.i] && d.b[d.i] <= '9':
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
		}
	default:
		return nil, false, d.errf("invalid number")
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		isInt = false
		d.i++
		n := d.i
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
		}
		if d.i == n {
			return nil, false, d.errf("invalid number: no digits after '.'")
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		isInt = false
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		n := d.i
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
		}
		if d.i == n {
			return nil, false, d.errf("invalid number: no exponent digits")
		}
	}
	return d.b[start:d.i], isInt, nil
}

func (d *jsonDec) integer(field string) (int64, error) {
	tok, isInt, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, d.errf("field %q must be an integer, got %s", field, tok)
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return 0, d.errf("field %q: integer %s out of range", field, tok)
	}
	return v, nil
}

// float reads a number. Out-of-range magnitudes become +-Inf (rejected later by Validate
// as non-finite) rather than decode errors, so the reason is reported precisely.
func (d *jsonDec) float() (float64, error) {
	tok, _, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, d.errf("invalid number %s", tok)
	}
	return v, nil
}

func (d *jsonDec) literal(lit string) error {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return d.errf("invalid literal")
	}
	d.i += len(lit)
	return nil
}

// skip skips any JSON value (for unknown fields), nesting at most maxJSONDepth deep.
func (d *jsonDec) skip(depth int) error {
	if depth > maxJSONDepth {
		return d.errf("nesting deeper than %d", maxJSONDepth)
	}
	switch c := d.peek(); c {
	case '"':
		_, err := d.str()
		return err
	case '{':
		d.i++
		if d.peek() == '}' {
			d.i++
			return nil
		}
		for {
			if _, err := d.str(); err != nil {
				return err
			}
			if err := d.expect(':'); err != nil {
				return err
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.i++
			case '}':
				d.i++
				return nil
			default:
				return d.errf("want ',' or '}' in object")
			}
		}
	case '[':
		d.i++
		if d.peek() == ']' {
			d.i++
			return nil
		}
		for {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.i++
			case ']':
				d.i++
				return nil
			default:
				return d.errf("want ',' or ']' in array")
			}
		}
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	default:
		_, _, err := d.numberToken()
		return err
	}
}

func (d *jsonDec) stringField(old string) (string, error) {
	if d.peek() == 'n' {
		return "", d.literal("null")
	}
	b, err := d.str()
	if err != nil {
		return "", err
	}
	return internString(old, b), nil
}

func (d *jsonDec) intField(name string, lo, hi int64) (int64, error) {
	if d.peek() == 'n' {
		return 0, d.literal("null")
	}
	v, err := d.integer(name)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, d.errf("field %q = %d out of range", name, v)
	}
	return v, nil
}

func (d *jsonDec) values(dst []float64) ([]float64, error) {
	dst = dst[:0]
	if d.peek() == 'n' {
		return dst, d.literal("null")
	}
	if err := d.expect('['); err != nil {
		return dst, err
	}
	if d.peek() == ']' {
		d.i++
		return dst, nil
	}
	for {
		v, err := d.float()
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return dst, nil
		default:
			return dst, d.errf("want ',' or ']' in vals")
		}
	}
}

// decodeJSON parses one JSON object of the Message schema. Field names are matched exactly
// (case-sensitive); unknown fields are skipped (forward compatible); a repeated field keeps
// its last value; missing fields are zero (Validate then rejects, e.g., a missing "v").
func decodeJSON(data []byte, m *Message) error {
	d := jsonDec{b: data}
	run, sender, kind := m.Run, m.Sender, m.Kind
	vals := m.Values[:0]
	*m = Message{}
	defer func() { m.Values = vals }()
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
	} else {
		for {
			key, err := d.str()
			if err != nil {
				return err
			}
			if err := d.expect(':'); err != nil {
				return err
			}
			switch string(key) {
			case "v":
				v, err := d.intField("v", math.MinInt32, math.MaxInt32)
				if err != nil {
					return err
				}
				m.V = int(v)
			case "run":
				if m.Run, err = d.stringField(run); err != nil {
					return err
				}
			case "ep":
				v, err := d.intField("ep", math.MinInt32, math.MaxInt32)
				if err != nil {
					return err
				}
				m.Episode = int(v)
			case "step":
				v, err := d.intField("step", math.MinInt32, math.MaxInt32)
				if err != nil {
					return err
				}
				m.Step = int(v)
			case "from":
				if m.Sender, err = d.stringField(sender); err != nil {
					return err
				}
			case "sent":
				if m.SentUnixNano, err = d.intField("sent", math.MinInt64, math.MaxInt64); err != nil {
					return err
				}
			case "kind":
				if m.Kind, err = d.stringField(kind); err != nil {
					return err
				}
			case "vals":
				if vals, err = d.values(vals); err != nil {
					return err
				}
			default:
				if err := d.skip(1); err != nil {
					return err
				}
			}
			switch d.peek() {
			case ',':
				d.i++
				continue
			case '}':
				d.i++
			default:
				return d.errf("want ',' or '}' after field %q", key)
			}
			break
		}
	}
	if d.peek() != 0 {
		return d.errf("trailing data after the message object")
	}
	return nil
}
