package trace

import (
	"strconv"
	"unicode/utf8"
)

// lineScanner decodes a trace line as json.Encoder writes it, without encoding/json: a flat
// object whose keys are exactly the record's JSON field names, each at most once, with values of
// the field's kind (JSON numbers, arrays of them, true/false, arrays of strings without escapes)
// and JSON whitespace anywhere. It converts numbers with the calls encoding/json makes
// (strconv.ParseInt(tok, 10, 64) for an int, strconv.ParseFloat(tok, 64) for a float64), so what
// it accepts decodes to the same record, bit for bit, nil and empty slices as encoding/json
// gives them (absent: nil; []: empty).
//
// Anything else - an escape, null, a key in another case, an unknown or repeated key, a token
// that is not valid JSON or does not fit the field, trailing data, nesting - makes it answer
// false, and the caller decodes the line with encoding/json: the one source of errors, and of
// the records of the lines the scanner does not positively recognise.
//
// It keeps its buffers between lines: a line allocates only the record's own data (one array
// holding all its float slices, a *float64, the Down slice and strings).
type lineScanner struct {
	b      []byte
	i      int
	floats []float64 // the float arrays of the line, end to end
	ints   []int     // one int array (Down of a ConsensusRecord)
}

// floatSpan is where one float array of the line lies in lineScanner.floats; set is false for an
// absent field (a nil slice).
type floatSpan struct {
	start, end int
	set        bool
}

func (s *lineScanner) reset(b []byte) {
	s.b, s.i, s.floats = b, 0, s.floats[:0]
}

// skipSpace skips JSON whitespace (RFC 8259: space, tab, line feed, carriage return: exactly what
// encoding/json skips).
func (s *lineScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips whitespace and reads c if it is the next byte.
func (s *lineScanner) consume(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// atEnd reports whether only whitespace is left: a line holds one value.
func (s *lineScanner) atEnd() bool {
	s.skipSpace()
	return s.i == len(s.b)
}

// nextKey reads the object's next key and its colon; n is the number of keys read so far (after
// the opening brace). done is true at the closing brace; ok is false for anything else.
func (s *lineScanner) nextKey(n int) (key []byte, done, ok bool) {
	if s.consume('}') {
		return nil, true, true
	}
	if n > 0 && !s.consume(',') {
		return nil, false, false
	}
	key, ok = s.plainString()
	if !ok || !s.consume(':') {
		return nil, false, false
	}
	return key, false, true
}

// plainString reads a string without escapes or control characters and returns its bytes.
// A string that is not valid UTF-8 is refused too (encoding/json would replace the bad bytes).
func (s *lineScanner) plainString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			str := s.b[start:s.i]
			s.i++
			return str, ascii || utf8.Valid(str)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads a JSON number token (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?);
// isInt is true when it has neither a fraction nor an exponent.
func (s *lineScanner) number() (tok []byte, isInt, ok bool) {
	s.skipSpace()
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return nil, false, false
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return nil, false, false
		}
		i, isInt = j, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return nil, false, false
		}
		i, isInt = j, false
	}
	tok, s.i = b[s.i:i], i
	return tok, isInt, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// int reads an integer token as encoding/json does for an int field (strconv.ParseInt(tok, 10,
