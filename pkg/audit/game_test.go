package audit

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// loadPoints loads a shipped scenario and resolves every point as calibrated.
func loadPoints(t testing.TB, name string) []*plan.Plan {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"))
	require.NoError(t, err)
	var out []*plan.Plan
	for _, pt := range s.Expand() {
		p, err := plan.New(pt, plan.Options{})
		require.NoError(t, err)
		out = append(out, p)
	}
	return out
}

func loadPlan(t testing.TB, name string) *plan.Plan { return loadPoints(t, name)[0] }

func parsePlan(t testing.TB, doc string) *plan.Plan {
	t.Helper()
	s, err := scenario.Parse([]byte(doc), "inline.yaml")
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	return p
}

func newGame(t testing.TB, p *plan.Plan, o GameOptions) *Game {
	t.Helper()
	g, err := NewGame(p, o)
	require.NoError(t, err)
	return g
}

// play runs the fast engine and analyses the outcome.
func play(t testing.TB, g *Game, n int, seed uint64) *GameReport {
	t.Helper()
	out, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: seed})
	require.NoError(t, err)
	r, err := g.Analyze(out, ReportOptions{})
	require.NoError(t, err)
	return r
}

const vehicleDoc = `
name: inline-vehicle
kind: cloud-control
steps: 100
episodes: 10
seed: 5
plant:
  A: [[1, 0.1], [0, 1]]
  B: [[0.005], [0.1]]
  C: [[1, 0]]
  x0: [0.5, -0.25]
controller:
  K: [3.4240, 4.3095]
  L: [0.8266, 0.6973]
  reference: tanh
privacy:
  epsilon: 1
  delta: 0.01
`

