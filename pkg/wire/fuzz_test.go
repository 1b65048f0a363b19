package wire

import (
	"math"
	"testing"
)

// FuzzDecode: Decode never panics on arbitrary bytes, and whatever it accepts re-encodes
// and decodes to the same message (in binary for version-1 messages; in JSON when all
// values are finite).
func FuzzDecode(f *testing.F) {
	for _, m := range []*Message{sampleMessage(), {V: 1, Run: "r", Sender: "agent.3", Values: []float64{math.NaN(), math.Inf(-1)}}} {
		if b, err := EncodeJSON(nil, m); err == nil {
			f.Add(b)
		}
		b, _ := EncodeBinary(nil, m)
		f.Add(b)
	}
	for _, s := range []string{
		``, `{}`, `{"v":1}`, `{"vals":[1e999]}`, `{"x":[[[{}]]]}`, `{"run":"\ud834\udd1e\u0041"}`,
		`{"step":-0}`, `{"vals":[-0.0e-0]}`, "\xd5\x01", "\xd5\x01\x00\x00\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := Decode(data, &m); err != nil {
			_ = ReasonOf(err)
			return
		}
		_ = Validate(&m, Expect{Run: "r", Dim: 2, Steps: 10})
		// Binary round trip: only version-1 messages (the binary decoder refuses other
		// layouts) whose strings fit the one-byte lengths.
		if m.V == Version && len(m.Run) < 256 && len(m.Sender) < 256 && len(m.Kind) < 256 {
			b, err := EncodeBinary(nil, &m)
			if err != nil {
				t.Fatalf("decoded message does not re-encode in binary: %v (%+v)", err, m)
			}
			var m2 Message
			if err := Decode(b, &m2); err != nil || !equalMessages(&m, &m2) {
				t.Fatalf("binary re-encoding: %v, %+v != %+v", err, m2, m)
			}
		}
		if j, err := EncodeJSON(nil, &m); err == nil {
			var m3 Message
			if err := Decode(j, &m3); err != nil || !equalMessages(&m, &m3) {
				// JSON strings normalise invalid UTF-8; compare after one normalisation.
				var m4 Message
				j2, _ := EncodeJSON(nil, &m3)
				if err2 := Decode(j2, &m4); err != nil || err2 != nil || !equalMessages(&m3, &m4) {
					t.Fatalf("JSON re-encoding %s: %v, %+v != %+v", j, err, m3, m)
				}
			}
		}
	})
}
