package audit

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/sim"
)

// playK plays n trials per side of the vehicle's game with k episodes per trial and returns the
// report and the outcome.
// The composition tests compare the real-valued scores across k (NoPrecision): the precision
// score is tested on its own (precision_test.go).

func playK(t *testing.T, k, n int, seed uint64) (*Game, *Outcome, *GameReport) {
	t.Helper()
	g := newGame(t, loadPlan(t, "audit-vehicle-structured"), GameOptions{NoPrecision: true, EpisodesPerTrial: k})
	out, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: seed})
	require.NoError(t, err)
	r, err := g.Analyze(out, ReportOptions{CurvePoints: -1})
	require.NoError(t, err)
	return g, out, r
}

// empiricalMu is (mean_1 - mean_0)/sd of a Gaussian score (the likelihood ratio: under bit b it is
// N(-+ c, s^2) with 2c/s the pair's GDP mu), sd pooled over both sides, and its standard error
// sqrt(2/n + mu^2/(4n)) for n trials per side: the difference of the means contributes 2 s^2/n, the
// sd (from 2n draws, relative variance 1/(4n)) mu^2/(4n).
func empiricalMu(t *testing.T, tr *Trials) (mu, se float64) {
	t.Helper()
	var m, v [2]float64
	var n [2]int
	for b := 0; b < 2; b++ {
		s := tr.Scores(b)
		n[b] = len(s)
		for _, x := range s {
			m[b] += x
		}
		m[b] /= float64(len(s))
		for _, x := range s {
			v[b] += (x - m[b]) * (x - m[b])
		}
	}
	sd := math.Sqrt((v[0] + v[1]) / float64(n[0]+n[1]-2))
	mu = (m[1] - m[0]) / sd
	nf := float64(min(n[0], n[1]))
	return mu, math.Sqrt(2/nf + mu*mu/(4*nf))
}

