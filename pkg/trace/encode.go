package trace

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The append encoder writes a record's line without encoding/json: every role process writes
// one line per step and the launcher one per merged step, and json.Encoder's reflection cost
// as much as the rest of a step's bookkeeping (a role process of the vehicle sweep spent about
// a fifth of its CPU in it). It writes exactly the bytes json.Encoder writes - field order and
// names of the struct tags, omitempty, the float form, the final newline - and gives up (ok
// false) on anything whose bytes it does not reproduce (a non-finite float: encoding/json's
// error; a string needing escapes), so that Writer falls back to json.Encoder: the format's
// definition stays encoding/json's (TestAppendRecordMatchesJSON holds the two together).

// appendRecord appends r's line (with its newline) to dst; ok is false when the line must be
// written by encoding/json instead (dst is then returned unchanged in length).
func appendRecord[R Record](dst []byte, r *R) ([]byte, bool) {
	n := len(dst)
	var ok bool
	switch v := any(r).(type) {
	case *ControlRecord:
		dst, ok = appendControl(dst, v)
	case *ConsensusRecord:
		dst, ok = appendConsensus(dst, v)
	case *AgentRecord:
		dst, ok = appendAgent(dst, v)
	}
	if !ok {
		return dst[:n], false
	}
	return append(dst, '}', '\n'), true
}

// appendControl appends a ControlRecord's object up to its closing brace.
func appendControl(dst []byte, r *ControlRecord) ([]byte, bool) {
	dst = appendHead(dst, r.Episode, r.Step)
	ok := true
	dst, ok = appendFloats(dst, `,"x":`, r.X, ok)
	dst, ok = appendFloats(dst, `,"ref":`, r.Ref, ok)
	dst, ok = appendFloats(dst, `,"yhat":`, r.Yhat, ok)
	dst, ok = appendFloats(dst, `,"u":`, r.U, ok)
	dst, ok = appendFloats(dst, `,"xhat":`, r.Xhat, ok)
	dst, ok = appendFloats(dst, `,"eve_x0":`, r.EveX0, ok)
	if r.EveMissing != 0 {
		dst = strconv.AppendInt(append(dst, `,"eve_missing":`...), int64(r.EveMissing), 10)
	}
	if len(r.Down) > 0 {
		dst = append(dst, `,"down":[`...)
		for i, s := range r.Down {
			if i > 0 {
				dst = append(dst, ',')
			}
			if !plainString(s) {
				return dst, false
			}
			dst = append(append(append(dst, '"'), s...), '"')
		}
		dst = append(dst, ']')
	}
	return dst, ok
}

// appendConsensus appends a ConsensusRecord's object up to its closing brace.
func appendConsensus(dst []byte, r *ConsensusRecord) ([]byte, bool) {
	dst = appendHead(dst, r.Episode, r.Step)
	ok := true
	dst, ok = appendFloats(dst, `,"x":`, r.X, ok)
	dst, ok = appendFloats(dst, `,"y":`, r.Y, ok)
	dst, ok = appendFloats(dst, `,"eve_x0":`, r.EveX0, ok)
	if r.EveMissing != 0 {
		dst = strconv.AppendInt(append(dst, `,"eve_missing":`...), int64(r.EveMissing), 10)
	}
	if len(r.Down) > 0 {
		dst = append(dst, `,"down":[`...)
		for i, a := range r.Down {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(a), 10)
		}
		dst = append(dst, ']')
	}
	return dst, ok
}

// appendAgent appends an AgentRecord's object up to its closing brace.
func appendAgent(dst []byte, r *AgentRecord) ([]byte, bool) {
	dst = appendHead(dst, r.Episode, r.Step)
	dst = strconv.AppendInt(append(dst, `,"agent":`...), int64(r.Agent), 10)
	ok := finiteFloat(r.X)
	dst = appendFloat(append(dst, `,"x":`...), r.X)
	if r.Y != nil {
		ok = ok && finiteFloat(*r.Y)
		dst = appendFloat(append(dst, `,"y":`...), *r.Y)
	}
	if r.Down {
		dst = append(dst, `,"down":true`...)
	}
	return dst, ok
}

// appendHead appends the opening of every record: {"episode":e,"step":s.
func appendHead(dst []byte, episode, step int) []byte {
	dst = strconv.AppendInt(append(dst, `{"episode":`...), int64(episode), 10)
	return strconv.AppendInt(append(dst, `,"step":`...), int64(step), 10)
}

// appendFloats appends an omitempty float array under key (which holds its leading comma,
// name and colon); ok turns false at a non-finite value (and stays false).
func appendFloats(dst []byte, key string, v []float64, ok bool) ([]byte, bool) {
	if len(v) == 0 {
		return dst, ok
	}
	dst = append(append(dst, key...), '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		ok = ok && finiteFloat(f)
		dst = appendFloat(dst, f)
	}
	return append(dst, ']'), ok
}

// appendFloat appends f as encoding/json writes a float64: the shortest decimal that round
// trips, in 'f' form for 1e-6 <= |f| < 1e21 (and 0) and in 'e' form otherwise, with a
// one-digit negative exponent written without its leading zero (1e-07 -> 1e-7).
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// finiteFloat says whether f can be encoded (encoding/json refuses NaN and the infinities).
func finiteFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// plainString says whether json.Encoder writes s as its bytes between quotes: no control
// character, quote, backslash or HTML character (<, >, &: it escapes them), and valid UTF-8
// without U+2028 and U+2029 (it escapes those and replaces invalid bytes).
func plainString(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	return ascii || (utf8.ValidString(s) && !strings.ContainsAny(s, "\u2028\u2029"))
}
