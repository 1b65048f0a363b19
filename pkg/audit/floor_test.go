package audit

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/estimate"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// floorLabelPlant is the plant's label of the contract stream path, hashed once.
var floorLabelPlant = rng.Label(sim.LabelPlant)

// floorEpisode is a cloud-control episode as a plain loop: the arithmetic the fast engine's cores
// run (sim.Plant, sim.Controller and sim.Estimator, unwrapped to pkg/dynamics, pkg/noise and
// pkg/estimate) with the same random streams, and no messages, cores, driver or network. It is
// the floor the engine's cost per episode is held to. Plans without faults only: nothing is ever
// missing, so the plant applies, and the eavesdropper assumes, the u(t) the cloud computed.
type floorEpisode struct {
	seed   uint64
	steps  int
	plant  *dynamics.Plant
	noise  noise.Stream
	chacha rand.ChaCha8 // the episode's noise generator, reseeded per episode
	rnd    *rand.Rand   // over chacha (the float sampler)
	// the secure sampler: the release of x(0)'s private coordinates emb, and the plant run
	// from x(0) less them (np)
	secure  *noise.SecureStream
	np      *dynamics.Plant
	emb     []int
	xp, rel []float64
	ctl     *dynamics.ObserverController
	xhat0   []float64
	eve     *estimate.ControlEstimator
	yhat    []float64
	gamma   []float64
	u       []float64
}

// newFloor returns the floor of plan p (cloud control, no faults) with run seed seed.
func newFloor(tb testing.TB, p *plan.Plan, seed uint64) *floorEpisode {
	tb.Helper()
	require.Equal(tb, scenario.CloudControl, p.Scenario.Kind, "the floor plays cloud control")
	f := &p.Scenario.Faults
	require.False(tb, f.Active() || len(f.Crashes) > 0 || len(f.ServerRestarts) > 0 || len(f.Proxies) > 0,
		"the floor has no network: it plays plans without faults only")
	var ns noise.Stream
	var sec *noise.SecureStream
	var err error
	if p.Secure() {
		sec, err = p.NewSecureNoise()
	} else {
		ns, err = p.NewNoise()
	}
	require.NoError(tb, err)
	var xhat0 []float64
	if c := p.Scenario.Controller; c != nil {
		xhat0 = slices.Clone(c.Xhat0)
	}
	sys := p.System
	ctl, err := dynamics.NewObserverController(sys, p.K, p.L, p.Reference, xhat0)
	require.NoError(tb, err)
	eve, err := estimate.NewControlEstimator(sys.A, sys.B, sys.C, p.Steps)
	require.NoError(tb, err)
	fl := &floorEpisode{
		seed: seed, steps: p.Steps, plant: dynamics.NewPlant(sys, nil), noise: ns, ctl: ctl, xhat0: xhat0, eve: eve,
		yhat: make([]float64, sys.Ny()), gamma: make([]float64, sys.Ny()), u: make([]float64, sys.Nu()),
	}
	fl.rnd = rand.New(&fl.chacha)
	if sec != nil {
		fl.secure, fl.np, fl.emb = sec, dynamics.NewPlant(sys, nil), p.Embedding
		fl.xp, fl.rel = make([]float64, len(p.Embedding)), make([]float64, sys.Ny())
	}
	return fl
}

// play runs episode ep from the plant's initial state x0 and writes the eavesdropper's final
// least-squares estimate of x0 into est, as engine.Player.Play does (same signature, so the
// benchmark times both through one loop). Step by step, in the order of the cores:
//
//	plant:        yhat(t) = C x(t) + gamma(t), gamma from the episode's stream (eq. (23) and the noise at the plant's edge)
//	cloud:        u(t) = -K (xhat(t) - x_r(t)), xhat(t+1) = A xhat + B u + L (yhat - C xhat) (eq. (24))
//	eavesdropper: the normal equations of x0 gain the rows of yhat(t), and xu(t+1) the input u(t) (eqs. (19)-(20))
//	plant:        x(t+1) = A x(t) + B u(t) (eq. (23))
//
// The noise is reseeded to the stream rng.NewNoise(seed, rng.Label("plant"), 0, ep) starts
// (rng.ReseedNoise: the same stream without allocating), and the structured noise draws its eta
// once, in Reset.
func (f *floorEpisode) play(ep int, x0, est []float64) (bool, error) {
	f.plant.Reset(x0)
	rng.ReseedNoise(&f.chacha, f.seed, floorLabelPlant, 0, uint64(ep))
	if f.secure != nil {
		return f.playSecure(x0, est)
	}
	f.noise.Reset(f.rnd)
	f.ctl.Reset(f.xhat0)
	f.eve.Reset()
	for t := 0; t < f.steps; t++ {
		f.plant.Output(f.yhat)
		f.noise.Next(f.gamma)
		for i, g := range f.gamma {
			f.yhat[i] += g
		}
		f.ctl.Step(t, f.yhat, f.u)
		if err := f.eve.Observe(t, f.yhat, f.u); err != nil {
			return false, err
		}
		f.plant.Step(f.u)
	}
	return f.eve.Estimate(est), nil
}