// The worst pair of the audited adjacency, mapped to the plant (item 1).
func TestWorstPairMapping(t *testing.T) {
	t.Run("vehicle position model: dx = (z, 0) exactly", func(t *testing.T) {
		p := loadPlan(t, "audit-vehicle-structured")
		g := newGame(t, p, GameOptions{})
		require.Equal(t, PairWorst, g.Pair.Source)
		require.Equal(t, []float64{1}, g.Pair.Z)
		require.Equal(t, []float64{1, 0}, g.Pair.DX) // no rounding: the first two rows of O_T
		require.Equal(t, []float64{0, 0}, g.Pair.X0)
		require.Equal(t, []float64{1, 0}, g.Pair.X0Prime)
		require.Equal(t, -1, g.Pair.Agent)
		// tight calibration: the pair sits exactly at the claim
		require.InDelta(t, p.KappaInv, g.Theory.MuPair, 1e-9*p.KappaInv)
		require.InDelta(t, 1, g.Theory.EpsilonPair, 1e-6)
		require.Equal(t, []string{ScoreProjection, ScoreLLR, ScorePrecision}, g.ScoreNames())
	})
	t.Run("x' = x + mu dx from the scenario's x0 and mu", func(t *testing.T) {
		p := parsePlan(t, vehicleDoc+"  mu: 2.5\n  model: {A: 1, C: 1}\n")
		g := newGame(t, p, GameOptions{})
		require.Equal(t, []float64{0.5, -0.25}, g.Pair.X0)
		require.Equal(t, []float64{0.5 + 2.5, -0.25}, g.Pair.X0Prime)
		require.Equal(t, 2.5, g.Pair.Mu)
	})
	t.Run("full state: dx = z, the Mahalanobis-worst circuit", func(t *testing.T) {
		pts := loadPoints(t, "audit-vehicle-block-vs-manifold")
		require.Len(t, pts, 2)
		for _, p := range pts {
			g := newGame(t, p, GameOptions{Adjacency: privacy.Manifold})
			require.Equal(t, g.Pair.Z, g.Pair.DX)
			require.InDelta(t, 99, g.Pair.DX[0], 1e-9)
			require.InDelta(t, -10, g.Pair.DX[1], 1e-9)
			require.Equal(t, privacy.Manifold, g.Audited)
			require.Equal(t, p.Adjacency, g.Calibrated)
			require.Greater(t, g.Pair.Candidates, 1)
		}
		// calibrated for block and audited under manifold: ten times the claim's mu (1/Ts)
		gb := newGame(t, pts[0], GameOptions{Adjacency: privacy.Manifold})
		require.InDelta(t, 10*pts[0].KappaInv, gb.Theory.MuPair, 1e-3*pts[0].KappaInv)
		// audited under block, the block pair z = A^{-t} e_k at its worst
		gbb := newGame(t, pts[0], GameOptions{})
		require.Equal(t, privacy.Block, gbb.Audited)
		require.InDelta(t, pts[0].KappaInv, gbb.Theory.MuPair, 1e-6*pts[0].KappaInv)
	})
	t.Run("iid-naive: z from the output difference", func(t *testing.T) {
		g := newGame(t, loadPlan(t, "audit-vehicle-iid-naive"), GameOptions{})
		require.InDelta(t, 1, g.Pair.Z[0], 1e-12)
		require.InDeltaSlice(t, []float64{1, 0}, g.Pair.X0Prime, 1e-12)
		// the LS estimate's covariance s^2 (O'O)^{-1}: mu = sqrt(T)/s = 10 x the claim's
		require.InDelta(t, 10*g.Plan.KappaInv, g.Theory.MuPair, 1e-6)
	})
	t.Run("consensus: agent 0 + mu", func(t *testing.T) {
		p := loadPlan(t, "audit-consensus-gaussian")
		g := newGame(t, p, GameOptions{})
		require.Equal(t, 0, g.Pair.Agent)
		want := append([]float64(nil), p.Scenario.X0...)
		want[0]++
		require.Equal(t, want, g.Pair.X0Prime)
		require.Equal(t, p.Scenario.X0, g.Pair.X0)
		gl := newGame(t, loadPlan(t, "audit-consensus-laplace"), GameOptions{})
		require.InDelta(t, 1, gl.Theory.EpsilonPair, 1e-12) // ||G d||_1 = mu / b = eps
	})
	t.Run("explicit pair overrides", func(t *testing.T) {
		p := loadPlan(t, "audit-vehicle-structured")
		g := newGame(t, p, GameOptions{Pair: &scenario.AuditPair{X0: []float64{1, 2}, X0Prime: []float64{1.5, 2}}})
		require.Equal(t, PairScenario, g.Pair.Source)
		require.Equal(t, []float64{1.5, 2}, g.X0(1))
		require.InDelta(t, 0.5*p.KappaInv, g.Theory.MuPair, 1e-9)
		_, err := NewGame(p, GameOptions{Pair: &scenario.AuditPair{X0: []float64{1}, X0Prime: []float64{2}}})
		require.ErrorContains(t, err, "want 2 (the plant's initial state)")
	})
	t.Run("null pair x0 = x0prime scores along the worst direction", func(t *testing.T) {
		p := loadPlan(t, "audit-vehicle-null")
		g := newGame(t, p, GameOptions{Pair: p.Scenario.Audit.Pair})
		require.True(t, g.Pair.Null)
		require.Equal(t, []float64{0, 0}, g.X0(0))
		require.Equal(t, []float64{0, 0}, g.X0(1))
		require.Equal(t, []float64{1, 0}, g.Pair.X0Prime)
	})
	t.Run("a private model outside the plant's signal space is refused", func(t *testing.T) {
		// the secure sampler refuses it already (its private part is not a set of the plant's
		// coordinates); with the float sampler the audit refuses the pair
		s, err := scenario.Parse([]byte(vehicleDoc+"  model: {A: 0.5, C: 1}\n"), "inline.yaml")
		require.NoError(t, err)
		_, err = plan.New(s, plan.Options{})
		require.ErrorContains(t, err, "not a set of the plant's state coordinates")
		p := parsePlan(t, vehicleDoc+"  model: {A: 0.5, C: 1}\n  sampler: float\n")
		_, err = NewGame(p, GameOptions{})
		require.ErrorContains(t, err, "no exact solution")
	})
	t.Run("laplace: the likelihood ratio in the noise coordinates, i.i.d. without it", func(t *testing.T) {
		lap := "  mechanism: laplace\n  model: {A: 1, C: 1}\n"
		doc := strings.Replace(vehicleDoc, "  delta: 0.01\n", "", 1)
		require.Equal(t, []string{ScoreProjection, ScoreLLR, ScorePrecision}, newGame(t, parsePlan(t, doc+lap), GameOptions{}).ScoreNames())
		// the real-valued mechanism (the float sampler's bits are the precision score's)
		g := newGame(t, parsePlan(t, doc+lap), GameOptions{NoPrecision: true})
		require.Equal(t, []string{ScoreProjection, ScoreLLR}, g.ScoreNames())
		require.InDelta(t, 1, g.Theory.EpsilonPair, 1e-9) // ||G d||_1 = mu / b
		r := play(t, g, 20000, 8)
		require.Equal(t, Consistent, r.Verdict)
		require.GreaterOrEqual(t, r.EpsilonLBCP, 0.8)
		gi := newGame(t, parsePlan(t, doc+lap+"  noise: iid-naive\n"), GameOptions{NoPrecision: true})
		require.Equal(t, []string{ScoreProjection}, gi.ScoreNames())
		require.Contains(t, gi.Notes[0], "whose law is not Laplace")
		ri := play(t, gi, 3000, 8)
		require.Equal(t, Violation, ri.Verdict) // the projection score alone exposes the naive design
	})
	t.Run("noise none: projection only, the rank condition fails", func(t *testing.T) {
		p := parsePlan(t, vehicleDoc+"  noise: none\n  model: {A: 1, C: 1}\n")
		g := newGame(t, p, GameOptions{})
		require.Equal(t, []string{ScoreProjection}, g.ScoreNames())
		require.Contains(t, g.Notes[0], "rank condition (8) fails")
		r := play(t, g, 200, 1)
		require.Equal(t, Violation, r.Verdict) // told apart with certainty
		require.Greater(t, r.EpsilonLBCP, 2.0)
	})
}

