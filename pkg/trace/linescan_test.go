package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A line and whether the scanner must recognise it (fast) or leave it to encoding/json.
type lineCase struct {
	line string
	fast bool
}

// Hand-written lines of each record type: what the encoder writes with JSON whitespace added,
// and every kind of line the scanner must leave to encoding/json (it decodes them, or names the
// error).
var (
	controlCases = []lineCase{
		{`{}`, true},
		{`{"episode":0,"step":0}`, true},
		{"{ \"episode\" : 3 ,\"step\":\t4, \"x\" : [ 1 , -0 ,2.5e-3 ] , \"down\" : [ \"plant\" , \"cloud\" ] }", true},
		{"{\r\"u\":[1]\r,\t\"ref\"\t:\t[ ]}", true},
		{`{"x":[],"ref":[],"yhat":[],"u":[],"xhat":[],"eve_x0":[],"down":[]}`, true},
		{`{"x":[1,2],"ref":[],"yhat":[3],"eve_x0":[4,5,6]}`, true},
		{`{"episode":-0,"step":-1,"eve_missing":12}`, true},
		{`{"episode":9223372036854775807,"step":-9223372036854775808}`, true},
		{`{"episode":123456789012345678,"step":-12345678901234567}`, true},
		{`{"x":[1E5,1e+5,1e-5,0.0,-0.0,1.5E-07,0e0]}`, true},
		{`{"x":[4.9e-324,2e-324,1e-400,1.7976931348623157e308,2.2250738585072014e-308]}`, true},
		{`{"x":[0.1000000000000000055511151231257827021181583404541015625]}`, true},
		{`{"down":["é","日本","plant"]}`, true},
		{`{"down":[""]}`, true},

		{`{"down":["a\"b"]}`, false},
		{`{"down":["\u0070lant"]}`, false},
		{`{"down":["a\/b"]}`, false},
		{`{"\u0065pisode":1}`, false},
		{`{"episode":null}`, false},
		{`{"x":null}`, false},
		{`{"x":[1,null]}`, false},
		{`{"down":null}`, false},
		{`{"down":[null]}`, false},
		{`{"Episode":1}`, false},
		{`{"EPISODE":1,"step":2}`, false},
		{`{"episode":1,"Step":2}`, false},
		{`{"eve_X0":[1]}`, false},
		{`{"foo":1}`, false},
		{`{"":1}`, false},
		{`{"episode":1,"episode":2}`, false},
		{`{"x":[1],"x":[2,3]}`, false},
		{`{"x":[1,2,3],"x":[4]}`, false},
		{`{"down":["a"],"down":[]}`, false},
		{`{"episode":01}`, false},
		{`{"episode":-}`, false},
		{`{"episode":1.0}`, false},
		{`{"step":1e2}`, false},
		{`{"eve_missing":1E0}`, false},
		{`{"episode":-0.0}`, false},
		{`{"episode":1} x`, false},
		{`{"episode":1}}`, false},
		{`{"episode":1}]`, false},
		{`{"episode":1}{"episode":2}`, false},
		{`{"episode":1},`, false},
		{`{"episode":1} 2`, false},
		{`{"x":[[1]]}`, false},
		{`{"episode":{"a":1}}`, false},
		{`{"down":[["a"]]}`, false},
		{`{"episode":1,"st`, false},
		{`{"episode":1,`, false},
		{`{`, false},
		{`{"x":[1,2`, false},
		{`{"x":[1,2]`, false},
		{`{"episode":1`, false},
		{`{"episode"`, false},
		{`{"episode":`, false},
		{`{"down":["pla`, false},
		{`[]`, false},
		{`[{"episode":1}]`, false},
		{`null`, false},
		{`1`, false},
		{`"s"`, false},
		{`true`, false},
		{`{"episode":"1"}`, false},
		{`{"x":1}`, false},
		{`{"x":"1"}`, false},
		{`{"x":{}}`, false},
		{`{"down":"plant"}`, false},
		{`{"down":[1]}`, false},
		{`{"x":[true]}`, false},
		{`{"episode":true}`, false},
		{`{"episode":9223372036854775808}`, false},
		{`{"step":-9223372036854775809}`, false},
		{`{"episode":99999999999999999999999}`, false},
		{`{"x":[NaN]}`, false},
		{`{"x":[Infinity]}`, false},
		{`{"x":[-Infinity]}`, false},
		{`{"x":[1e309]}`, false},
		{`{"x":[-1e309]}`, false},
		{`{"episode":1,}`, false},
		{`{"x":[1,]}`, false},
		{`{"x":[,1]}`, false},
		{`{,}`, false},
		{`{"episode" 1}`, false},
		{`{"episode":1 "step":2}`, false},
		{"{\"down\":[\"a\tb\"]}", false},
		{"{\"down\":[\"\xff\"]}", false},
		{"{\"down\":[\"a\xc3\"]}", false},
		{"{\"episode\":1,\u00a0\"step\":2}", false},
		{"{\"episode\":1,\v\"step\":2}", false},
		{`{"x":[1 2]}`, false},
		{`{'episode':1}`, false},
		{`{episode:1}`, false},
		{`{"x":[01]}`, false},
		{`{"x":[1.]}`, false},
		{`{"x":[.5]}`, false},
		{`{"x":[+1]}`, false},
		{`{"x":[1e]}`, false},
		{`{"x":[1e+]}`, false},
		{`{"x":[0x10]}`, false},
		{`{"x":[-]}`, false},
		{`{"x":[--1]}`, false},
		{`{"x":[1_000]}`, false},
		{`{"x":[inf]}`, false},
		{`{"episode":tru}`, false},
		{"\ufeff{\"episode\":1}", false},
	}
	consensusCases = []lineCase{
		{`{"episode":2,"step":5,"x":[1,2,3],"y":[0.5,-0.5],"eve_x0":[7],"eve_missing":1,"down":[0,2]}`, true},
		{`{"down":[]}`, true},
		{` { "down" : [ -0 , 9223372036854775807 ] , "y" : [ ] } `, true},
		{`{"down":[1.5]}`, false},
		{`{"down":[1e0]}`, false},
		{`{"down":["a"]}`, false},
		{`{"down":[9223372036854775808]}`, false},
		{`{"down":[1,]}`, false},
		{`{"y":[1],"Y":[2]}`, false},
		{`{"agent":1}`, false},
		{`{"ref":[1]}`, false},
		{`{"down":true}`, false},
	}
	agentCases = []lineCase{
		{`{"episode":0,"step":3,"agent":4,"x":2,"y":1.5}`, true},
		{`{"episode":0,"step":100,"agent":4,"x":-0}`, true},
		{`{"y":-0,"down":true}`, true},
		{` { "down" : false , "x" : 1e-320 } `, true},
		{`{"y":null}`, false},
		{`{"x":null}`, false},
		{`{"down":"true"}`, false},
		{`{"down":1}`, false},
		{`{"down":TRUE}`, false},
		{`{"down":truex}`, false},
		{`{"down":fals}`, false},
		{`{"down":null}`, false},
		{`{"x":[1]}`, false},
		{`{"y":[1]}`, false},
		{`{"x":1e400}`, false},
		{`{"y":-1e400}`, false},
		{`{"agent":1.5}`, false},
		{`{"y":1,"y":2}`, false},
		{`{"Agent":1}`, false},
		{`{"eve_x0":[1]}`, false},
	}
)

