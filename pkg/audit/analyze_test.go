package audit

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

func analyze(t testing.TB, tr *Trials, o Options) *Result {
	t.Helper()
	r, err := tr.Analyze(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A Gaussian mechanism exactly at its claim (pair distance mu = KappaInverse(eps, delta) in noise units,
// scores N(0,1) vs N(mu,1): exactly mu-GDP). The Gaussian-DP bound must approach the true eps without
// exceeding it: >= 0.9 eps with 10^6 trials per side (>= 0.8 eps with 10^5 under -short: the split
// bounds on 5*10^4 trials, where the Clopper-Pearson margins alone cost ~10% of eps at delta = 1e-5),
// the Clopper-Pearson bound must stay below eps, verdict consistent.
func TestGaussianAtClaim(t *testing.T) {
	n, frac := 1000000, 0.9
	if testing.Short() {
		n, frac = 100000, 0.8
	}
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {0.5, 1e-2}, {2, 1e-6}} {
		for _, sel := range []Selection{SelectSplit, SelectBonferroni} {
			mu := mustMu(t, c.eps, c.delta)
			r := analyze(t, gaussTrials(11, n, mu), Options{EpsilonClaimed: c.eps, Delta: c.delta, Selection: sel})
			t.Logf("n=%d eps=%g delta=%g %s: lb_gdp=%.4f (%.3f eps) mu_gdp=%.4f/%.4f lb_cp=%.4f", n, c.eps, c.delta, sel,
				r.EpsilonLBGDP, r.EpsilonLBGDP/c.eps, r.MuGDP, mu, r.EpsilonLBCP)
			if r.EpsilonLBGDP < frac*c.eps {
				t.Errorf("eps=%g %s: lb_gdp %.4f < %g eps", c.eps, sel, r.EpsilonLBGDP, frac)
			}
			if r.EpsilonLBGDP > c.eps || r.MuGDP > mu {
				t.Errorf("eps=%g %s: lb_gdp %.4f (mu %.4f) above the truth", c.eps, sel, r.EpsilonLBGDP, r.MuGDP)
			}
			if r.EpsilonLBCP > c.eps || r.EpsilonLBCP <= 0 {
				t.Errorf("eps=%g %s: lb_cp %.4f not in (0, eps]", c.eps, sel, r.EpsilonLBCP)
			}
			if r.Verdict != Consistent {
				t.Errorf("eps=%g %s: verdict %s", c.eps, sel, r.Verdict)
			}
			if math.Abs(r.MuClaimed-mu) > 1e-12 {
				t.Errorf("mu_claimed %v, want %v", r.MuClaimed, mu)
			}
		}
	}
}

// A tight Laplace mechanism (shift eps, scale 1, optimal LLR score): the pure-eps Clopper-Pearson bound
// stays below eps and, with 10^5 trials per side, reaches at least 0.93 eps (0.97 observed for eps=1).
func TestLaplaceAtClaim(t *testing.T) {
	const n = 100000
	for _, eps := range []float64{0.5, 1, 2} {
		r := analyze(t, laplaceTrials(5, n, eps), Options{EpsilonClaimed: eps, Mechanism: privacy.Laplace})
		t.Logf("laplace eps=%g: lb_cp=%.4f (%.3f eps) tau=%.4f fpr_up=%.4f fnr_up=%.4f", eps, r.EpsilonLBCP, r.EpsilonLBCP/eps,
			r.CP.Threshold, r.CP.FPRUpper, r.CP.FNRUpper)
		if r.EpsilonLBCP > eps || r.EpsilonLBCP < 0.93*eps {
			t.Errorf("eps=%g: lb_cp %.4f not in [0.93 eps, eps]", eps, r.EpsilonLBCP)
		}
		if r.GDP != nil || r.EpsilonLBGDP != 0 || r.MuClaimed != 0 {
			t.Errorf("laplace audit used the Gaussian-DP fit")
		}
		if r.Verdict != Consistent || r.Delta != 0 {
			t.Errorf("eps=%g: verdict %s delta %v", eps, r.Verdict, r.Delta)
		}
	}
}

// binomUpperTail is P(Bin(n, p) >= k), for the slack of the repeated-seed tests.
func binomUpperTail(k, n int, p float64) float64 {
	var s float64
	for i := k; i <= n; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(lc - a - b + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

// maxFlags is the largest count of flags among `seeds` runs still compatible with a 5% rate: P(Bin(seeds,
// 0.05) > maxFlags) < 1%.
func maxFlags(seeds int) int {
	k := 0
	for binomUpperTail(k+1, seeds, 0.05) >= 0.01 {
		k++
	}
	return k
}

// Soundness of the verdict: 50 seeds of a mechanism exactly at its claim, 95% confidence. Each run may
// wrongly say "violation" with probability <= 5%, so the count over 50 independent seeds must not exceed
// the 99% point of Bin(50, 0.05) (= 7). Gaussian (CP + GDP) with both selections, and Laplace (CP).
func TestFalseViolationRate(t *testing.T) {
	const seeds, n = 50, 20000
	limit := maxFlags(seeds)
	eps, delta := 1.0, 1e-5
	mu := mustMu(t, eps, delta)
	for _, c := range []struct {
		name string
		make func(seed uint64) *Trials
		opts Options
	}{
		{"gaussian/split", func(s uint64) *Trials { return gaussTrials(1000+s, n, mu) }, Options{EpsilonClaimed: eps, Delta: delta}},
		{"gaussian/bonferroni", func(s uint64) *Trials { return gaussTrials(2000+s, n, mu) }, Options{EpsilonClaimed: eps, Delta: delta, Selection: SelectBonferroni}},
		{"laplace/split", func(s uint64) *Trials { return laplaceTrials(3000+s, n, eps) }, Options{EpsilonClaimed: eps, Mechanism: privacy.Laplace}},
	} {
		flags := 0
		var maxRatio float64
		for s := uint64(0); s < seeds; s++ {
			r := analyze(t, c.make(s), c.opts)
			if r.Verdict == Violation {
				flags++
			}
			maxRatio = math.Max(maxRatio, math.Max(r.EpsilonLBCP, math.Max(r.EpsilonLBGDP, r.EpsilonLBFDP))/eps)
		}
		t.Logf("%s: %d/%d false violations (limit %d), largest lb/eps %.3f", c.name, flags, seeds, limit, maxRatio)
		if flags > limit {
			t.Errorf("%s: %d false violations in %d seeds > %d", c.name, flags, seeds, limit)
		}
	}
}

// Coverage of the statements themselves, where the truth is known: for N(0,1) vs N(mu,1) scores the
// true error rates of any test are Phi(-tau) and Phi(tau - mu) (orientation greater). Over 50 seeds the
// runs in which some true rate of a reported test exceeds its upper bound must stay within the 95%
// promise (at most 7 of 50, the 99% point of Bin(50, 0.05)). Choosing and bounding on the same trials
// would break this for the tail thresholds the Clopper-Pearson bound prefers.
func TestRateBoundCoverage(t *testing.T) {
	const seeds, n = 50, 20000
	limit := maxFlags(seeds)
	mu := mustMu(t, 1, 1e-5)
	for _, sel := range []Selection{SelectSplit, SelectBonferroni} {
		miss := 0
		for s := uint64(0); s < seeds; s++ {
			r := analyze(t, gaussTrials(5000+s, n, mu), Options{EpsilonClaimed: 1, Delta: 1e-5, Selection: sel})
			bad := false
			for _, b := range []*Bound{&r.CP, r.GDP} {
				fpr, fnr := privacy.Phi(-b.Threshold), privacy.Phi(b.Threshold-mu)
				if b.Orientation == string(OrientLess) {
					fpr, fnr = 1-fpr, 1-fnr
				}
				bad = bad || fpr > b.FPRUpper || fnr > b.FNRUpper
			}
			if bad {
				miss++
			}
		}
		t.Logf("%s: %d/%d runs with a true rate above its bound (limit %d)", sel, miss, seeds, limit)
		if miss > limit {
			t.Errorf("%s: %d/%d runs with a true rate above its bound > %d", sel, miss, seeds, limit)
		}
	}
}

// Scores independent of the secret (noise only): every bound is 0 within its confidence; over 30 seeds
// a nonzero bound may occur at most at the 5% rate (plus binomial slack).
func TestNoDependenceGivesZero(t *testing.T) {
	const seeds, n = 30, 20000
	limit := maxFlags(seeds)
	nonzero := 0
	for s := uint64(0); s < seeds; s++ {
		for _, sel := range []Selection{SelectSplit, SelectBonferroni} {
			r := analyze(t, gaussTrials(4000+s, n, 0), Options{EpsilonClaimed: 0.1, Delta: 1e-5, Selection: sel})
			if r.EpsilonLBCP > 0 || r.EpsilonLBGDP > 0 {
				nonzero++
				t.Logf("seed %d %s: lb_cp %.4f lb_gdp %.4f", s, sel, r.EpsilonLBCP, r.EpsilonLBGDP)
			}
			if r.EpsilonLBCP == 0 && r.EpsilonLBGDP == 0 && r.Verdict != Consistent {
				t.Fatalf("zero bounds but verdict %s", r.Verdict)
			}
		}
	}
	if nonzero > 2*limit {
		t.Errorf("%d of %d analyses gave a nonzero bound for a secret-independent mechanism (limit %d)", nonzero, 2*seeds, 2*limit)
	}
}

// An under-calibrated mechanism (true eps three times the claim) is flagged.
func TestUnderCalibratedFlagged(t *testing.T) {
	const n = 20000
	eps, delta := 1.0, 1e-5
	muTrue := mustMu(t, 3*eps, delta)
	for _, sel := range []Selection{SelectSplit, SelectBonferroni} {
		r := analyze(t, gaussTrials(21, n, muTrue), Options{EpsilonClaimed: eps, Delta: delta, Selection: sel})
		t.Logf("gaussian %s: lb_gdp %.3f lb_cp %.3f (true %.1f, claim %.1f)", sel, r.EpsilonLBGDP, r.EpsilonLBCP, 3*eps, eps)
		if r.Verdict != Violation || r.EpsilonLBGDP <= eps {
			t.Errorf("gaussian %s: verdict %s, lb_gdp %.3f", sel, r.Verdict, r.EpsilonLBGDP)
		}
	}
	r := analyze(t, laplaceTrials(22, n, 3*eps), Options{EpsilonClaimed: eps, Mechanism: privacy.Laplace})
	t.Logf("laplace: lb_cp %.3f", r.EpsilonLBCP)
	if r.Verdict != Violation || r.EpsilonLBCP <= eps {
		t.Errorf("laplace: verdict %s, lb_cp %.3f", r.Verdict, r.EpsilonLBCP)
	}
}

// Scores pointing the other way (larger for x, like estimate.ProjectScore's raw orientation) are
// audited as well with OrientBoth: on a mirrored fixed grid the negated scores give exactly the same
// bounds through the "less" orientation; with the split both are close to the truth; restricted to the
// wrong orientation they show nothing.
func TestOrientation(t *testing.T) {
	const n = 50000
	mu := mustMu(t, 1, 1e-5)
	fwd := gaussTrials(31, n, mu)
	rev := NewTrials(n)
	for b := 0; b < 2; b++ {
		for i, s := range fwd.Scores(b) {
			rev.AddTrial(uint64(2*i+b), b, -s)
		}
	}
	var grid, mirror []float64
	for i := -10; i <= 10; i++ {
		grid = append(grid, 0.123+0.25*float64(i))
		mirror = append(mirror, -0.123-0.25*float64(i))
	}
	o := Options{EpsilonClaimed: 1, Delta: 1e-5, Selection: SelectBonferroni}
	o.Thresholds = grid
	a := analyze(t, fwd, o)
	o.Thresholds = mirror
	b := analyze(t, rev, o)
	if a.GDP.Orientation != string(OrientGreater) || b.GDP.Orientation != string(OrientLess) {
		t.Errorf("orientations %s / %s, want greater / less", a.GDP.Orientation, b.GDP.Orientation)
	}
	if a.EpsilonLBGDP != b.EpsilonLBGDP || a.EpsilonLBCP != b.EpsilonLBCP || a.GDP.Threshold != -b.GDP.Threshold {
		t.Errorf("negated scores on the mirrored grid: gdp %.6f vs %.6f, cp %.6f vs %.6f", a.EpsilonLBGDP, b.EpsilonLBGDP, a.EpsilonLBCP, b.EpsilonLBCP)
	}
	split := Options{EpsilonClaimed: 1, Delta: 1e-5}
	for _, tr := range []*Trials{fwd, rev} {
		if r := analyze(t, tr, split); r.EpsilonLBGDP < 0.7 || r.EpsilonLBGDP > 1 {
			t.Errorf("split: lb_gdp %.4f not in [0.7, 1]", r.EpsilonLBGDP)
		}
	}
	split.Orientation = OrientGreater
	if w := analyze(t, rev, split); w.EpsilonLBGDP != 0 || w.EpsilonLBCP != 0 {
		t.Errorf("wrong orientation only: lb_gdp %.4f lb_cp %.4f, want 0", w.EpsilonLBGDP, w.EpsilonLBCP)
	}
}

// The analysis depends only on the multiset of (trial, bit, score): per-worker buffers merged
// concurrently in any order give a bit-identical result.
func TestMergeDeterministic(t *testing.T) {
	const n, workers = 20000, 4
	mu := 0.8
	seq := NewTrials(0)
	par := NewTrials(0)
	score := func(trial uint64) (int, float64) {
		r := rng.New(9, rng.Label("challenger"), trial)
		bit := int(r.Uint64() & 1)
		return bit, float64(bit)*mu + r.NormFloat64()
	}
	for i := uint64(0); i < 2*n; i++ {
		b, s := score(i)
		seq.AddTrial(i, b, s)
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := NewTrials(0)
			for i := uint64(w); i < 2*n; i += workers {
				b, s := score(i)
				buf.AddTrial(i, b, s)
				if buf.score[0] != nil && len(buf.score[0])+len(buf.score[1]) >= 997 { // flush in chunks
					par.Merge(buf)
					buf.Reset()
				}
			}
			par.Merge(buf)
		}(w)
	}
	wg.Wait()
	o := Options{EpsilonClaimed: 1, Delta: 1e-5, CurvePoints: 50}
	a, b := analyze(t, seq, o), analyze(t, par, o)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("parallel merge changed the result:\n%+v\n%+v", a, b)
	}
	n0, n1, _ := par.Count()
	if n0+n1 != 2*n || n0 < n/2 {
		t.Errorf("counts %d + %d", n0, n1)
	}
}

func TestBonferroniFixedThresholds(t *testing.T) {
	mu := mustMu(t, 1, 1e-5)
	taus := []float64{-1, -0.5, 0, 0.13, 0.5, 1, 1.5, 2, 2.5, 3}
	r := analyze(t, gaussTrials(41, 100000, mu), Options{EpsilonClaimed: 1, Delta: 1e-5, Selection: SelectBonferroni, Thresholds: taus})
	if r.Statements != 2*len(taus)*2 || math.Abs(r.RateLevel-(1-0.05/40)) > 1e-15 {
		t.Errorf("statements %d rate level %v", r.Statements, r.RateLevel)
	}
	if r.SelectTrials != (Sides{}) || r.BoundTrials != r.Trials {
		t.Errorf("fixed grid must bound on all trials: %+v / %+v", r.BoundTrials, r.Trials)
	}
	found := false
	for _, tau := range taus {
		found = found || tau == r.GDP.Threshold
	}
	if !found || r.EpsilonLBGDP > 1 || r.EpsilonLBGDP < 0.8 {
		t.Errorf("tau %v lb_gdp %v", r.GDP.Threshold, r.EpsilonLBGDP)
	}
}

// The reported bound recomputes from its own counts (nothing hidden), and the JSON carries the keys the
// CLI promises with finite numbers.
func TestResultConsistency(t *testing.T) {
	r := analyze(t, gaussTrials(51, 30000, 0.5), Options{EpsilonClaimed: 1, Delta: 1e-5, CurvePoints: 100})
	alpha := 1 - r.RateLevel
	for _, b := range []*Bound{&r.CP, r.GDP} {
		k0 := int(math.Round(b.FPR * float64(r.BoundTrials.X)))
		k1 := int(math.Round(b.FNR * float64(r.BoundTrials.XPrime)))
		if u := ClopperPearsonUpper(k0, r.BoundTrials.X, alpha); u != b.FPRUpper {
			t.Errorf("fpr_upper %v, recomputed %v", b.FPRUpper, u)
		}
		if u := ClopperPearsonUpper(k1, r.BoundTrials.XPrime, alpha); u != b.FNRUpper {
			t.Errorf("fnr_upper %v, recomputed %v", b.FNRUpper, u)
		}
	}
	want := math.Max(math.Log((1-r.Delta-r.CP.FNRUpper)/r.CP.FPRUpper), math.Log((1-r.Delta-r.CP.FPRUpper)/r.CP.FNRUpper))
	if math.Abs(r.EpsilonLBCP-math.Max(0, want)) > 1e-12 {
		t.Errorf("lb_cp %v, recomputed %v", r.EpsilonLBCP, want)
	}
	mu := privacy.PhiInv(1-r.GDP.FPRUpper) - privacy.PhiInv(r.GDP.FNRUpper)
	if math.Abs(r.MuGDP-mu) > 1e-9 {
		t.Errorf("mu_gdp %v, recomputed %v", r.MuGDP, mu)
	}
	if eps, _ := privacy.EpsilonForGDP(r.MuGDP, r.Delta); eps != r.EpsilonLBGDP {
		t.Errorf("lb_gdp %v, recomputed %v", r.EpsilonLBGDP, eps)
	}
	// Half the level for the f-DP statistic's one joint region, the other half for 2 rates of each
	// of the two tests; together the joint level.
	if math.Abs(r.RateLevel-(1-0.05/2/4)) > 1e-15 || r.Statements != 4 || math.Abs(r.FDPConfidence-(1-0.05/2)) > 1e-15 {
		t.Errorf("split with two bounds and the f-DP region: rate level %v statements %d, f-DP level %v", r.RateLevel, r.Statements, r.FDPConfidence)
	}
	if math.Abs(r.Confidence-0.95) > 1e-15 {
		t.Errorf("joint level %v, want 0.95", r.Confidence)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"epsilon_claimed", "delta", "epsilon_lb_cp", "epsilon_lb_gdp", "mu_gdp", "epsilon_lb_fdp", "mu_fdp", "fdp", "trials", "confidence", "verdict", "threshold", "fpr_upper", "fnr_upper", "notes", "tradeoff"} {
		if !strings.Contains(string(js), `"`+k+`"`) {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	good := gaussTrials(1, 100, 1)
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"negative eps", Options{EpsilonClaimed: -1, Delta: 1e-5}},
		{"delta 1", Options{EpsilonClaimed: 1, Delta: 1}},
		{"gaussian pure", Options{EpsilonClaimed: 1, Mechanism: privacy.Gaussian}},
		{"mechanism", Options{EpsilonClaimed: 1, Delta: 0.1, Mechanism: "cauchy"}},
		{"confidence", Options{EpsilonClaimed: 1, Delta: 0.1, Confidence: 1}},
		{"selection", Options{EpsilonClaimed: 1, Delta: 0.1, Selection: "best"}},
		{"orientation", Options{EpsilonClaimed: 1, Delta: 0.1, Orientation: "up"}},
		{"grid", Options{EpsilonClaimed: 1, Delta: 0.1, GridSize: 3}},
		{"pilot", Options{EpsilonClaimed: 1, Delta: 0.1, PilotFraction: 1.5}},
		{"split fraction", Options{EpsilonClaimed: 1, Delta: 0.1, SplitFraction: -0.5}},
		{"thresholds with split", Options{EpsilonClaimed: 1, Delta: 0.1, Thresholds: []float64{0}}},
		{"nan threshold", Options{EpsilonClaimed: 1, Delta: 0.1, Selection: SelectBonferroni, Thresholds: []float64{math.NaN()}}},
	} {
		if _, err := good.Analyze(c.o); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	bad := gaussTrials(1, 100, 1)
	bad.Add(2, 0)
	bad.Add(0, math.NaN())
	if _, err := bad.Analyze(Options{EpsilonClaimed: 1, Delta: 0.1}); err == nil || !strings.Contains(err.Error(), "2 trials rejected") {
		t.Errorf("rejected trials: err = %v", err)
	}
	one := NewTrials(0)
	one.Add(0, 1)
	if _, err := one.Analyze(Options{EpsilonClaimed: 1, Delta: 0.1}); err == nil {
		t.Error("one side only: accepted")
	}
	if s, err := ParseSelection("bonferroni"); err != nil || s != SelectBonferroni {
		t.Errorf("ParseSelection: %v %v", s, err)
	}
	if _, err := ParseSelection("x"); err == nil {
		t.Error("ParseSelection accepted x")
	}
}

// Degenerate inputs still give a finite, JSON-ready, zero-evidence report: a handful of trials, and
// constant scores (every score tied).
func TestDegenerateInputs(t *testing.T) {
	small := gaussTrials(3, 6, 1)
	tied := NewTrials(0)
	for i := 0; i < 1000; i++ {
		tied.Add(i&1, 0.25)
	}
	for name, tr := range map[string]*Trials{"small": small, "tied": tied} {
		for _, sel := range []Selection{SelectSplit, SelectBonferroni} {
			r, err := tr.Analyze(Options{EpsilonClaimed: 1, Delta: 1e-5, Selection: sel, CurvePoints: 20, PilotFraction: 0.4})
			if err != nil {
				t.Fatalf("%s %s: %v", name, sel, err)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s %s: JSON: %v", name, sel, err)
			}
			if name == "tied" && (r.EpsilonLBCP != 0 || r.EpsilonLBGDP != 0 || r.Verdict != Consistent) {
				t.Errorf("tied scores: lb_cp %v lb_gdp %v %s", r.EpsilonLBCP, r.EpsilonLBGDP, r.Verdict)
			}
		}
	}
}