// playSecure is play with the secure sampler: yhat(t) = C x_np(t) + the release's private part
// (docs/protocol.md section 12.4), x_np run on the same inputs as x.
func (f *floorEpisode) playSecure(x0, est []float64) (bool, error) {
	xnp := f.np.State()
	copy(xnp, x0)
	for k, q := range f.emb {
		f.xp[k], xnp[q] = x0[q], 0
	}
	if err := f.secure.Reset(&f.chacha, f.xp); err != nil {
		return false, err
	}
	f.ctl.Reset(f.xhat0)
	f.eve.Reset()
	for t := 0; t < f.steps; t++ {
		f.np.Output(f.yhat)
		f.secure.Next(f.rel)
		for i, g := range f.rel {
			f.yhat[i] = f.yhat[i] + g
		}
		f.ctl.Step(t, f.yhat, f.u)
		if err := f.eve.Observe(t, f.yhat, f.u); err != nil {
			return false, err
		}
		f.np.Step(f.u) // the true state is not read: the engine's batch does not simulate it either
	}
	return f.eve.Estimate(est), nil
}

// floorPlans are the plans the floor is checked on: the vehicle audit (structured noise, drawn
// once per episode) and the inline vehicle (i.i.d. noise, drawn every step, x0 off the origin).
func floorPlans(tb testing.TB) map[string]*plan.Plan {
	return map[string]*plan.Plan{
		"audit-vehicle-structured":        loadPlan(tb, "audit-vehicle-structured"),
		"audit-vehicle-structured, float": floatPlan(tb, "audit-vehicle-structured"),
		"inline vehicle, iid":             parsePlan(tb, vehicleDoc),
	}
}

// The floor is honest: for the same plan, seed and episodes (both secrets, as the game draws
// them) its final eavesdropper estimates equal the engine's player's bit for bit, so the floor
// benchmark compares the same arithmetic with and without the message machinery.
func TestFloorMatchesEngine(t *testing.T) {
	for name, p := range floorPlans(t) {
		t.Run(name, func(t *testing.T) {
			g := newGame(t, p, GameOptions{})
			seed := p.Scenario.Seed
			player, err := engine.NewPlayer(g.Plan, sim.NewSeeds(seed))
			require.NoError(t, err)
			floor := newFloor(t, g.Plan, seed)
			want, got := make([]float64, g.EstimateDim()), make([]float64, g.EstimateDim())
			var bits [2]int
			for e := 0; e < 12; e++ {
				bit := Bit(seed, uint64(e))
				bits[bit]++
				okE, err := player.Play(e, g.X0(bit), want)
				require.NoError(t, err)
				okF, err := floor.play(e, g.X0(bit), got)
				require.NoError(t, err)
				require.True(t, okE, "episode %d: the engine has an estimate", e)
				require.Equal(t, okE, okF, "episode %d", e)
				for i := range want {
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]),
						"episode %d (bit %d): estimate[%d]: engine %v, floor %v", e, bit, i, want[i], got[i])
				}
			}
			require.Equal(t, [2]int{6, 6}, bits, "six trials of each secret")
			require.NotEqual(t, g.X0(0), g.X0(1), "the two secrets run different initial states")
		})
	}
}

// playFunc is the signature engine.Player.Play and floorEpisode.play share.
type playFunc func(ep int, x0, est []float64) (bool, error)