func TestScannerRecognisesExactlyTheEncoderLines(t *testing.T) {
	checkCases[ControlRecord](t, controlCases)
	checkCases[ConsensusRecord](t, consensusCases)
	checkCases[AgentRecord](t, agentCases)
}

// checkCases holds the scanner to its table and, for each line between good lines, the fast
// reader to the encoding/json one (records to the bit, errors to the letter, line numbers).
func checkCases[R Record](t *testing.T, cases []lineCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(fmt.Sprintf("%T/%q", *new(R), c.line), func(t *testing.T) {
			got, ok := scanLine[R]([]byte(c.line))
			if ok != c.fast {
				t.Fatalf("scanner recognised the line: %v, want %v", ok, c.fast)
			}
			if ok {
				want, err := decodeJSON[R]([]byte(c.line))
				if err != nil {
					t.Fatalf("scanner took a line encoding/json refuses: %v", err)
				}
				if d := differ(want, got); d != "" {
					t.Fatalf("scanner record differs from encoding/json's: %s", d)
				}
			}
			good := `{"episode":1,"step":2}`
			if d := readersDiffer[R](good + "\n\n" + c.line + "\n" + good + "\n"); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// scanLine runs the scanner alone on one line.
func scanLine[R Record](b []byte) (R, bool) {
	var s lineScanner
	var r R
	ok := fastDecoder[R]()(&s, b, &r)
	return r, ok
}

// readAll reads text with the scanner (fast) or with encoding/json alone.
func readAll[R Record](text string, fast bool) ([]R, error) {
	tr := NewReader[R](strings.NewReader(text))
	if !fast {
		tr.scan = nil
	}
	return tr.readAll()
}

// readersDiffer compares the fast and the encoding/json reader on text ("" when they agree).
func readersDiffer[R Record](text string) string {
	got, gotErr := readAll[R](text, true)
	want, wantErr := readAll[R](text, false)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		return fmt.Sprintf("error %v, encoding/json: %v", gotErr, wantErr)
	}
	if d := differ(want, got); d != "" {
		return "records differ from encoding/json's: " + d
	}
	return ""
}

// differ describes the first difference between want and got: floats by their bits, nil and
// empty slices apart ("" when equal).
func differ(want, got any) string {
	return differValue("", reflect.ValueOf(want), reflect.ValueOf(got))
}

func differValue(path string, w, g reflect.Value) string {
	switch w.Kind() {
	case reflect.Float64:
		if math.Float64bits(w.Float()) != math.Float64bits(g.Float()) {
			return fmt.Sprintf("%s: %v (%#x), want %v (%#x)", path, g.Float(), math.Float64bits(g.Float()), w.Float(), math.Float64bits(w.Float()))
		}
	case reflect.Slice, reflect.Pointer:
		if w.IsNil() != g.IsNil() {
			return fmt.Sprintf("%s: nil %v, want nil %v", path, g.IsNil(), w.IsNil())
		}
		if w.Kind() == reflect.Pointer {
			if !w.IsNil() {
				return differValue(path+"*", w.Elem(), g.Elem())
			}
			return ""
		}
		if w.Len() != g.Len() {
			return fmt.Sprintf("%s: length %d, want %d", path, g.Len(), w.Len())
		}
		for i := range w.Len() {
			if d := differValue(fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := range w.NumField() {
			if d := differValue(path+"."+w.Type().Field(i).Name, w.Field(i), g.Field(i)); d != "" {
				return d
			}
		}
	default:
		if !w.Equal(g) {
			return fmt.Sprintf("%s: %v, want %v", path, g, w)
		}
	}
	return ""
}

// Values the encoder writes in every form: -0, subnormals, the extremes, integers as floats,
// and any finite bits.
func randomFloat(rng *rand.Rand) float64 {
	special := []float64{math.Copysign(0, -1), 0, 1e308, -1e308, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, 0x1p-1022, 1e21, 1e20, 1e-7, 1e-6, 3, -42, 1 << 53, 0.1}
	switch rng.IntN(6) {
	case 0:
		return special[rng.IntN(len(special))]
	case 1:
		return math.Float64frombits(rng.Uint64N(1<<52) | rng.Uint64N(2)<<63) // subnormal
	case 2:
		return float64(rng.IntN(2_000_001) - 1_000_000)
	case 3:
		for {
			if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	}
	return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
}

func randomFloats(rng *rand.Rand) []float64 {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []float64{}
	}
	out := make([]float64, 1+rng.IntN(5))
	for i := range out {
		out[i] = randomFloat(rng)
	}
	return out
}

func randomInt(rng *rand.Rand) int {
	switch rng.IntN(4) {
	case 0:
		return []int{0, -1, math.MaxInt64, math.MinInt64, 1e17, -1e18, 999_999_999_999_999_999}[rng.IntN(7)]
	case 1:
		return int(rng.Int64()) - int(rng.Int64())
	}
	return rng.IntN(1000)
}

// Role names: plain, non-ASCII, and some the encoder escapes (the scanner leaves those lines).
var downNames = []string{"plant", "cloud", "eavesdropper", "agent.3", "é-ü", "", "a<b&c", "tab\there", `q"uote`, `back\slash`, "line\u2028sep"}

func needsEscape(names []string) bool {
	for _, n := range names {
		b, _ := json.Marshal(n)
		if bytes.IndexByte(b, '\\') >= 0 {
			return true
		}
	}
	return false
}

func randomControl(rng *rand.Rand) ControlRecord {
	r := ControlRecord{Episode: randomInt(rng), Step: randomInt(rng), X: randomFloats(rng), Ref: randomFloats(rng),
		Yhat: randomFloats(rng), U: randomFloats(rng), Xhat: randomFloats(rng), EveX0: randomFloats(rng)}
	if rng.IntN(3) == 0 {
		r.EveMissing = randomInt(rng)
	}
	if rng.IntN(3) == 0 {
		for range rng.IntN(3) {
			r.Down = append(r.Down, downNames[rng.IntN(len(downNames))])
		}
	}
	return r
}

func randomConsensus(rng *rand.Rand) ConsensusRecord {
	r := ConsensusRecord{Episode: randomInt(rng), Step: randomInt(rng), X: randomFloats(rng), Y: randomFloats(rng),
		EveX0: randomFloats(rng)}
	if rng.IntN(3) == 0 {
		r.EveMissing = randomInt(rng)
	}
	if rng.IntN(3) == 0 {
		r.Down = []int{}
		for range rng.IntN(4) {
			r.Down = append(r.Down, randomInt(rng))
		}
	}
	return r
}

func randomAgent(rng *rand.Rand) AgentRecord {
	r := AgentRecord{Episode: randomInt(rng), Step: randomInt(rng), Agent: randomInt(rng), X: randomFloat(rng), Down: rng.IntN(4) == 0}
	if rng.IntN(3) > 0 {
		y := randomFloat(rng)
		r.Y = &y
	}
	return r
}

// encodeLines writes recs as the Writer does and returns the lines.
func encodeLines[R Record](t testing.TB, recs []R) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, recs); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// spaced puts random JSON whitespace around every structural character of an encoder line
// (whose strings hold none of them).
func spaced(rng *rand.Rand, line string) string {
	ws := []string{"", " ", "\t", "\r", "\n", "  \t "}
	var b strings.Builder
	for _, c := range []byte(strings.TrimSpace(line)) {
		structural := strings.IndexByte("{}[],:", c) >= 0
		if structural {
			b.WriteString(ws[rng.IntN(len(ws))])
		}
		b.WriteByte(c)
		if structural {
			b.WriteString(ws[rng.IntN(len(ws))])
		}
	}
	return b.String()
}

func TestScannerMatchesEncoderOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	const n = 2000
	control := make([]ControlRecord, n)
	consensus := make([]ConsensusRecord, n)
	agents := make([]AgentRecord, n)
	for i := range n {
		control[i], consensus[i], agents[i] = randomControl(rng), randomConsensus(rng), randomAgent(rng)
	}
	checkEncoded(t, rng, control, func(r *ControlRecord) bool { return !needsEscape(r.Down) })
	checkEncoded(t, rng, consensus, func(*ConsensusRecord) bool { return true })
	checkEncoded(t, rng, agents, func(*AgentRecord) bool { return true })
}

// checkEncoded holds the scanner to encoding/json on the encoder's lines of recs, and on them
// with whitespace added: it must recognise every one whose strings need no escape (plain).
func checkEncoded[R Record](t *testing.T, rng *rand.Rand, recs []R, plain func(*R) bool) {
	t.Helper()
	lines := encodeLines(t, recs)
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	for i, line := range lines {
		for _, l := range []string{strings.TrimSpace(line), spaced(rng, line)} {
			got, ok := scanLine[R]([]byte(l))
			if ok != plain(&recs[i]) {
				t.Fatalf("scanner recognised %q: %v, want %v", l, ok, !ok)
			}
			want, err := decodeJSON[R]([]byte(l))
			if err != nil {
				t.Fatalf("encoding/json refuses the encoder's line %q: %v", l, err)
			}
			if d := differ(want, got); ok && d != "" {
				t.Fatalf("line %q: %s", l, d)
			}
		}
	}
	if d := readersDiffer[R](strings.Join(lines, "")); d != "" {
		t.Fatal(d)
	}
}

func TestScannerAllocatesOnlyTheRecord(t *testing.T) {
	rec := ControlRecord{Episode: 3, Step: 4, X: []float64{1.25, -0.5}, Ref: []float64{1, 0}, Yhat: []float64{0.3},
		U: []float64{4.652}, Xhat: []float64{-0.556, 0.1285}, EveX0: []float64{-0.5635, 2.5e-15}}
	recs := make([]ControlRecord, 1000)
	for i := range recs {
		recs[i] = rec
	}
	text := []byte(strings.Join(encodeLines(t, recs), ""))
	var tr *Reader[ControlRecord]
	allocs := testing.AllocsPerRun(5, func() {
		tr = NewReader[ControlRecord](bytes.NewReader(text))
		for {
			if _, err := tr.Read(); err != nil {
				break
			}
		}
	})
	// One array for the record's six float slices per line, and the reader itself.
	if perLine := allocs / float64(len(recs)); perLine > 1.01 {
		t.Fatalf("%.3f allocations per line, want 1 (the record's float array)", perLine)
	}
}

// seedLines are the fuzz test's seed corpus: the table's lines and encoder lines.
func seedLines(t testing.TB) []string {
	var seeds []string
	for _, cases := range [][]lineCase{controlCases, consensusCases, agentCases} {
		for _, c := range cases {
			seeds = append(seeds, c.line)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		seeds = append(seeds, encodeLines(t, []ControlRecord{randomControl(rng)})[0],
			encodeLines(t, []ConsensusRecord{randomConsensus(rng)})[0], encodeLines(t, []AgentRecord{randomAgent(rng)})[0],
			spaced(rng, encodeLines(t, []ControlRecord{randomControl(rng)})[0]))
	}
	return seeds
}

func FuzzReaderMatchesEncodingJSON(f *testing.F) {
	for _, s := range seedLines(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, d := range []string{readersDiffer[ControlRecord](text), readersDiffer[ConsensusRecord](text),
			readersDiffer[AgentRecord](text)} {
			if d != "" {
				t.Fatalf("%q: %s", text, d)
			}
		}
	})
}

// BenchmarkReadControlRecords reads what the launcher reads of a vehicle episode - the plant's
// (x, yhat), the cloud's (u, xhat) and the eavesdropper's (eve_x0) partial records of each step,
// full-precision floats - with the scanner and with encoding/json alone, alternating, and
// reports the ns per line of each.
func BenchmarkReadControlRecords(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	floats := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = rng.NormFloat64()
		}
		return out
	}
	var recs []ControlRecord
	for i := range 1000 {
		ep, t := i/100, i%100
		recs = append(recs, ControlRecord{Episode: ep, Step: t, X: floats(2), Yhat: floats(1)},
			ControlRecord{Episode: ep, Step: t, U: floats(1), Xhat: floats(2)},
			ControlRecord{Episode: ep, Step: t, EveX0: floats(2), EveMissing: rng.IntN(2)})
	}
	text := []byte(strings.Join(encodeLines(b, recs), ""))
	read := func(fast bool) time.Duration {
		start := time.Now()
		tr := NewReader[ControlRecord](bytes.NewReader(text))
		if !fast {
			tr.scan = nil
		}
		for {
			if _, err := tr.Read(); err != nil {
				break
			}
		}
		return time.Since(start)
	}
	var fast, slow time.Duration
	for b.Loop() {
		fast += read(true)
		slow += read(false)
	}
	lines := float64(b.N * len(recs))
	b.ReportMetric(float64(fast.Nanoseconds())/lines, "fast-ns/line")
	b.ReportMetric(float64(slow.Nanoseconds())/lines, "json-ns/line")
	b.ReportMetric(float64(slow)/float64(fast), "speedup")
}
