package trace

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendRecordMatchesJSON holds the append encoder to json.Encoder, the format's
// definition: on every record it encodes, the same bytes; it leaves to encoding/json exactly
// the records with a non-finite float or a string encoding/json escapes.
func TestAppendRecordMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 11))
	for range 5000 {
		c, n, a := randomControl(rng), randomConsensus(rng), randomAgent(rng)
		checkAppend(t, &c, !needsEscape(c.Down))
		checkAppend(t, &n, true)
		checkAppend(t, &a, true)
	}
	for _, f := range []float64{math.Copysign(0, -1), 1e-6, 9.99999e-7, 1e21, 9.99999999999e20, 1e-7, 1e-10, 1.5e-300,
		-2.5e-7, 123456789.125, 1e20, math.SmallestNonzeroFloat64, math.MaxFloat64, 5e-324} {
		r := ControlRecord{Episode: 1, Step: 2, X: []float64{f, -f}}
		checkAppend(t, &r, true)
		ar := AgentRecord{Agent: 3, X: f, Y: &f}
		checkAppend(t, &ar, true)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := ControlRecord{X: []float64{1}, EveX0: []float64{2, bad}}
		checkAppend(t, &r, false)
		ar := AgentRecord{X: 1, Y: &bad}
		checkAppend(t, &ar, false)
		ar = AgentRecord{X: bad}
		checkAppend(t, &ar, false)
	}
	for _, s := range []string{"\x7f", "ü", "日本", ""} {
		r := ControlRecord{Down: []string{"plant", s}}
		checkAppend(t, &r, true)
	}
	for _, s := range []string{"\x00", "\n", "a<b", "a>b", "a&b", `"`, `\`, "\xff", "ok\u2028", "\u2029"} {
		r := ControlRecord{Down: []string{"plant", s}}
		checkAppend(t, &r, false)
	}
}

// checkAppend compares appendRecord with json.Encoder on r: both encode it to the same bytes
// (encodes: the append encoder must), or the append encoder leaves it (and the prefix it was
// given) alone.
func checkAppend[R Record](t *testing.T, r *R, encodes bool) {
	t.Helper()
	var want bytes.Buffer
	jerr := json.NewEncoder(&want).Encode(r)
	got, ok := appendRecord([]byte("prefix"), r)
	if ok != encodes {
		t.Fatalf("appendRecord(%+v) ok = %v, want %v (json: %q, %v)", *r, ok, encodes, want.String(), jerr)
	}
	if !ok {
		if string(got) != "prefix" {
			t.Fatalf("appendRecord(%+v) left %q, want the prefix alone", *r, got)
		}
		return
	}
	if jerr != nil {
		t.Fatalf("appendRecord encoded %+v that encoding/json refuses: %v", *r, jerr)
	}
	if g := strings.TrimPrefix(string(got), "prefix"); g != want.String() {
		t.Fatalf("appendRecord(%+v)\n got %q\nwant %q", *r, g, want.String())
	}
}

// TestWriterFallsBackToJSON: a record the append encoder leaves goes through encoding/json -
// escaped strings as json.Encoder escapes them, a non-finite float as its error naming the
// record - between lines the append encoder wrote.
func TestWriterFallsBackToJSON(t *testing.T) {
	recs := []ControlRecord{{Episode: 1, X: []float64{1}}, {Episode: 1, Step: 1, Down: []string{"a<b"}}, {Episode: 1, Step: 2, U: []float64{-0.5}}}
	var buf bytes.Buffer
	if err := Write(&buf, recs); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if buf.String() != want.String() {
		t.Fatalf("Write\n got %q\nwant %q", buf.String(), want.String())
	}
	err := Write(&bytes.Buffer{}, []ControlRecord{{Episode: 4, Step: 7, X: []float64{math.Inf(1)}}})
	if err == nil || !strings.Contains(err.Error(), "episode 4 step 7") {
		t.Fatalf("Write of +Inf: %v, want an error naming episode 4 step 7", err)
	}
}

func BenchmarkWriteControl(b *testing.B) {
	rec := ControlRecord{Episode: 3, Step: 4, X: []float64{1.2534534534534, -0.523452345234523}, Yhat: []float64{0.3453452345234523},
		U: []float64{4.65223452345}, Xhat: []float64{-0.556234523452345, 0.128523452345234}, EveX0: []float64{-0.56352345234, 2.5e-15}}
	tw := NewWriter[ControlRecord](discard{})
	b.ReportAllocs()
	for b.Loop() {
		if err := tw.Write(&rec); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
