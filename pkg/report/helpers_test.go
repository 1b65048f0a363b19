package report

import (
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// mkSeries builds a Series of n steps from mean(t) and se(t); steps with skip(t) have no data.
func mkSeries(n, runs int, mean, se func(t int) float64, skip func(t int) bool) metrics.Series {
	s := metrics.Series{N: make([]int, n), Mean: make([]float64, n), SE: make([]float64, n), Lo: make([]float64, n), Hi: make([]float64, n)}
	for t := 0; t < n; t++ {
		if skip != nil && skip(t) {
			continue
		}
		m, e := mean(t), se(t)
		s.N[t], s.Mean[t], s.SE[t], s.Lo[t], s.Hi[t] = runs, m, e, m-metrics.Z95*e, m+metrics.Z95*e
	}
	return s
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

const controlYAML = `
name: synth-vehicle
description: A synthetic vehicle run for the report tests.
kind: cloud-control
steps: 20
episodes: 100
seed: 7
plant:
  A: [[1, 0.1], [0, 1]]
  B: [[0.005], [0.1]]
  C: [[1, 0]]
  x0: [0, 0]
controller:
  K: [3.4240, 4.3095]
  L: [0.8266, 0.6973]
  reference: tanh
privacy:
  epsilon: 1
  delta: 0.01
  model: {A: 1, C: 1}
`

const consensusYAML = `
name: synth-consensus
description: A synthetic consensus sweep for the report tests.
kind: consensus
steps: 15
episodes: 100
seed: 9
graph: {name: ring, n: 4, weight: 0.3}
x0: [4, -2, 6, 0]
privacy:
  mechanism: gaussian
  delta: 0.01
sweep:
  param: epsilon
  values: [1, 0.1]
`

func mustParse(t testing.TB, yaml string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(yaml), "testdata/"+"inline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPlan(t testing.TB, s *scenario.Scenario) *plan.Plan {
	t.Helper()
	p, err := plan.New(s, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// controlInput is a synthetic cloud-control run: a bounded position error whose final MSE is
// the offset variance, a vanishing velocity error and a flat eavesdropper error.
func controlInput(t testing.TB) Input {
	s := mustParse(t, controlYAML)
	p := mustPlan(t, s)
	T, runs := s.Steps, 100
	V := p.NoiseVariance()
	c := &metrics.ControlMetrics{
		TrackingError: []metrics.Series{
			mkSeries(T+1, runs, func(t int) float64 { return -0.8 * math.Exp(-float64(t)/3) }, constant(0.15), nil),
			mkSeries(T+1, runs, func(t int) float64 { return 0.6 * math.Exp(-float64(t)/2) }, func(t int) float64 { return 0.05 * math.Exp(-float64(t)/2) }, nil),
		},
		TrackingSqError: []metrics.Series{
			mkSeries(T+1, runs, func(t int) float64 { return V * (1 - math.Exp(-float64(t)/3)) }, constant(0.3), nil),
			mkSeries(T+1, runs, func(t int) float64 { return math.Exp(-float64(t)) }, func(t int) float64 { return 0.1 * math.Exp(-float64(t)) }, nil),
		},
		FinalAbsErrorMax: []float64{5.5, 2e-4},
		EveSqError:       mkSeries(T, runs, constant(V), constant(0.3), func(t int) bool { return t == 0 }),
	}
	c.FinalSqError = []metrics.Stat{c.TrackingSqError[0].At(T), c.TrackingSqError[1].At(T)}
	res := &metrics.Results{Kind: "cloud-control", Scenario: s.Name, Seed: 7, Steps: T, Runs: runs, Confidence: 0.95,
		Mechanism: "gaussian", Noise: "structured", Adjacency: "manifold", Calibration: "tight", Epsilon: 1, Delta: 0.01, Mu: 1,
		NoiseScale: p.Scale, NoiseVariance: V, Control: c}
	return Input{
		Scenario: s, Points: []Point{{Scenario: s, Plan: p, Results: res}}, Seed: 7,
		Engine: "nats", Mode: "lockstep", NATSURL: "nats://127.0.0.1:4222",
		Processes: []Process{{Role: "plant", ID: 0, PID: 1201, PeakRSSBytes: 21 << 20}, {Role: "cloud", ID: 0, PID: 1202, PeakRSSBytes: 19 << 20},
			{Role: "eavesdropper", ID: 0, PID: 1203}},
		Timing: struct {
			Overruns int     `json:"overruns"`
			JitterMs float64 `json:"jitter_ms_p99"`
			Late     map[string]int
		}{Overruns: 2, JitterMs: 0.4213, Late: map[string]int{"plant": 1, "cloud": 0}},
		Invalid: map[string]any{"cloud": map[string]int{"bad_version": 1, "non_finite": 0}, "plant": 3},
		Elapsed: 1234567890,
		Extra:   map[string]float64{"steps_per_second": 8123.4567},
	}
}

// consensusInput is a synthetic consensus sweep over eps; finalFactor scales the final mean
// square deviation relative to the Proposition 1 bound (above 1: the bound is exceeded).
func consensusInput(t testing.TB, finalFactor float64) Input {
	s := mustParse(t, consensusYAML)
	in := Input{Scenario: s, Seed: 9, Engine: "fast", Mode: "lockstep"}
	for _, pt := range s.Expand() {
		p := mustPlan(t, pt)
		T, runs, N := pt.Steps, 100, 4
		V := p.NoiseVariance()
		bound := float64(N) * V
		var dev []metrics.Series
		for i, x := range pt.X0 {
			d0 := x - 2 // x* = 2
			dev = append(dev, mkSeries(T+1, runs, func(t int) float64 { return d0 * math.Pow(p.Alpha, float64(t)) * float64(1+i%2) / 2 },
				constant(math.Sqrt(V)/10), nil))
		}
		final := finalFactor * bound
		sq := mkSeries(T+1, runs, func(t int) float64 {
			return final + 56*math.Pow(p.Alpha, 2*float64(t))
		}, constant(bound/50), nil)
		c := &metrics.ConsensusMetrics{
			Agents: N, Alpha: p.Alpha, XStar: metrics.Stat{N: runs, Mean: 2, Lo: 2, Hi: 2}, Deviation: dev, SqDeviation: sq,
			FinalSqDeviation: sq.At(T), Prop1Bound: bound, OffsetLimit: float64(N-1) * V, SumRelDevMax: 3e-16,
			EveSqError: mkSeries(T, runs, constant(float64(N)*V), constant(V/10), nil),
		}
		c.FinalBelowBound = c.FinalSqDeviation.Hi < bound
		res := &metrics.Results{Kind: "consensus", Scenario: pt.Name, Seed: 9, Steps: T, Runs: runs, Confidence: 0.95,
			Mechanism: "gaussian", Noise: "structured", Adjacency: "manifold", Calibration: "tight",
			Epsilon: pt.Privacy.Epsilon, Delta: 0.01, Mu: 1, NoiseScale: p.Scale, NoiseVariance: V, Consensus: c}
		in.Points = append(in.Points, Point{Scenario: pt, Plan: p, Results: res})
	}
	return in
}
