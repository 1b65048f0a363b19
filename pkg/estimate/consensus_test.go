package estimate

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// runConsensus simulates eq. (25) on the given graph with per-agent noise streams (reset by the
// caller) and calls observe(t, y) each step; it returns x(t) for t = 0..T.
func runConsensus(nbrs [][]int, w [][]float64, x0 []float64, streams []noise.Stream, T int, observe func(t int, y []float64)) [][]float64 {
	n := len(x0)
	x := append([]float64(nil), x0...)
	xs := [][]float64{append([]float64(nil), x...)}
	y, g := make([]float64, n), make([]float64, 1)
	for t := 0; t < T; t++ {
		for i := range y {
			streams[i].Next(g)
			y[i] = x[i] + g[0]
		}
		observe(t, y)
		for i := range x {
			for k, j := range nbrs[i] {
				x[i] += w[i][k] * (y[j] - y[i])
			}
		}
		xs = append(xs, append([]float64(nil), x...))
	}
	return xs
}

func offsets(t testing.TB, n int, sigma float64, dist privacy.Mechanism, episode uint64) ([]noise.Stream, []float64) {
	t.Helper()
	streams := make([]noise.Stream, n)
	gammas := make([]float64, n)
	for i := range streams {
		s, err := noise.NewOffset(sigma, dist)
		if err != nil {
			t.Fatal(err)
		}
		s.Reset(rng.New(testSeed, rng.Label("agent"), uint64(i), episode))
		gammas[i] = sigma * s.Eta()[0]
		streams[i] = s
	}
	return streams, gammas
}

// TestConsensusOffsetNeverAveragedAway: with the paper's constant offsets gamma_i = sigma_i eta_i the
// least-squares estimate equals x_i(0) + gamma_i at every t (to 1e-9 relative), per agent and for the
// whole network; the implied current state is x_i(t) + gamma_i.
func TestConsensusOffsetNeverAveragedAway(t *testing.T) {
	const T = 1000
	nbrs, w := paperGraph()
	n := len(nbrs)
	W := mat.NewDense(n, n, nil)
	for i := range nbrs {
		for k, j := range nbrs[i] {
			W.Set(i, j, w[i][k])
		}
	}
	for _, dist := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		t.Run(string(dist), func(t *testing.T) {
			streams, gammas := offsets(t, n, 2.5244, dist, 0)
			agents := make([]*ConsensusEstimator, n)
			for i := range agents {
				var err error
				if agents[i], err = NewConsensusEstimator(n, i, nbrs[i], w[i]); err != nil {
					t.Fatal(err)
				}
			}
			netL, err := NewNetworkEstimatorLists(nbrs, w)
			if err != nil {
				t.Fatal(err)
			}
			netW, err := NewNetworkEstimator(W)
			if err != nil {
				t.Fatal(err)
			}
			est, cur := make([]float64, n), make([]float64, n)
			var xs [][]float64
			check := func(step int) {
				for i, a := range agents {
					want := paperX0[i] + gammas[i]
					got, ok := a.Estimate()
					if !ok || math.Abs(got-want) > 1e-9*math.Abs(want)+1e-9 {
						t.Fatalf("t=%d agent %d: estimate %v, want x_i(0)+gamma_i = %v", step, i, got, want)
					}
				}
				for _, net := range []*NetworkEstimator{netL, netW} {
					if !net.Estimate(est) {
						t.Fatal("network estimate missing")
					}
					for i := range est {
						// Equal up to summation order (the dense constructor sorts neighbours).
						if got, _ := agents[i].Estimate(); math.Abs(est[i]-got) > 1e-12*math.Max(1, math.Abs(got)) {
							t.Fatalf("t=%d agent %d: network %v != per-agent %v", step, i, est[i], got)
						}
					}
				}
			}
			xs = runConsensus(nbrs, w, paperX0, streams, T, func(step int, y []float64) {
				for _, a := range agents {
					if err := a.Observe(step, y); err != nil {
						t.Fatal(err)
					}
				}
				if err := netL.Observe(step, y); err != nil {
					t.Fatal(err)
				}
				if err := netW.Observe(step, y); err != nil {
					t.Fatal(err)
				}
				check(step)
			})
			tt, ok := netL.Current(cur)
			if !ok || tt != T {
				t.Fatalf("Current: t=%d ok=%v", tt, ok)
			}
			for i := range cur {
				want := xs[T][i] + gammas[i]
				if math.Abs(cur[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("agent %d: current %v, want x_i(T)+gamma_i = %v", i, cur[i], want)
				}
				if ta, xa, _ := agents[i].Current(); ta != T || math.Abs(xa-cur[i]) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("agent %d: per-agent Current %v at %d, network %v", i, xa, ta, cur[i])
				}
			}
		})
	}
}

