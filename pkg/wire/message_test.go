package wire

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func sampleMessage() *Message {
	return &Message{V: Version, Run: "r1", Episode: 2, Step: 3, Sender: "plant.0",
		SentUnixNano: 1700000000123456789, Kind: "yhat", Values: []float64{0.5, -1.25, 1e-300, 6.02214076e23}}
}

func TestEncodeJSONGolden(t *testing.T) {
	m := sampleMessage()
	got, err := EncodeJSON(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"run":"r1","ep":2,"step":3,"from":"plant.0","sent":1700000000123456789,"kind":"yhat","vals":[0.5,-1.25,1e-300,6.02214076e+23]}`
	if string(got) != want {
		t.Fatalf("EncodeJSON\n got %s\nwant %s", got, want)
	}
	// Kind is omitted when empty; an empty vector is [].
	m2 := &Message{V: 1, Run: "r", Sender: "agent.1"}
	got, _ = EncodeJSON(nil, m2)
	if want := `{"v":1,"run":"r","ep":0,"step":0,"from":"agent.1","sent":0,"vals":[]}`; string(got) != want {
		t.Fatalf("EncodeJSON empty\n got %s\nwant %s", got, want)
	}
}

// The hand-written codec agrees with encoding/json on the struct tags, both ways.
func TestJSONAgreesWithEncodingJSON(t *testing.T) {
	msgs := []*Message{
		sampleMessage(),
		{V: 1, Run: "quote\"back\\slash", Sender: "ctl\n\t\x01", Kind: "ünï€𝄞", Values: []float64{0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{V: 7, Run: "", Episode: -4, Step: math.MaxInt32, SentUnixNano: math.MinInt64, Values: []float64{}},
	}
	for i, m := range msgs {
		ours, err := EncodeJSON(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		var viaStd Message
		if err := json.Unmarshal(ours, &viaStd); err != nil {
			t.Fatalf("msg %d: encoding/json cannot read our output %s: %v", i, ours, err)
		}
		if !equalMessages(&viaStd, m) {
			t.Errorf("msg %d: encoding/json read %+v, want %+v", i, viaStd, *m)
		}
		std, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var viaOurs Message
		if err := Decode(std, &viaOurs); err != nil {
			t.Fatalf("msg %d: Decode(%s): %v", i, std, err)
		}
		if !equalMessages(&viaOurs, m) {
			t.Errorf("msg %d: Decode(encoding/json output) = %+v, want %+v", i, viaOurs, *m)
		}
	}
}

// equalMessages compares bit-exactly (NaN == NaN, -0 != +0) and treats nil and empty
// Values alike.
func equalMessages(a, b *Message) bool {
	if a.V != b.V || a.Run != b.Run || a.Episode != b.Episode || a.Step != b.Step || a.Sender != b.Sender ||
		a.SentUnixNano != b.SentUnixNano || a.Kind != b.Kind || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if math.Float64bits(a.Values[i]) != math.Float64bits(b.Values[i]) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	special := &Message{V: 1, Run: "r", Sender: "plant.0", Values: []float64{math.NaN(), math.Inf(1), math.Inf(-1)}}
	for _, enc := range []Encoding{JSON, Binary} {
		for i, m := range []*Message{sampleMessage(), {V: 1, Run: "x", Sender: "cloud.0"}, {V: 1, Run: "x", Values: make([]float64, 1000)}} {
			b, err := Encode(nil, m, enc)
			if err != nil {
				t.Fatalf("%v msg %d: %v", enc, i, err)
			}
			if got := DetectEncoding(b); got != enc {
				t.Errorf("%v msg %d: DetectEncoding = %v", enc, i, got)
			}
			var out Message
			if err := Decode(b, &out); err != nil {
				t.Fatalf("%v msg %d: Decode: %v", enc, i, err)
			}
			if !equalMessages(&out, m) {
				t.Errorf("%v msg %d: round trip %+v, want %+v", enc, i, out, *m)
			}
		}
	}
	// Binary carries non-finite values bit-exactly (receivers reject them); JSON refuses.
	b, err := EncodeBinary(nil, special)
	if err != nil {
		t.Fatal(err)
	}
	var out Message
	if err := Decode(b, &out); err != nil || !equalMessages(&out, special) {
		t.Fatalf("binary non-finite round trip: %v %+v", err, out)
	}
	if _, err := EncodeJSON(nil, special); !errors.Is(err, ErrEncode) {
		t.Fatalf("EncodeJSON(NaN) error = %v, want ErrEncode", err)
	}
	if n := len(b); n != binaryHeader+len("r")+len("plant.0")+8*3 {
		t.Errorf("binary size %d, want header + strings + 8 per value", n)
	}
}

func TestEncodeBinaryLimits(t *testing.T) {
	for name, m := range map[string]*Message{
		"long run":  {V: 1, Run: strings.Repeat("r", 256)},
		"big step":  {V: 1, Step: math.MaxInt32 + 1},
		"version":   {V: 256},
		"neg ep":    {V: 1, Episode: math.MinInt32 - 1},
		"long kind": {V: 1, Kind: strings.Repeat("k", 300)},
	} {
		if _, err := EncodeBinary(nil, m); !errors.Is(err, ErrEncode) {
			t.Errorf("%s: EncodeBinary error = %v, want ErrEncode", name, err)
		}
	}
	if _, err := Encode(nil, sampleMessage(), Encoding(9)); err == nil {
		t.Error("Encode with an unknown encoding succeeded")
	}
}

func TestDecodeJSONVariants(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"whitespace and order", " \n{ \"vals\" : [ 1 , 2.5e1 ] , \"from\":\"plant.0\", \"v\":1,\"run\":\"r\",\"ep\":1,\"step\":2,\"sent\":5 }\t",
			Message{V: 1, Run: "r", Episode: 1, Step: 2, Sender: "plant.0", SentUnixNano: 5, Values: []float64{1, 25}}},
		{"unknown fields skipped", `{"v":1,"x":{"a":[1,{"b":null}],"c":"}"},"y":[true,false,null,-0.5e-3],"run":"r"}`,
			Message{V: 1, Run: "r"}},
		{"escapes", `{"run":"a\"b\\c\/d\u00e9\ud834\udd1e","from":"\n"}`,
			Message{Run: "a\"b\\c/dé𝄞", Sender: "\n"}},
		{"lone surrogate", `{"run":"\ud800x"}`, Message{Run: "\uFFFDx"}},
		{"nulls", `{"v":null,"run":null,"vals":null,"kind":null}`, Message{}},
		{"last duplicate wins", `{"step":1,"step":2}`, Message{Step: 2}},
		{"empty", `{}`, Message{}},
		{"overflowing value becomes Inf", `{"vals":[1e999,-1e999]}`, Message{Values: []float64{math.Inf(1), math.Inf(-1)}}},
	}
	for _, tc := range tests {
		var m Message
		if err := Decode([]byte(tc.in), &m); err != nil {
			t.Errorf("%s: Decode: %v", tc.name, err)
			continue
		}
		if !equalMessages(&m, &tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, m, tc.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good, _ := EncodeBinary(nil, sampleMessage())
	badVersion := append([]byte(nil), good...)
	badVersion[1] = 2
	tests := []struct {
		name   string
		in     []byte
		reason Reason
	}{
		{"empty", nil, ReasonDecode},
		{"garbage", []byte("\x00\x01garbage"), ReasonDecode},
		{"array", []byte(`[1,2]`), ReasonDecode},
		{"truncated JSON", []byte(`{"v":1,"run":"r"`), ReasonDecode},
		{"trailing data", []byte(`{"v":1} {}`), ReasonDecode},
		{"float step", []byte(`{"step":1.5}`), ReasonDecode},
		{"string step", []byte(`{"step":"1"}`), ReasonDecode},
		{"huge step", []byte(`{"step":99999999999}`), ReasonDecode},
		{"leading zero", []byte(`{"step":01}`), ReasonDecode},
		{"bare minus", []byte(`{"vals":[-]}`), ReasonDecode},
		{"NaN literal", []byte(`{"vals":[NaN]}`), ReasonDecode},
		{"string value", []byte(`{"vals":["1"]}`), ReasonDecode},
		{"control char", []byte("{\"run\":\"a\x01\"}"), ReasonDecode},
		{"bad escape", []byte(`{"run":"\x"}`), ReasonDecode},
		{"deep nesting", []byte(`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`), ReasonDecode},
		{"binary short", good[:10], ReasonDecode},
		{"binary truncated", good[:len(good)-1], ReasonDecode},
		{"binary extra", append(append([]byte(nil), good...), 0), ReasonDecode},
		{"binary version", badVersion, ReasonVersion},
	}
	for _, tc := range tests {
		var m Message
		err := Decode(tc.in, &m)
		if err == nil {
			t.Errorf("%s: Decode succeeded: %+v", tc.name, m)
			continue
		}
		if r := ReasonOf(err); r != tc.reason {
			t.Errorf("%s: reason %v, want %v (err %v)", tc.name, r, tc.reason, err)
		}
	}
}

func TestDecodeReusesMessageWithoutAllocating(t *testing.T) {
	for _, enc := range []Encoding{JSON, Binary} {
		b, _ := Encode(nil, sampleMessage(), enc)
		var m Message
		if err := Decode(b, &m); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := Decode(b, &m); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: Decode into a reused Message allocates %v times", enc, allocs)
		}
		buf := make([]byte, 0, 256)
		allocs = testing.AllocsPerRun(100, func() {
			buf, _ = Encode(buf[:0], &m, enc)
		})
		if allocs != 0 {
			t.Errorf("%v: Encode into a reused buffer allocates %v times", enc, allocs)
		}
		if err := Validate(&m, Expect{Run: "r1", Dim: 4, Steps: 10, Episode: 2}); err != nil {
			t.Fatal(err)
		}
		allocs = testing.AllocsPerRun(100, func() { _ = Validate(&m, Expect{Run: "r1", Dim: 4, Steps: 10, Episode: 2}) })
		if allocs != 0 {
			t.Errorf("Validate allocates %v times", allocs)
		}
	}
}

func TestValidate(t *testing.T) {
	exp := Expect{Run: "r1", Dim: 2, Steps: 10, Episode: AnyEpisode}
	ok := func() *Message {
		return &Message{V: 1, Run: "r1", Episode: 0, Step: 9, Sender: "plant.0", Kind: "yhat", Values: []float64{1, 2}}
	}
	tests := []struct {
		name   string
		mutate func(*Message)
		exp    Expect
		reason Reason // numReasons: valid
	}{
		{"valid", func(*Message) {}, exp, numReasons},
		{"version 0", func(m *Message) { m.V = 0 }, exp, ReasonVersion},
		{"version 2", func(m *Message) { m.V = 2 }, exp, ReasonVersion},
		{"wrong run", func(m *Message) { m.Run = "r2" }, exp, ReasonRun},
		{"negative episode", func(m *Message) { m.Episode = -1 }, exp, ReasonEpisode},
		{"other episode", func(m *Message) { m.Episode = 3 }, Expect{Run: "r1", Episode: 2}, ReasonEpisode},
		{"step = steps", func(m *Message) { m.Step = 10 }, exp, ReasonStep},
		{"negative step", func(m *Message) { m.Step = -1 }, exp, ReasonStep},
		{"unbounded steps", func(m *Message) { m.Step = 1 << 30 }, Expect{Run: "r1", Episode: AnyEpisode}, numReasons},
		{"short", func(m *Message) { m.Values = m.Values[:1] }, exp, ReasonDim},
		{"long", func(m *Message) { m.Values = append(m.Values, 3) }, exp, ReasonDim},
		{"any dim", func(m *Message) { m.Values = nil }, Expect{Run: "r1", Episode: AnyEpisode}, numReasons},
		{"NaN", func(m *Message) { m.Values[1] = math.NaN() }, exp, ReasonNonFinite},
		{"+Inf", func(m *Message) { m.Values[0] = math.Inf(1) }, exp, ReasonNonFinite},
		{"-Inf", func(m *Message) { m.Values[0] = math.Inf(-1) }, exp, ReasonNonFinite},
		{"sender", func(*Message) {}, Expect{Run: "r1", Episode: AnyEpisode, Sender: "plant.1"}, ReasonSender},
		{"kind", func(*Message) {}, Expect{Run: "r1", Episode: AnyEpisode, Kind: "u"}, ReasonKind},
	}
	for _, tc := range tests {
		m := ok()
		tc.mutate(m)
		err := Validate(m, tc.exp)
		if tc.reason == numReasons {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason != tc.reason {
			t.Errorf("%s: Validate = %v, want reason %v", tc.name, err, tc.reason)
		}
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	for range 10 {
		c.Receive()
	}
	c.Drop(ReasonNonFinite)
	c.Drop(ReasonNonFinite)
	c.DropErr(errors.New("garbage"))
	c.DropErr(&InvalidError{Reason: ReasonLate})
	c.Drop(Reason(200)) // ignored
	s := c.Snapshot()
	want := CountersSnapshot{Received: 10, Accepted: 6, Dropped: 4,
		ByReason: map[string]uint64{"nonfinite": 2, "decode": 1, "late": 1}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Snapshot = %+v, want %+v", s, want)
	}
	if c.Dropped(ReasonNonFinite) != 2 || c.Received() != 10 {
		t.Fatal("Dropped/Received disagree with the snapshot")
	}
	if got := len(Reasons()); got != int(numReasons) {
		t.Fatalf("Reasons() has %d entries", got)
	}
	for _, r := range Reasons() {
		if strings.HasPrefix(r.String(), "Reason(") {
			t.Errorf("reason %d has no name", r)
		}
	}
}

func TestParseEncoding(t *testing.T) {
	for in, want := range map[string]Encoding{"json": JSON, "": JSON, "binary": Binary, "bin": Binary} {
		if got, err := ParseEncoding(in); err != nil || got != want {
			t.Errorf("ParseEncoding(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseEncoding("xml"); err == nil {
		t.Error("ParseEncoding(xml) succeeded")
	}
}