// Composition (docs/math.md section 9) seen by the auditor on the vehicle: a trial of k episodes of
// the same secret, the eavesdropper averaging its k estimates, is the sqrt(k) mu-GDP mechanism. The
// bounds stay within the composed claim eps_run(k) (consistent) and, for k >= 4, exceed the
// per-episode claim eps = 1 (violation): the per-episode guarantee does not cover a run. The LLR
// score's empirical mu grows as sqrt(k) times the one-episode one, within 4 standard errors.
//
// Trial counts: 4000 per side. The per-episode claim eps = 1 at delta = 0.01 is mu_claimed = 0.53
// GDP; at k = 4 the trial is 1.07-GDP, and with 2000 bounding trials per side mu_gdp comes within
// ~0.15 of it (0.92 here), far above 0.53, so the violation does not hang on the seed. The sqrt(k)
// check: the standard error of the empirical mu is ~0.023-0.028 (k = 1..16), so 4 se is ~5% of
// sqrt(16) mu. 2 x 4000 x (1 + 4 + 16) = 168,000 vehicle episodes, about 2.5 s on 2 cores.
// Measured (seeds 2501, 2504, 2516): k = 1, 4, 16 give eps_run 1, 2.523, 6.556; eps_lb_cp 0.350,
// 1.472, 3.230; eps_lb_gdp 0.389, 2.078, 5.601; empirical mu 0.484, 1.064, 2.150 against sqrt(k) x
// 0.5325 = 0.533, 1.065, 2.130.
func TestCompositionVehicle(t *testing.T) {
	const n = 4000
	p := loadPlan(t, "audit-vehicle-structured")
	muEp := p.KappaInv // the tight calibration: the pair's mu per episode is the claim's
	var mu1, se1 float64
	for _, k := range []int{1, 4, 16} {
		g, out, r := playK(t, k, n, 2500+uint64(k))
		require.Equal(t, k, r.EpisodesPerTrial)
		require.Equal(t, 2*n*k, r.Episodes)
		require.Equal(t, 1.0, r.EpsilonClaimed, "epsilon_claimed stays the per-episode claim")
		// the composed claim, from pkg/privacy: sqrt(k) mu_claimed at delta
		_, want, err := privacy.GaussianRunEpsilon(muEp, k, 0.01)
		require.NoError(t, err)
		if k == 1 {
			want = 1
		}
		require.InDelta(t, want, r.EpsilonClaimedRun, 1e-9*want)
		require.InDelta(t, math.Sqrt(float64(k))*muEp, r.Theory.MuPair, 1e-9)
		require.InDelta(t, r.EpsilonClaimedRun, r.Theory.EpsilonPair, 1e-6) // tight: the pair sits at the composed claim

		require.Equal(t, Consistent, r.Verdict, "k = %d: eps_lb_cp %g, eps_lb_gdp %g against eps_run %g", k, r.EpsilonLBCP, r.EpsilonLBGDP, r.EpsilonClaimedRun)
		require.LessOrEqual(t, r.MuGDP, r.Theory.MuPair)
		if k >= 4 {
			require.Equal(t, Violation, r.VerdictEpisode, "k = %d: the per-episode claim eps = 1 against eps_lb_gdp %g", k, r.EpsilonLBGDP)
			require.Greater(t, r.EpsilonLBGDP, 1.0)
			require.Contains(t, r.VerdictLine(), "against the per-episode claim eps = 1 the same bounds say VIOLATION")
			require.Contains(t, r.VerdictLine(), "eps_run = ")
		} else {
			require.Empty(t, r.VerdictEpisode)
		}
		// the fitted GDP mu is a lower bound on mu_pair (at 95%), within its statistical margin
		require.Greater(t, r.MuGDP, r.Theory.MuPair-0.35, "k = %d", k)

		mu, se := empiricalMu(t, out.Trials[slices.Index(g.ScoreNames(), ScoreLLR)])
		t.Logf("k = %2d: eps_run %.4f, eps_lb_cp %.4f, eps_lb_gdp %.4f, mu_gdp %.4f, empirical mu %.4f +- %.4f (theory %.4f)",
			k, r.EpsilonClaimedRun, r.EpsilonLBCP, r.EpsilonLBGDP, r.MuGDP, mu, se, r.Theory.MuPair)
		require.InDelta(t, r.Theory.MuPair, mu, 4*se, "k = %d: empirical mu against sqrt(k) mu_pair", k)
		if k == 1 {
			mu1, se1 = mu, se
			continue
		}
		// sqrt(k) times the one-episode empirical mu (independent seeds: the variances add)
		sk := math.Sqrt(float64(k))
		tol := 4 * math.Sqrt(se*se+sk*sk*se1*se1)
		require.InDelta(t, sk*mu1, mu, tol, "k = %d: empirical mu %g against sqrt(k) x %g", k, mu, mu1)
	}
}

// k = 1 is today's one-episode game: the same scores as playing episode e from x0 of trial e's bit,
// and the same report as a game built without the option.
func TestCompositionOneEpisodeIsToday(t *testing.T) {
	const n, seed = 1500, 77
	p := loadPlan(t, "audit-vehicle-structured")
	g0 := newGame(t, p, GameOptions{NoPrecision: true})
	g1 := newGame(t, p, GameOptions{NoPrecision: true, EpisodesPerTrial: 1})
	o0, err := PlayFast(context.Background(), g0, FastOptions{Trials: n, Seed: seed, Workers: 1})
	require.NoError(t, err)
	o1, err := PlayFast(context.Background(), g1, FastOptions{Trials: n, Seed: seed, Workers: 2})
	require.NoError(t, err)
	// the one-episode loop as it was: episode e from X0(Bit(seed, e)), scored alone
	player, err := engine.NewPlayer(p, sim.NewSeeds(seed))
	require.NoError(t, err)
	sc, est := g0.Scorer(), make([]float64, g0.EstimateDim())
	want := g0.NewOutcome(EngineFast, seed, n)
	scores := make([]float64, len(g0.ScoreNames()))
	for e := 0; e < 2*n; e++ {
		bit := Bit(seed, uint64(e))
		ok, err := player.Play(e, g0.X0(bit), est)
		require.True(t, ok)
		require.NoError(t, err)
		sc.Scores(est, scores)
		want.Add(uint64(e), bit, scores)
	}
	for i := range g0.ScoreNames() {
		for b := 0; b < 2; b++ {
			w := want.Trials[i].Scores(b)
			slices.Sort(w)
			for _, o := range []*Outcome{o0, o1} {
				got := o.Trials[i].Scores(b)
				slices.Sort(got)
				require.Equal(t, w, got)
			}
		}
	}
	r0, err := g0.Analyze(o0, ReportOptions{})
	require.NoError(t, err)
	r1, err := g1.Analyze(o1, ReportOptions{})
	require.NoError(t, err)
	r0.ElapsedSec, r0.EpisodesPerSec, r1.ElapsedSec, r1.EpisodesPerSec = 0, 0, 0, 0
	require.Equal(t, r0, r1)
	require.Equal(t, 1, r1.EpisodesPerTrial)
	require.Equal(t, r1.EpsilonClaimed, r1.EpsilonClaimedRun)
	require.NotContains(t, r1.VerdictLine(), "eps_run")
}