// The balanced challenger: exactly N bits of each value, pairs opposite, the coin of pair k from the
// contract stream rng(seed, "challenger", 2k).
func TestChallengerBalanced(t *testing.T) {
	const n = 5000
	ones := 0
	for e := uint64(0); e < 2*n; e++ {
		b := Bit(77, e)
		ones += b
		if e%2 == 0 {
			require.Equal(t, int(rng.New(77, rng.Label("challenger"), e).Uint64()>>63), b)
			require.Equal(t, 1-b, Bit(77, e+1))
		}
	}
	require.Equal(t, n, ones)
	// first bits of the pairs are fair coins: within 4 standard deviations of n/2
	first := 0
	for k := uint64(0); k < n; k++ {
		first += Bit(77, 2*k)
	}
	require.InDelta(t, n/2, first, 4*math.Sqrt(n/4.0))
}

// The likelihood-ratio score's law under each bit matches the covariance the game derives from the
// plan (docs/math.md sections 4-5): N(-+mu^2/2, mu^2) with mu = Theory.MuPair. This checks the
// estimate-error model of every noise kind against the running cores.
func TestEstimateLawMatchesTheCores(t *testing.T) {
	for _, c := range []struct {
		name string
		plan *plan.Plan
	}{
		{"vehicle structured", loadPlan(t, "audit-vehicle-structured")},
		{"vehicle iid-naive", loadPlan(t, "audit-vehicle-iid-naive")},
		{"full state calibrated block", loadPoints(t, "audit-vehicle-block-vs-manifold")[0]},
		{"consensus gaussian", loadPlan(t, "audit-consensus-gaussian")},
		{"vehicle iid-calibrated", parsePlan(t, vehicleDoc+"  noise: iid-calibrated\n  model: {A: 1, C: 1}\n")},
		{"full state optimal Sigma", parsePlan(t, vehicleDoc+"  adjacency: block\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGame(t, c.plan, GameOptions{})
			require.Equal(t, ScoreLLR, g.ScoreNames()[1])
			mu := g.Theory.MuPair
			const n = 3000
			loop, err := engine.NewPlayer(c.plan, sim.NewSeeds(9))
			require.NoError(t, err)
			sc := g.Scorer()
			est, scores := make([]float64, g.EstimateDim()), make([]float64, 2)
			for bit := 0; bit < 2; bit++ {
				v := make([]float64, n)
				for e := 0; e < n; e++ {
					_, err := loop.Play(e, g.X0(bit), est)
					require.NoError(t, err)
					sc.Scores(est, scores)
					v[e] = scores[1]
				}
				m, sd := stat.MeanStdDev(v, nil)
				want := (float64(bit) - 0.5) * mu * mu
				// 5 standard errors for the mean; the standard deviation within 8 %
				require.InDelta(t, want, m, 5*mu/math.Sqrt(n), "mean under bit %d", bit)
				require.InDelta(t, mu, sd, 0.08*mu, "sd under bit %d", bit)
			}
		})
	}
}

