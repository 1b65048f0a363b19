// Command sealed prints the cross-check vectors of examples/js-plant's opening of the
// challenger's sealed x(0) (docs/protocol.md section 7): x0 messages made by dpsim's own
// launcher code (pkg/contract X0Message, sealed by pkg/bus CurveKey.Seal with nkeys curve keys made for
// these vectors only), some altered on purpose, each with the receiver's keys and what dpsim's
// plant makes of it - the x(0) it opens (contract.OpenX0 and the plant's check of nx finite
// values) or the reason it drops the message. The boxes' nonces and keys are random, so the file
// is written once; TestSealedVectorsOpen checks that dpsim still opens it as it says.
//
//	go run ./examples/js-plant/vectors/sealed > examples/js-plant/vectors/sealed.json
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Case is one x0 message and one receiver: the message as the json and the binary encodings
// carry it, the receiver (its endpoint and id), its plant's nx, its curve seed and the sender's
// public key as the environment hands them ("" when absent), and what dpsim's plant makes of it:
// X0 (float64 bits, hex) or the drop reason.
type Case struct {
	Name   string   `json:"name"`
	JSON   string   `json:"json"`
	Binary []byte   `json:"binary"`
	Self   string   `json:"self"`
	ID     int      `json:"id"`
	NX     int      `json:"nx"`
	Seed   string   `json:"seed"`
	Sender string   `json:"sender"`
	X0     []string `json:"x0,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Vectors is the file.
type Vectors struct {
	Cases []Case `json:"cases"`
}

func hexf(x float64) string { return fmt.Sprintf("%016x", math.Float64bits(x)) }

// Open is what dpsim's plant (internal/roleproc openX0) makes of case c: its x(0), or the reason
// it drops the message.
func Open(c Case) ([]float64, string, error) {
	var m wire.Message
	if err := wire.Decode([]byte(c.JSON), &m); err != nil {
		return nil, "", fmt.Errorf("case %s: %w", c.Name, err)
	}
	var b wire.Message
	if err := wire.Decode(c.Binary, &b); err != nil {
		return nil, "", fmt.Errorf("case %s: binary: %w", c.Name, err)
	}
	if fmt.Sprint(b) != fmt.Sprint(m) {
		return nil, "", fmt.Errorf("case %s: the two encodings differ", c.Name)
	}
	self, err := endpoint.Parse(c.Self)
	if err != nil {
		return nil, "", err
	}
	if c.Seed == "" || c.Sender == "" {
		return nil, wire.ReasonSealed.String(), nil // no curve key to open it with
	}
	x0, err := contract.OpenX0(&m, self, bus.CurveKey{Seed: c.Seed}, c.Sender)
	if err != nil {
		return nil, wire.ReasonOf(err).String(), nil
	}
	if len(x0) != c.NX || len(x0) == 0 {
		return nil, wire.ReasonDim.String(), nil
	}
	for _, v := range x0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, wire.ReasonDim.String(), nil
		}
	}
	return x0, "", nil
}

func key() bus.CurveKey {
	k, err := bus.NewCurveKey()
	if err != nil {
		panic(err)
	}
	return k
}

func x0Message(run string, ep int, x0 []float64, seed string, to ...contract.X0Recipient) *wire.Message {
	m, err := contract.X0Message(run, ep, x0, bus.CurveKey{Seed: seed}, to)
	if err != nil {
		panic(err)
	}
	return m
}

func write(w io.Writer) error {
	launcher, plant, plant3, other := key(), key(), key(), key()
	p0 := endpoint.Endpoint{Role: endpoint.Plant, ID: 0}
	p3 := endpoint.Endpoint{Role: endpoint.Plant, ID: 3}
	one := func(run string, ep int, x0 []float64) *wire.Message {
		return x0Message(run, ep, x0, launcher.Seed, contract.X0Recipient{Endpoint: p0, First: 0, Last: len(x0) - 1, Public: plant.Public})
	}
	vehicle := []float64{0.7318029946511, -0.4182736455917}
	two := x0Message("audit-7f3a", 123456, []float64{math.Copysign(0, -1), 5e-324, math.MaxFloat64, -1e-300}, launcher.Seed,
		contract.X0Recipient{Endpoint: p3, First: 0, Last: 1, Public: plant3.Public},
		contract.X0Recipient{Endpoint: p0, First: 2, Last: 3, Public: plant.Public})
	edit := func(m *wire.Message, f func(*wire.Message)) *wire.Message {
		c := *m
		c.Values = append([]float64(nil), m.Values...)
		f(&c)
		return &c
	}
	type mc struct {
		name     string
		m        *wire.Message
		self     endpoint.Endpoint
		nx       int
		seed, pk string
	}
	var cases []mc
	add := func(name string, m *wire.Message, self endpoint.Endpoint, nx int, seed, pk string) {
		cases = append(cases, mc{name, m, self, nx, seed, pk})
	}
	ok := one("r1", 7, vehicle)
	add("the plant's x(0)", ok, p0, 2, plant.Seed, launcher.Public)
	add("two boxes: the second", two, p0, 2, plant.Seed, launcher.Public)
	add("two boxes: the first (-0 and a subnormal)", two, p3, 2, plant3.Seed, launcher.Public)
	add("episode 0", one("r1", 0, []float64{1, 0}), p0, 2, plant.Seed, launcher.Public)
	add("three values for nx = 2", one("r1", 7, []float64{1, 2, 3}), p0, 2, plant.Seed, launcher.Public)
	add("sealed to another key", x0Message("r1", 7, vehicle, launcher.Seed, contract.X0Recipient{Endpoint: p0, Last: 1, Public: other.Public}), p0, 2, plant.Seed, launcher.Public)
	add("sealed by another sender", x0Message("r1", 7, vehicle, other.Seed, contract.X0Recipient{Endpoint: p0, Last: 1, Public: plant.Public}), p0, 2, plant.Seed, launcher.Public)
	add("altered", edit(ok, func(m *wire.Message) { m.Values[5] = float64(uint64(m.Values[5]) ^ 1) }), p0, 2, plant.Seed, launcher.Public)
	add("altered version", edit(ok, func(m *wire.Message) { m.Values[2] = float64(uint64(m.Values[2]) ^ 1<<40) }), p0, 2, plant.Seed, launcher.Public)
	add("moved to another episode", edit(ok, func(m *wire.Message) { m.Episode = 8 }), p0, 2, plant.Seed, launcher.Public)
	add("moved to another run", edit(ok, func(m *wire.Message) { m.Run = "r2" }), p0, 2, plant.Seed, launcher.Public)
	add("sealed for plant.3, filed under id 0", edit(x0Message("r1", 7, vehicle, launcher.Seed, contract.X0Recipient{Endpoint: p3, Last: 1, Public: plant.Public}),
		func(m *wire.Message) { m.Values[0] = 0 }), p0, 2, plant.Seed, launcher.Public)
	add("no box for the id", ok, endpoint.Endpoint{Role: endpoint.Plant, ID: 5}, 2, plant.Seed, launcher.Public)
	add("truncated box", edit(ok, func(m *wire.Message) { m.Values = m.Values[:len(m.Values)-1] }), p0, 2, plant.Seed, launcher.Public)
	add("truncated record", edit(ok, func(m *wire.Message) { m.Values = m.Values[:1] }), p0, 2, plant.Seed, launcher.Public)
	add("length 0", edit(ok, func(m *wire.Message) { m.Values[1] = 0 }), p0, 2, plant.Seed, launcher.Public)
	add("length 1.5", edit(ok, func(m *wire.Message) { m.Values[1] = 1.5 }), p0, 2, plant.Seed, launcher.Public)
	add("a word of 2^48", edit(ok, func(m *wire.Message) { m.Values[3] = 1 << 48 }), p0, 2, plant.Seed, launcher.Public)
	add("a word of 0.5", edit(ok, func(m *wire.Message) { m.Values[3] = 0.5 }), p0, 2, plant.Seed, launcher.Public)
	add("a negative word", edit(ok, func(m *wire.Message) { m.Values[3] = -1 }), p0, 2, plant.Seed, launcher.Public)
	add("no curve key", ok, p0, 2, "", "")
	add("no sender key", ok, p0, 2, plant.Seed, "")
	add("a seed that is no curve seed", ok, p0, 2, "SXnotaseed", launcher.Public)
	add("a sender that is no curve key", ok, p0, 2, plant.Seed, "Xnotakey")
	add("the sender's seed for the receiver's", ok, p0, 2, launcher.Seed, launcher.Public)

	var v Vectors
	for _, c := range cases {
		js, err := wire.EncodeJSON(nil, c.m)
		if err != nil {
			return err
		}
		bin, err := wire.EncodeBinary(nil, c.m)
		if err != nil {
			return err
		}
		k := Case{Name: c.name, JSON: string(js), Binary: bin, Self: c.self.String(), ID: c.self.ID, NX: c.nx, Seed: c.seed, Sender: c.pk}
		x0, reason, err := Open(k)
		if err != nil {
			return err
		}
		for _, x := range x0 {
			k.X0 = append(k.X0, hexf(x))
		}
		k.Reason = reason
		v.Cases = append(v.Cases, k)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}

func main() {
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sealed:", err)
		os.Exit(1)
	}
}
