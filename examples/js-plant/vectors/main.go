// Command vectors prints the test vectors of examples/js-plant: what Go computes, for the
// JavaScript port to be checked against (node --test examples/js-plant). It uses the standard
// library only, so that the vectors come from Go's own math/rand/v2 and not from dpsim's code.
//
//	go run ./examples/js-plant/vectors > examples/js-plant/vectors/chacha8.json
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// outputs per seed: 1,500 uint64s cross the 124-value (992-byte) boundary of an iteration,
// where the generator rekeys from its own output, 12 times.
const outputs = 1500

// Seed is one seed's first outputs.
type Seed struct {
	Name   string   `json:"name"`
	Seed   string   `json:"seed"`   // 32 bytes, hex
	Uint64 []string `json:"uint64"` // Uint64() in order, decimal
	// Float64 and Norm are rand.New(ChaCha8(seed)).Float64() and NormFloat64() from fresh
	// generators: the float sampler's draws (bit patterns, hex, to compare exactly).
	Float64 []string `json:"float64"`
	Norm    []string `json:"norm"`
	// Laplace is the float sampler's unit Laplace from a fresh generator: ln(2U) for U < 1/2,
	// -ln(2(1-U)) otherwise, U = Float64() redrawn while 0 (pkg/noise SampleLaplace with b = 1).
	Laplace []string `json:"laplace"`
}

// Key is one noise stream key (docs/protocol.md section 12.1).
type Key struct {
	Seed string   `json:"seed"` // uint64, decimal
	Path []string `json:"path"` // uint64s, decimal
	Key  string   `json:"key"`  // hex
}

// Label is an FNV-1a label.
type Label struct {
	Name  string `json:"name"`
	Label string `json:"label"` // uint64, decimal
}

func main() {
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		os.Exit(1)
	}
}

// write writes the vectors as one line of JSON.
func write(w io.Writer) error {
	seeds := []struct {
		name string
		seed [32]byte
	}{{name: "zero"}, {name: "counting"}, {name: "spec"}, {name: "sha256(dpsim)"}, {name: "ones"}}
	for i := range seeds[1].seed {
		seeds[1].seed[i] = byte(i)
	}
	copy(seeds[2].seed[:], "chacha8rand example seed 3456789") // 32 bytes
	seeds[3].seed = sha256.Sum256([]byte("dpsim"))
	for i := range seeds[4].seed {
		seeds[4].seed[i] = 0xff
	}
	var out struct {
		Seeds  []Seed  `json:"seeds"`
		Keys   []Key   `json:"keys"`
		Labels []Label `json:"labels"`
	}
	for _, s := range seeds {
		c := rand.NewChaCha8(s.seed)
		v := Seed{Name: s.name, Seed: hex.EncodeToString(s.seed[:])}
		for range outputs {
			v.Uint64 = append(v.Uint64, fmt.Sprint(c.Uint64()))
		}
		r := rand.New(rand.NewChaCha8(s.seed))
		for range 200 {
			v.Float64 = append(v.Float64, fmt.Sprintf("%016x", math.Float64bits(r.Float64())))
		}
		r = rand.New(rand.NewChaCha8(s.seed))
		for range 1000 { // the ziggurat's rare paths (its tail, its wedges) come about 1% of the time
			v.Norm = append(v.Norm, fmt.Sprintf("%016x", math.Float64bits(r.NormFloat64())))
		}
		r = rand.New(rand.NewChaCha8(s.seed))
		for range 1000 {
			v.Laplace = append(v.Laplace, fmt.Sprintf("%016x", math.Float64bits(laplace(r))))
		}
		out.Seeds = append(out.Seeds, v)
	}
	for _, name := range []string{"plant", "agent", "plant-redraw", "agent-redraw", "", "é"} {
		out.Labels = append(out.Labels, Label{name, fmt.Sprint(label(name))})
	}
	for _, k := range []struct {
		seed uint64
		path []uint64
	}{
		{53, []uint64{label("plant"), 0, 0}},
		{53, []uint64{label("plant"), 0, 499}},
		{23, []uint64{label("agent"), 7, 3}},
		{math.MaxUint64, []uint64{label("plant-redraw"), 0, 1 << 40}},
		{1<<53 + 1, nil},
		{0, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	} {
		b := []byte("dpsim/noise/v1")
		b = binary.LittleEndian.AppendUint64(b, k.seed)
		var path []string
		for _, p := range k.path {
			b = binary.LittleEndian.AppendUint64(b, p)
			path = append(path, fmt.Sprint(p))
		}
		sum := sha256.Sum256(b)
		out.Keys = append(out.Keys, Key{fmt.Sprint(k.seed), path, hex.EncodeToString(sum[:])})
	}
	return json.NewEncoder(w).Encode(&out)
}

// laplace is pkg/noise SampleLaplace(r, 1), restated with the standard library only.
func laplace(r *rand.Rand) float64 {
	u := r.Float64()
	for u == 0 {
		u = r.Float64()
	}
	if u < 0.5 {
		return 1 * math.Log(2*u)
	}
	return -1 * math.Log(2*(1-u))
}

func label(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