// timeEpisodes plays episodes 0..len(x0s)-1 on one goroutine, writing episode e's estimate into
// out[e*dim:], and returns the wall time per episode in ns. A GC first, so that neither loop pays
// for the other's garbage.
func timeEpisodes(b *testing.B, play playFunc, x0s [][]float64, out []float64) float64 {
	runtime.GC()
	dim := len(out) / len(x0s)
	start := time.Now()
	for e, x0 := range x0s {
		if ok, err := play(e, x0, out[e*dim:(e+1)*dim]); err != nil || !ok {
			b.Fatalf("episode %d: estimate %v, error %v", e, ok, err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(len(x0s))
}

func roundMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFastEngineFloor: the cost of one vehicle episode (T = 100) through the fast engine's
// player (the role cores on the in-memory network, driven by sim.Driver: what PlayFast runs per
// episode) against the floor (the same arithmetic and random streams as a plain loop), timed on
// one goroutine: one worker, so each figure is the CPU time of an episode on an otherwise idle
// core. Rounds alternate engine and floor back to back, so machine noise hits both; the figures
// are the medians of the rounds, and ratio = engine-ns/ep / floor-ns/ep (target: <= 3). The
// batch player (engine.BatchPlayer, AuditBatch episodes at a time: what PlayFast runs on a
// fault-free plan) is timed in the same rounds: batch-ratio = batch-ns/ep / floor-ns/ep. The
// challenger's bits and the game's initial states are drawn before the clock starts; every round
// checks that the three loops' estimates are identical.
func BenchmarkFastEngineFloor(b *testing.B) {
	p := loadPlan(b, "audit-vehicle-structured")
	g := newGame(b, p, GameOptions{})
	const episodes, rounds = 20000, 3
	seed := p.Scenario.Seed
	player, err := engine.NewPlayer(g.Plan, sim.NewSeeds(seed))
	require.NoError(b, err)
	floor := newFloor(b, g.Plan, seed)
	x0s := make([][]float64, episodes)
	for e := range x0s {
		x0s[e] = g.X0(Bit(seed, uint64(e)))
	}
	dim := g.EstimateDim()
	engineEst, floorEst := make([]float64, episodes*dim), make([]float64, episodes*dim)
	bp, err := engine.NewBatchPlayer(g.Plan, sim.NewSeeds(seed), AuditBatch)
	require.NoError(b, err)
	batchEst := make([]float64, episodes*dim)
	timeEpisodes(b, player.Play, x0s[:episodes/10], engineEst[:episodes/10*dim]) // warm-up
	timeEpisodes(b, floor.play, x0s[:episodes/10], floorEst[:episodes/10*dim])
	timeBatches(b, bp, x0s[:episodes/10], batchEst[:episodes/10*dim])
	var engineNs, floorNs, batchNs []float64
	for b.Loop() {
		for range rounds {
			engineNs = append(engineNs, timeEpisodes(b, player.Play, x0s, engineEst))
			floorNs = append(floorNs, timeEpisodes(b, floor.play, x0s, floorEst))
			batchNs = append(batchNs, timeBatches(b, bp, x0s, batchEst))
			for i := range engineEst {
				if math.Float64bits(engineEst[i]) != math.Float64bits(floorEst[i]) || math.Float64bits(batchEst[i]) != math.Float64bits(floorEst[i]) {
					b.Fatalf("episode %d: the engine estimates %v, the batch %v, the floor %v", i/dim, engineEst[i], batchEst[i], floorEst[i])
				}
			}
		}
	}
	e, f, bt := roundMedian(engineNs), roundMedian(floorNs), roundMedian(batchNs)
	b.ReportMetric(e, "engine-ns/ep")
	b.ReportMetric(bt, "batch-ns/ep")
	b.ReportMetric(f, "floor-ns/ep")
	b.ReportMetric(e/f, "ratio")
	b.ReportMetric(bt/f, "batch-ratio")
}

// timeBatches is timeEpisodes for the batch player: batches of its width, in episode order.
func timeBatches(b *testing.B, bp *engine.BatchPlayer, x0s [][]float64, out []float64) float64 {
	runtime.GC()
	dim := len(out) / len(x0s)
	w := bp.Width()
	est, oks := make([][]float64, w), make([]bool, w)
	start := time.Now()
	for lo := 0; lo < len(x0s); lo += w {
		n := min(w, len(x0s)-lo)
		for j := 0; j < n; j++ {
			est[j] = out[(lo+j)*dim : (lo+j+1)*dim]
		}
		if err := bp.Play(lo, x0s[lo:lo+n], est[:n], oks[:n]); err != nil {
			b.Fatalf("batch at %d: %v", lo, err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(len(x0s))
}

// The batch player (engine.BatchPlayer: the cores hosting a batch of episodes each) gives every
// episode the estimate the one-episode player gives, bit for bit, for batches of 1, 7 and 64
// episodes and a last batch cut short.
func TestBatchPlayerMatchesPlayer(t *testing.T) {
	for name, p := range floorPlans(t) {
		t.Run(name, func(t *testing.T) {
			g := newGame(t, p, GameOptions{})
			seed := p.Scenario.Seed
			player, err := engine.NewPlayer(g.Plan, sim.NewSeeds(seed))
			require.NoError(t, err)
			const episodes = 150
			dim := g.EstimateDim()
			want := make([]float64, episodes*dim)
			x0s := make([][]float64, episodes)
			for e := range x0s {
				x0s[e] = g.X0(Bit(seed, uint64(e)))
				ok, err := player.Play(e, x0s[e], want[e*dim:(e+1)*dim])
				require.NoError(t, err)
				require.True(t, ok)
			}
			for _, width := range []int{1, 7, 64} {
				bp, err := engine.NewBatchPlayer(g.Plan, sim.NewSeeds(seed), width)
				require.NoError(t, err)
				est, oks := make([][]float64, width), make([]bool, width)
				for j := range est {
					est[j] = make([]float64, dim)
				}
				for lo := 0; lo < episodes; lo += width {
					w := min(width, episodes-lo)
					require.NoError(t, bp.Play(lo, x0s[lo:lo+w], est[:w], oks[:w]))
					for j := 0; j < w; j++ {
						require.True(t, oks[j], "width %d, episode %d", width, lo+j)
						for i := 0; i < dim; i++ {
							require.Equal(t, math.Float64bits(want[(lo+j)*dim+i]), math.Float64bits(est[j][i]),
								"width %d, episode %d: estimate[%d]: batch %v, player %v", width, lo+j, i, est[j][i], want[(lo+j)*dim+i])
						}
					}
				}
			}
		})
	}
}

// floatPlan is a shipped scenario's plan with the float sampler.
func floatPlan(tb testing.TB, name string) *plan.Plan {
	_, p := dpsimtest.LoadPlanSampler(tb, name, noise.SamplerFloat)
	return p
}