// The outcome and the report do not depend on the number of workers (deterministic for a
// seed regardless of workers), nor on the batch player's width (AuditBatch 1: the one-episode
// player; 7 and 64: batches ending mid-chunk and at its end).
func TestFastDeterministicAcrossWorkers(t *testing.T) {
	g := newGame(t, loadPlan(t, "audit-vehicle-structured"), GameOptions{})
	var reports []string
	defer func(w int) { AuditBatch = w }(AuditBatch)
	for _, c := range []struct{ workers, batch int }{{1, 64}, {2, 64}, {5, 64}, {2, 1}, {1, 7}} {
		AuditBatch = c.batch
		out, err := PlayFast(context.Background(), g, FastOptions{Trials: 3000, Seed: 21, Workers: c.workers})
		require.NoError(t, err)
		require.Equal(t, 6000, out.Episodes)
		r, err := g.Analyze(out, ReportOptions{})
		require.NoError(t, err)
		r.ElapsedSec, r.EpisodesPerSec = 0, 0
		b, err := json.Marshal(r)
		require.NoError(t, err)
		reports = append(reports, string(b))
	}
	for i := 1; i < len(reports); i++ {
		require.Equal(t, reports[0], reports[i], "configuration %d", i)
	}
}

func TestFastCancelAndErrors(t *testing.T) {
	g := newGame(t, loadPlan(t, "audit-vehicle-structured"), GameOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := PlayFast(ctx, g, FastOptions{Trials: 100000, Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, out.Episodes, 200000)
	_, err = PlayFast(context.Background(), g, FastOptions{Trials: 0})
	require.ErrorContains(t, err, "want >= 1")
	_, err = g.Analyze(&Outcome{}, ReportOptions{})
	require.ErrorContains(t, err, "does not belong")
	_, err = NewGame(g.Plan, GameOptions{Adjacency: "diagonal"})
	require.ErrorContains(t, err, "unknown adjacency")
}

// One trial of the fast engine allocates a constant number of objects (the episode's random
// sources), whatever the horizon: nothing per step.
func TestFastNoAllocationPerStep(t *testing.T) {
	perTrial := func(steps int) float64 {
		p := parsePlan(t, vehicleDoc+"  model: {A: 1, C: 1}\n"+"") // T = 100
		if steps != 100 {
			s := p.Scenario.Clone()
			s.Steps = steps
			var err error
			p, err = plan.New(s, plan.Options{})
			require.NoError(t, err)
		}
		g := newGame(t, p, GameOptions{})
		loop, err := engine.NewPlayer(p, sim.NewSeeds(3))
		require.NoError(t, err)
		out := g.NewOutcome(EngineFast, 3, 1000)
		sc := g.Scorer()
		trk := g.PrecisionTracker() // the precision tests, as the fast engine runs them
		loop.SetTap(trk)
		est, scores := make([]float64, 2), make([]float64, len(g.ScoreNames()))
		e := 0
		return testing.AllocsPerRun(200, func() {
			bit := Bit(3, uint64(e))
			if _, err := loop.Play(e, g.X0(bit), est); err != nil {
				t.Fatal(err)
			}
			sc.ScoresEvidence(est, trk.Evidence(), scores)
			out.Add(uint64(e), bit, scores)
			e++
		})
	}
	a100, a1000 := perTrial(100), perTrial(1000)
	require.Equal(t, a100, a1000, "allocations grow with T")
	require.LessOrEqual(t, a100, 4.0) // challenger's and plant's random sources
}

// A pair given in the scenario must be mu-adjacent: a pair 3 mu apart would make a sound
// calibration look violated, so it is refused; the worst adjacent pair itself and a closer pair
// are accepted (an audit on them bounds the claim).
func TestGivenPairMustBeAdjacent(t *testing.T) {
	for _, name := range []string{"audit-vehicle-structured", "audit-consensus-gaussian", "audit-consensus-laplace"} {
		p := loadPlan(t, name)
		worst := newGame(t, p, GameOptions{}).Pair
		scaled := func(c float64) *scenario.AuditPair {
			x1 := slices.Clone(worst.X0)
			for i := range x1 {
				x1[i] += c * (worst.X0Prime[i] - worst.X0[i])
			}
			return &scenario.AuditPair{X0: slices.Clone(worst.X0), X0Prime: x1}
		}
		for _, c := range []float64{0.5, 1} {
			_, err := NewGame(p, GameOptions{Pair: scaled(c)})
			require.NoError(t, err, "%s: %g x the worst pair", name, c)
		}
		_, err := NewGame(p, GameOptions{Pair: scaled(3)})
		require.ErrorContains(t, err, "not mu-adjacent", name)
	}
}