// 64)); a fraction, an exponent or an overflow is refused.
func (s *lineScanner) int() (int, bool) {
	tok, isInt, ok := s.number()
	if !ok || !isInt {
		return 0, false
	}
	if len(tok) > 18 { // 19 digits or more may overflow: let strconv decide
		n, err := strconv.ParseInt(string(tok), 10, 64)
		return int(n), err == nil
	}
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	n := 0
	for _, c := range tok {
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// float reads a number as encoding/json does for a float64 field (strconv.ParseFloat(tok, 64),
// so the bits are the same); a token out of range is refused.
func (s *lineScanner) float() (float64, bool) {
	tok, _, ok := s.number()
	if !ok {
		return 0, false
	}
	// string(tok) does not escape ParseFloat (its errors copy the input): no allocation for
	// tokens up to 32 bytes, which covers every float the encoder writes.
	f, err := strconv.ParseFloat(string(tok), 64)
	return f, err == nil
}

// bool reads true or false.
func (s *lineScanner) bool() (v, ok bool) {
	s.skipSpace()
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// array reads '[' elem (',' elem)* ']' or '[]', calling elem for each element.
func (s *lineScanner) array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// floatArray reads an array of numbers into s.floats and returns where it lies.
func (s *lineScanner) floatArray() (floatSpan, bool) {
	sp := floatSpan{start: len(s.floats), set: true}
	ok := s.array(func() bool {
		f, ok := s.float()
		s.floats = append(s.floats, f)
		return ok
	})
	sp.end = len(s.floats)
	return sp, ok
}

// floatSlices returns the line's float arrays in one allocation; slice cuts a span out of it.
func (s *lineScanner) floatSlices() []float64 {
	if len(s.floats) == 0 {
		return nil
	}
	return append([]float64(nil), s.floats...)
}

// slice returns the span's slice of all (from floatSlices): nil if the field was absent, empty
// (not nil) for [], as encoding/json decodes them. Its capacity ends with it, so an append to
// it never writes into the next field's values.
func (sp floatSpan) slice(all []float64) []float64 {
	switch {
	case !sp.set:
		return nil
	case sp.start == sp.end:
		return []float64{}
	}
	return all[sp.start:sp.end:sp.end]
}

// intArray reads an array of integers into a new slice ([] gives an empty one).
func (s *lineScanner) intArray() ([]int, bool) {
	s.ints = s.ints[:0]
	ok := s.array(func() bool {
		n, ok := s.int()
		s.ints = append(s.ints, n)
		return ok
	})
	if !ok {
		return nil, false
	}
	return append([]int{}, s.ints...), true
}

// stringArray reads an array of plain strings into a new slice ([] gives an empty one).
func (s *lineScanner) stringArray() ([]string, bool) {
	out := []string{}
	ok := s.array(func() bool {
		str, ok := s.plainString()
		out = append(out, string(str))
		return ok
	})
	return out, ok
}

// object reads b as one flat object, calling field for each key (field reads the value), and
// reports whether it recognised the whole line.
func (s *lineScanner) object(b []byte, field func(key []byte) bool) bool {
	s.reset(b)
	if !s.consume('{') {
		return false
	}
	for n := 0; ; n++ {
		key, done, ok := s.nextKey(n)
		switch {
		case !ok:
			return false
		case done:
			return s.atEnd()
		case !field(key):
			return false
		}
	}
}

// fieldSet records which keys a line has had, to refuse a repeated one (encoding/json would
// decode it again over the first: left to it).
type fieldSet uint16

// add marks field bit and reports whether it was new and the value read (ok).
func (f *fieldSet) add(bit fieldSet, ok bool) bool {
	if !ok || *f&bit != 0 {
		return false
	}
	*f |= bit
	return true
}

// fastDecoder returns the scanner's decoder of a line into an R (the per-type field table is
// its switch on the key).
func fastDecoder[R Record]() func(*lineScanner, []byte, *R) bool {
	var dec any
	switch any((*R)(nil)).(type) {
	case *ControlRecord:
		dec = scanControl
	case *ConsensusRecord:
		dec = scanConsensus
	case *AgentRecord:
		dec = scanAgent
	}
	return dec.(func(*lineScanner, []byte, *R) bool)
}

// scanControl decodes b into r (zero on entry) if the scanner recognises it.
func scanControl(s *lineScanner, b []byte, r *ControlRecord) bool {
	var seen fieldSet
	var x, ref, yhat, u, xhat, eve floatSpan
	ok := s.object(b, func(key []byte) (ok bool) {
		switch string(key) {
		case "episode":
			r.Episode, ok = s.int()
			return seen.add(1<<0, ok)
		case "step":
			r.Step, ok = s.int()
			return seen.add(1<<1, ok)
		case "x":
			x, ok = s.floatArray()
			return seen.add(1<<2, ok)
		case "ref":
			ref, ok = s.floatArray()
			return seen.add(1<<3, ok)
		case "yhat":
			yhat, ok = s.floatArray()
			return seen.add(1<<4, ok)
		case "u":
			u, ok = s.floatArray()
			return seen.add(1<<5, ok)
		case "xhat":
			xhat, ok = s.floatArray()
			return seen.add(1<<6, ok)
		case "eve_x0":
			eve, ok = s.floatArray()
			return seen.add(1<<7, ok)
		case "eve_missing":
			r.EveMissing, ok = s.int()
			return seen.add(1<<8, ok)
		case "down":
			r.Down, ok = s.stringArray()
			return seen.add(1<<9, ok)
		}
		return false
	})
	if !ok {
		return false
	}
	all := s.floatSlices()
	r.X, r.Ref, r.Yhat, r.U = x.slice(all), ref.slice(all), yhat.slice(all), u.slice(all)
	r.Xhat, r.EveX0 = xhat.slice(all), eve.slice(all)
	return true
}

// scanConsensus decodes b into r (zero on entry) if the scanner recognises it.
func scanConsensus(s *lineScanner, b []byte, r *ConsensusRecord) bool {
	var seen fieldSet
	var x, y, eve floatSpan
	ok := s.object(b, func(key []byte) (ok bool) {
		switch string(key) {
		case "episode":
			r.Episode, ok = s.int()
			return seen.add(1<<0, ok)
		case "step":
			r.Step, ok = s.int()
			return seen.add(1<<1, ok)
		case "x":
			x, ok = s.floatArray()
			return seen.add(1<<2, ok)
		case "y":
			y, ok = s.floatArray()
			return seen.add(1<<3, ok)
		case "eve_x0":
			eve, ok = s.floatArray()
			return seen.add(1<<4, ok)
		case "eve_missing":
			r.EveMissing, ok = s.int()
			return seen.add(1<<5, ok)
		case "down":
			r.Down, ok = s.intArray()
			return seen.add(1<<6, ok)
		}
		return false
	})
	if !ok {
		return false
	}
	all := s.floatSlices()
	r.X, r.Y, r.EveX0 = x.slice(all), y.slice(all), eve.slice(all)
	return true
}

// scanAgent decodes b into r (zero on entry) if the scanner recognises it.
func scanAgent(s *lineScanner, b []byte, r *AgentRecord) bool {
	var seen fieldSet
	return s.object(b, func(key []byte) (ok bool) {
		switch string(key) {
		case "episode":
			r.Episode, ok = s.int()
			return seen.add(1<<0, ok)
		case "step":
			r.Step, ok = s.int()
			return seen.add(1<<1, ok)
		case "agent":
			r.Agent, ok = s.int()
			return seen.add(1<<2, ok)
		case "x":
			r.X, ok = s.float()
			return seen.add(1<<3, ok)
		case "y":
			var y float64
			y, ok = s.float()
			r.Y = &y
			return seen.add(1<<4, ok)
		case "down":
			r.Down, ok = s.bool()
			return seen.add(1<<5, ok)
		}
		return false
	})
}