// Trial i of a k-episode game plays episodes i*k .. i*k+k-1: the outcome is the same for any
// number of workers and when cut into chunks (PlayChunk), and its estimate is the average of the k
// one-episode estimates.
func TestCompositionDeterministic(t *testing.T) {
	const n, k, seed = 300, 3, 11
	p := loadPlan(t, "audit-vehicle-structured")
	g := newGame(t, p, GameOptions{NoPrecision: true, EpisodesPerTrial: k})
	a, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: seed, Workers: 1})
	require.NoError(t, err)
	b := g.NewOutcome(EngineFast, seed, n)
	for lo := 0; lo < 2*n; lo += 128 {
		hi := min(lo+128, 2*n)
		s, err := PlayChunk(context.Background(), g, seed, lo, hi, 2)
		require.NoError(t, err)
		require.NoError(t, b.AddChunk(lo, hi, s))
	}
	player, err := engine.NewPlayer(p, sim.NewSeeds(seed))
	require.NoError(t, err)
	sc, est := g.Scorer(), make([]float64, g.EstimateDim())
	avg := make([]float64, g.EstimateDim())
	want := g.NewOutcome(EngineFast, seed, n)
	scores := make([]float64, len(g.ScoreNames()))
	for e := 0; e < 2*n; e++ {
		bit := Bit(seed, uint64(e))
		sum := make([]float64, len(est))
		for j := 0; j < k; j++ {
			ok, err := player.Play(e*k+j, g.X0(bit), est)
			require.True(t, ok)
			require.NoError(t, err)
			for i, v := range est {
				sum[i] += v
			}
		}
		for i := range sum {
			avg[i] = sum[i] / k
		}
		sc.Scores(avg, scores)
		want.Add(uint64(e), bit, scores)
	}
	for i := range g.ScoreNames() {
		for bit := 0; bit < 2; bit++ {
			w := want.Trials[i].Scores(bit)
			slices.Sort(w)
			for _, o := range []*Outcome{a, b} {
				got := o.Trials[i].Scores(bit)
				slices.Sort(got)
				require.Equal(t, w, got)
			}
		}
	}
	_, err = NewGame(p, GameOptions{NoPrecision: true, EpisodesPerTrial: MaxEpisodesPerTrial + 1})
	require.ErrorContains(t, err, "episodes per trial")
}

// The composition figure holds to the house style and names its marks: the composed claim, the
// per-episode claim and both bounds of every audit.
func TestCompositionFigure(t *testing.T) {
	var reps []*GameReport
	for _, k := range []int{1, 2, 4, 8, 16} {
		_, _, r := playK(t, k, 300, 9)
		reps = append(reps, r)
	}
	f, err := CompositionFigure("audit-vehicle-structured", reps, "composition")
	require.NoError(t, err)
	require.NoError(t, f.Check())
	svg, err := f.Render("svg")
	require.NoError(t, err)
	for _, want := range []string{"composed claim eps_run(k)", "per-episode claim eps = 1", "eps_lb_cp", "eps_lb_gdp", "k = episodes per trial"} {
		require.Contains(t, string(svg), want)
	}
	if dir := os.Getenv("DPSIM_FIGURE_DIR"); dir != "" { // a look at it: DPSIM_FIGURE_DIR=/tmp/x go test -run TestCompositionFigure
		_, err := PlotComposition(dir, "composition", "audit-vehicle-structured", reps)
		require.NoError(t, err)
	}
}
