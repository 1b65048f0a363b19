// Command exact prints the cross-check vectors of examples/js-plant's secure sampler: dpsim's
// own exact samplers and exact rounding (pkg/noise ExactSampler over the streams of pkg/rng),
// run on many streams, with every sample's sign, integer part and digits and every rounded
// value, for the JavaScript port to reproduce (node --test examples/js-plant).
//
//	go run ./examples/js-plant/vectors/exact > examples/js-plant/vectors/exact.json
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/rng"
)

// Sample is one exact sample as drawn: sign, integer part, the fraction's digits (hex words).
type Sample struct {
	Neg    bool     `json:"neg"`
	K      uint32   `json:"k"`
	Digits []string `json:"digits"`
}

// Round is one exact rounding: round_g(sum ab[2i] ab[2i+1] + sum coef[j] sample[j]), g = 2^G,
// over the case's samples as they are then; After is every sample's digits afterwards (the
// rounding draws more), Value the result's float64 bits.
type Round struct {
	G     int        `json:"G"`
	AB    []string   `json:"ab"`   // float64 bits, hex
	Coef  []string   `json:"coef"` // float64 bits, hex
	Value string     `json:"value"`
	After [][]string `json:"after"`
}

// Case is one stream: its seed and path, the mechanism, the samples drawn in order, the
// roundings done on them in order, and the stream's next Uint64 afterwards (every digit drawn
// is accounted for).
type Case struct {
	Seed      string   `json:"seed"`
	Path      []string `json:"path"`
	Mechanism string   `json:"mechanism"`
	Samples   []Sample `json:"samples"`
	Rounds    []Round  `json:"rounds"`
	Next      string   `json:"next"`
}

func hexf(x float64) string { return fmt.Sprintf("%016x", math.Float64bits(x)) }

func digits(e *noise.Exact) []string {
	d := make([]string, e.Digits())
	for j := range d {
		d[j] = fmt.Sprintf("%08x", e.Digit(j))
	}
	return d
}

func main() {
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "exact:", err)
		os.Exit(1)
	}
}

// write writes the vectors as one line of JSON.
func write(w io.Writer) error {
	var cases []Case
	// what the coefficients and fixed parts look like: a plant's S and x(0), and extremes
	pick := rand.New(rand.NewPCG(1, 2)) // the test's own choices, not a noise stream
	for n := 0; n < 400; n++ {
		seed := uint64(n * 7919)
		if n%5 == 4 {
			seed = math.MaxUint64 - uint64(n)
		}
		mech := "gaussian"
		if n%2 == 1 {
			mech = "laplace"
		}
		path := []uint64{rng.Label("plant"), 0, uint64(n)}
		if n%3 == 2 {
			path = []uint64{rng.Label("agent"), uint64(n % 17), uint64(n / 3)}
		}
		var c rand.ChaCha8
		rng.ReseedNoise(&c, seed, path...)
		s := noise.NewExactSampler(&c)
		nsamp := 1 + n%4
		samples := make([]noise.Exact, nsamp)
		cs := Case{Seed: fmt.Sprint(seed), Mechanism: mech}
		for _, p := range path {
			cs.Path = append(cs.Path, fmt.Sprint(p))
		}
		for j := range samples {
			if mech == "laplace" {
				s.Laplace(&samples[j])
			} else {
				s.Normal(&samples[j])
			}
			cs.Samples = append(cs.Samples, Sample{samples[j].Neg, samples[j].K, digits(&samples[j])})
		}
		for r := 0; r < 3; r++ {
			coef := make([]float64, nsamp)
			smin := math.Inf(1)
			for j := range coef {
				switch pick.IntN(6) {
				case 0:
					coef[j] = 0
				case 1:
					coef[j] = 2.5244 // the paper's sigma
				default:
					coef[j] = math.Ldexp(pick.Float64()+0.5, pick.IntN(40)-20) * float64(1-2*pick.IntN(2))
				}
				if a := math.Abs(coef[j]); a > 0 {
					smin = min(smin, a)
				}
			}
			if math.IsInf(smin, 1) {
				smin = 1
			}
			var ab []float64
			for range pick.IntN(3) {
				ab = append(ab, math.Ldexp(pick.Float64()-0.5, pick.IntN(20)-5), float64(pick.IntN(5))-2)
			}
			_, e := math.Frexp(smin)
			G := e - 1 - 20 // the documented granularity
			switch r {      // and finer grids, which need more digits
			case 1:
				G -= 20 + pick.IntN(20)
			case 2:
				G -= 40 + pick.IntN(60)
			}
			bound := 1.0 // |v| at most, roughly: the result must stay below 2^53 grid steps
			for i := 0; i < len(ab); i += 2 {
				bound += math.Abs(ab[i] * ab[i+1])
			}
			for j := range coef {
				bound += math.Abs(coef[j]) * float64(samples[j].K+1)
			}
			_, eb := math.Frexp(bound)
			G = max(G, eb-50)
			w, err := s.RoundExact(math.Ldexp(1, G), ab, coef, samples)
			if err != nil {
				return err
			}
			rd := Round{G: G, Value: hexf(w)}
			for _, x := range ab {
				rd.AB = append(rd.AB, hexf(x))
			}
			for _, x := range coef {
				rd.Coef = append(rd.Coef, hexf(x))
			}
			for j := range samples {
				rd.After = append(rd.After, digits(&samples[j]))
			}
			cs.Rounds = append(cs.Rounds, rd)
		}
		cs.Next = fmt.Sprint(c.Uint64())
		cases = append(cases, cs)
	}
	return json.NewEncoder(w).Encode(map[string]any{"cases": cases})
}