// TestConsensusIIDNoiseShrinks: were the noise fresh every step (i.i.d. N(0, s^2)), the same estimator
// would converge: its error is the mean of gamma_i(0..t), variance s^2/(t+1). 1000 episodes x 10 agents
// (independent errors), MSE within 5 SE (SE = sqrt(2/N) relative, chi-square).
func TestConsensusIIDNoiseShrinks(t *testing.T) {
	const T, s = 100, 1.3
	episodes := 1000
	if testing.Short() {
		episodes = 300
	}
	nbrs, w := paperGraph()
	n := len(nbrs)
	net, _ := NewNetworkEstimatorLists(nbrs, w)
	streams := make([]noise.Stream, n)
	for i := range streams {
		streams[i], _ = noise.NewIID(1, s, privacy.Gaussian)
	}
	checkpoints := []int{0, 9, 99}
	mse := make([]float64, len(checkpoints))
	est := make([]float64, n)
	N := float64(episodes * n)
	for ep := 0; ep < episodes; ep++ {
		for i, st := range streams {
			st.Reset(rng.New(testSeed, rng.Label("iid-agent"), uint64(i), uint64(ep)))
		}
		net.Reset()
		ci := 0
		runConsensus(nbrs, w, paperX0, streams, T, func(step int, y []float64) {
			_ = net.Observe(step, y)
			if ci < len(checkpoints) && step == checkpoints[ci] {
				net.Estimate(est)
				for i := range est {
					d := est[i] - paperX0[i]
					mse[ci] += d * d / N
				}
				ci++
			}
		})
	}
	for ci, step := range checkpoints {
		want := s * s / float64(step+1)
		if se := want * math.Sqrt(2/N); math.Abs(mse[ci]-want) > 5*se {
			t.Errorf("t+1=%d: MSE %g, want s^2/(t+1) = %g within 5 SE = %g", step+1, mse[ci], want, 5*se)
		}
	}
}

func TestConsensusErrors(t *testing.T) {
	cases := []struct {
		name string
		fn   func() error
		want string
	}{
		{"agent range", func() error { _, err := NewConsensusEstimator(3, 3, nil, nil); return err }, "agent 3 out of range"},
		{"lengths", func() error { _, err := NewConsensusEstimator(3, 0, []int{1}, nil); return err }, "1 neighbours but 0 weights"},
		{"self", func() error { _, err := NewConsensusEstimator(3, 1, []int{1}, []float64{0.2}); return err }, "lists itself"},
		{"range", func() error { _, err := NewConsensusEstimator(3, 1, []int{5}, []float64{0.2}); return err }, "neighbour 5 out of range"},
		{"weight", func() error { _, err := NewConsensusEstimator(3, 1, []int{0}, []float64{-0.2}); return err }, "w_1,0 = -0.2 must be finite and > 0"},
		{"duplicate", func() error { _, err := NewConsensusEstimator(3, 1, []int{0, 0}, []float64{0.2, 0.2}); return err }, "neighbour 0 twice"},
		{"laplacian", func() error {
			_, err := NewNetworkEstimator(mat.NewDense(2, 2, []float64{0.5, -0.5, -0.5, 0.5}))
			return err
		}, "pass weights, not the Laplacian"},
		{"W shape", func() error { _, err := NewNetworkEstimator(mat.NewDense(2, 3, nil)); return err }, "must be square"},
		{"lists", func() error { _, err := NewNetworkEstimatorLists([][]int{{1}, {0}}, [][]float64{{1}}); return err }, "2 neighbour lists but 1 weight lists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fn()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	a, _ := NewConsensusEstimator(3, 0, []int{1}, []float64{0.5})
	if _, ok := a.Estimate(); ok {
		t.Error("estimate before any observation")
	}
	for _, c := range []struct {
		t    int
		y    []float64
		want string
	}{
		{1, []float64{0, 0, 0}, "step 1 out of order"},
		{0, []float64{0, 0}, "y has 2 values, want 3"},
		{0, []float64{0, math.NaN(), 0}, "y[1] = NaN"},
	} {
		if err := a.Observe(c.t, c.y); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Observe(%d, %v): err = %v, want %q", c.t, c.y, err, c.want)
		}
	}
	net, _ := NewNetworkEstimatorLists([][]int{{1}, {0}}, [][]float64{{0.5}, {0.5}})
	if err := net.Observe(0, []float64{0, math.Inf(-1)}); err == nil || !strings.Contains(err.Error(), "y[1] = -Inf") {
		t.Errorf("network: err = %v", err)
	}
}

func TestConsensusAllocationFree(t *testing.T) {
	nbrs, w := paperGraph()
	a, _ := NewConsensusEstimator(10, 1, nbrs[1], w[1])
	net, _ := NewNetworkEstimatorLists(nbrs, w)
	y := append([]float64(nil), paperX0...)
	est := make([]float64, 10)
	sa, sn := 0, 0
	if x := testing.AllocsPerRun(1000, func() { _ = a.Observe(sa, y); sa++ }); x != 0 {
		t.Errorf("ConsensusEstimator.Observe allocates %v", x)
	}
	if x := testing.AllocsPerRun(1000, func() { _ = net.Observe(sn, y); sn++ }); x != 0 {
		t.Errorf("NetworkEstimator.Observe allocates %v", x)
	}
	if x := testing.AllocsPerRun(100, func() { net.Estimate(est); net.Current(est) }); x != 0 {
		t.Errorf("NetworkEstimator.Estimate/Current allocate %v", x)
	}
	if a.next != 1001 || net.next != 1001 {
		t.Fatalf("observations failed: %d, %d", a.next, net.next)
	}
}

func TestProjectScore(t *testing.T) {
	x0, x1 := []float64{1, 2}, []float64{3, 2} // d = (-2, 0)
	cases := []struct {
		name string
		xhat []float64
		x0   []float64
		want float64
	}{
		{"at x0", []float64{1, 2}, x0, 0.5},
		{"at x0prime", []float64{3, 2}, x0, -0.5},
		{"midpoint", []float64{2, 2}, x0, 0},
		{"orthogonal error ignored", []float64{1, 100}, x0, 0.5},
		{"beyond x0", []float64{0, 2}, x0, 1},
	}
	for _, c := range cases {
		if got := ProjectScore(c.xhat, c.x0, x1); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s: score %v, want %v", c.name, got, c.want)
		}
	}
	if !math.IsNaN(ProjectScore([]float64{1}, []float64{1}, []float64{1})) {
		t.Error("zero difference must give NaN")
	}
	if !math.IsNaN(ProjectScore([]float64{1}, x0, x1)) {
		t.Error("length mismatch must give NaN")
	}
}

func BenchmarkNetworkObserve(b *testing.B) {
	// ring of 100 agents, degree 4, weight 1/5
	const n = 100
	nbrs, w := make([][]int, n), make([][]float64, n)
	for i := range nbrs {
		nbrs[i] = []int{(i + 1) % n, (i + n - 1) % n, (i + 2) % n, (i + n - 2) % n}
		w[i] = []float64{0.2, 0.2, 0.2, 0.2}
	}
	net, err := NewNetworkEstimatorLists(nbrs, w)
	if err != nil {
		b.Fatal(err)
	}
	y := make([]float64, n)
	step := 0
	b.ReportAllocs()
	for b.Loop() {
		_ = net.Observe(step, y)
		step++
	}
}
