package audit

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// Selection names how the thresholds of the tests are chosen without invalidating the confidence level.
type Selection string

const (
	// SelectSplit (default): trials are split in two halves by a hash of their trial number; the best test
	// for each bound (threshold and orientation) is chosen on the selection half and bounded on the other.
	// Only the 2 rates of each chosen test enter the union bound, so the confidence costs almost nothing;
	// the price is half the trials.
	SelectSplit Selection = "split"
	// SelectBonferroni: a grid of G thresholds is fixed in advance (Options.Thresholds, or placed on a pilot
	// share of the trials, Options.PilotFraction, which is then left out) and every grid test is bounded
	// on the remaining trials, each rate at level alpha/(2*G*orientations) so that all hold jointly.
	SelectBonferroni Selection = "bonferroni"
)

// Selections lists the accepted selection names, default first.
var Selections = []Selection{SelectSplit, SelectBonferroni}

// ParseSelection accepts "split" or "bonferroni".
func ParseSelection(s string) (Selection, error) {
	for _, v := range Selections {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("audit: unknown threshold selection %q (want split or bonferroni)", s)
}

// Orientation says which side of the threshold the test attributes to x' (bit 1).
type Orientation string

const (
	// OrientBoth tries both orientations (the default: the score may point either way).
	OrientBoth Orientation = "both"
	// OrientGreater guesses x' when score > threshold (scores from this package point that way).
	OrientGreater Orientation = "greater"
	// OrientLess guesses x' when score <= threshold.
	OrientLess Orientation = "less"
)

// Verdict values.
const (
	Consistent = "consistent"
	Violation  = "violation"
)

// Options configure Analyze. The zero value of every field except EpsilonClaimed/Delta has a default.
type Options struct {
	// EpsilonClaimed and Delta are the guarantee under audit. Delta = 0 means pure eps-DP.
	EpsilonClaimed float64
	Delta          float64
	// Mechanism selects the bounds: privacy.Gaussian adds the Gaussian-DP fit to the Clopper-Pearson bound
	// (needs Delta > 0); privacy.Laplace uses the Clopper-Pearson bound only. Default: Gaussian when
	// Delta > 0, Laplace when Delta = 0.
	Mechanism privacy.Mechanism
	// Confidence is the joint level of all bounds of the report (default 0.95).
	Confidence float64
	// Selection of thresholds (default SelectSplit).
	Selection Selection
	// Orientation of the tests (default OrientBoth).
	Orientation Orientation
	// GridSize is the number of candidate thresholds (quantiles of both samples, geometric towards the
	// tails), before refinement. Default 200, minimum 8.
	GridSize int
	// SplitFraction is the share of trials (by trial-number hash) that chooses the tests with
	// SelectSplit (default 0.5: choose on one half, bound on the other).
	SplitFraction float64
	// PilotFraction is the share of trials (by trial-number hash) that places the Bonferroni grid and is
	// left out of the bounds (default 0.1). Ignored with SelectSplit or when Thresholds is set.
	PilotFraction float64
	// Thresholds, with SelectBonferroni, is a fixed grid chosen before seeing the data (no pilot).
	Thresholds []float64
	// CurvePoints is the number of empirical trade-off points stored in Result.Curve (0: none).
	CurvePoints int
	// FDPTests is the number of tests the f-DP statistic bounds jointly (Gaussian mechanisms;
	// 0: DefaultFDPTests; < 0: no f-DP statistic; fdp.go).
	FDPTests int
}

// Sides counts trials per value of the secret bit.
type Sides struct {
	X      int `json:"x"`       // bit 0: the system ran on x
	XPrime int `json:"x_prime"` // bit 1: the system ran on the adjacent x'
}

// Bound is one bounded test "guess x' when score > Threshold" (Orientation greater) or "when score <=
// Threshold" (less), evaluated on the bounding trials.
type Bound struct {
	Threshold   float64 `json:"threshold"`
	Orientation string  `json:"orientation"`
	FPR         float64 `json:"fpr"`       // point estimate of P(guess x' | x)
	FNR         float64 `json:"fnr"`       // point estimate of P(guess x | x')
	FPRUpper    float64 `json:"fpr_upper"` // Clopper-Pearson upper bound at Result.RateLevel
	FNRUpper    float64 `json:"fnr_upper"`
	// EpsXPrimeX = ln((1-delta-FNR_up)/FPR_up) (the DP inequality with P(x' in E) on the left),
	// EpsXXPrime = ln((1-delta-FPR_up)/FNR_up) (P(x in E^c) on the left); each clamped at 0.
	EpsXPrimeX float64 `json:"eps_xprime_x"`
	EpsXXPrime float64 `json:"eps_x_xprime"`
	// Mu = PhiInv(1-FPR_up) - PhiInv(FNR_up), clamped at 0.
	Mu float64 `json:"mu"`
}

// Result is the audit report (JSON-ready: every float is finite).
type Result struct {
	EpsilonClaimed float64 `json:"epsilon_claimed"`
	Delta          float64 `json:"delta"`
	Mechanism      string  `json:"mechanism"`
	// EpsilonLBCP: Clopper-Pearson lower bound on eps, sound for any mechanism.
	EpsilonLBCP float64 `json:"epsilon_lb_cp"`
	// EpsilonLBGDP: eps with Kappa(eps, MuGDP) = Delta; a lower bound if the mechanism's trade-off curve is
	// Gaussian (mu-GDP). 0 for Laplace.
	EpsilonLBGDP float64 `json:"epsilon_lb_gdp"`
	MuGDP        float64 `json:"mu_gdp"`
	// EpsilonLBFDP: the f-DP statistic (fdp.go): eps with Kappa(eps, MuFDP) = Delta, where MuFDP is
	// the largest mu-GDP curve the joint confidence regions of the chosen tests contradict; a lower
	// bound if the mechanism is mu-GDP, like EpsilonLBGDP. 0 for Laplace.
	EpsilonLBFDP float64 `json:"epsilon_lb_fdp"`
	MuFDP        float64 `json:"mu_fdp"`
	// MuClaimed is the GDP parameter the claim allows for a Gaussian mechanism: KappaInverse(eps, delta).
	MuClaimed    float64    `json:"mu_claimed,omitempty"`
	Trials       Sides      `json:"trials"`        // all accepted trials
	BoundTrials  Sides      `json:"bound_trials"`  // trials the bounds are computed on
	SelectTrials Sides      `json:"select_trials"` // trials used to choose the thresholds
	Confidence   float64    `json:"confidence"`    // joint level of all of this result's bounds
	RateLevel    float64    `json:"rate_level"`    // one-sided level of each Clopper-Pearson bound
	Statements   int        `json:"statements"`    // rate bounds in the union (Bonferroni) bound
	Selection    string     `json:"selection"`     // split | bonferroni
	Orientation  string     `json:"orientation"`   // allowed orientations
	Candidates   int        `json:"candidates"`    // thresholds evaluated during selection
	CP           Bound      `json:"cp"`            // the test giving EpsilonLBCP
	GDP          *Bound     `json:"gdp,omitempty"` // the test giving MuGDP (Gaussian only)
	FDP          []FDPBound `json:"fdp,omitempty"` // the tests of the f-DP statistic (Gaussian only)
	// FDPConfidence is the level at which the f-DP statistic's regions hold together (its share of
	// the joint level, fdpLevelShare); 0 when this result has no f-DP statistic.
	FDPConfidence float64      `json:"fdp_confidence,omitempty"`
	Verdict       string       `json:"verdict"` // consistent | violation
	Notes         []string     `json:"notes"`
	Curve         []CurvePoint `json:"tradeoff,omitempty"`
}

// CurvePoint is one empirical (FPR, FNR) pair over all trials.
type CurvePoint struct {
	Threshold float64 `json:"threshold"`
	FPR       float64 `json:"fpr"`
	FNR       float64 `json:"fnr"`
}

func (o Options) normalise() (Options, error) {
	if math.IsNaN(o.EpsilonClaimed) || o.EpsilonClaimed < 0 || math.IsInf(o.EpsilonClaimed, 0) {
		return o, fmt.Errorf("audit: claimed epsilon %v must be finite and >= 0", o.EpsilonClaimed)
	}
	if math.IsNaN(o.Delta) || o.Delta < 0 || o.Delta >= 1 {
		return o, fmt.Errorf("audit: delta %v must lie in [0, 1)", o.Delta)
	}
	if o.Mechanism == "" {
		o.Mechanism = privacy.Laplace
		if o.Delta > 0 {
			o.Mechanism = privacy.Gaussian
		}
	}
	switch o.Mechanism {
	case privacy.Gaussian:
		if o.Delta == 0 {
			return o, fmt.Errorf("audit: a Gaussian mechanism is never (eps, 0)-DP: give delta > 0")
		}
	case privacy.Laplace:
	default:
		return o, fmt.Errorf("audit: unknown mechanism %q", o.Mechanism)
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return o, fmt.Errorf("audit: confidence %v must lie in (0, 1)", o.Confidence)
	}
	if o.Selection == "" {
		o.Selection = SelectSplit
	}
	if o.Selection != SelectSplit && o.Selection != SelectBonferroni {
		return o, fmt.Errorf("audit: unknown selection %q", o.Selection)
	}
	if o.Orientation == "" {
		o.Orientation = OrientBoth
	}
	switch o.Orientation {
	case OrientBoth, OrientGreater, OrientLess:
	default:
		return o, fmt.Errorf("audit: unknown orientation %q", o.Orientation)
	}
	if o.GridSize == 0 {
		o.GridSize = 200
	}
	if o.GridSize < 8 {
		return o, fmt.Errorf("audit: grid size %d < 8", o.GridSize)
	}
	if o.SplitFraction == 0 {
		o.SplitFraction = 0.5
	}
	if !(o.SplitFraction > 0 && o.SplitFraction < 1) {
		return o, fmt.Errorf("audit: split fraction %v must lie in (0, 1)", o.SplitFraction)
	}
	if o.PilotFraction == 0 {
		o.PilotFraction = 0.1
	}
	if !(o.PilotFraction > 0 && o.PilotFraction < 1) {
		return o, fmt.Errorf("audit: pilot fraction %v must lie in (0, 1)", o.PilotFraction)
	}
	for _, t := range o.Thresholds {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return o, fmt.Errorf("audit: threshold %v is not finite", t)
		}
	}
	if len(o.Thresholds) > 0 && o.Selection != SelectBonferroni {
		return o, fmt.Errorf("audit: fixed thresholds need selection %q", SelectBonferroni)
	}
	if o.CurvePoints < 0 {
		return o, fmt.Errorf("audit: curve points %d < 0", o.CurvePoints)
	}
	if o.FDPTests == 0 {
		o.FDPTests = DefaultFDPTests
	}
	return o, nil
}

// sample holds sorted scores of both sides.
type sample struct {
	s [2][]float64
}

func (s *sample) n(b int) int { return len(s.s[b]) }

// countLE returns #{v in a : v <= tau} for sorted a.
func countLE(a []float64, tau float64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] <= tau {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// errors of the test "guess x' when score > tau" (greater) or "<= tau" (less): false positives among the
// x trials and false negatives among the x' trials.
func (s *sample) errorsAt(tau float64, o Orientation) (fp, fn int) {
	le0 := countLE(s.s[0], tau)
	le1 := countLE(s.s[1], tau)
	if o == OrientLess {
		return le0, len(s.s[1]) - le1
	}
	return len(s.s[0]) - le0, le1
}

// testEval is one test's bounds.
type testEval struct {
	fpU, fnU    float64
	epsXp, epsX float64 // -Inf when the numerator is <= 0
	mu          float64
}

func (e testEval) cp() float64 { return math.Max(0, math.Max(e.epsXp, e.epsX)) }

// evalTest bounds one test with fp false positives of n0 and fn false negatives of n1, each rate by a
// one-sided Clopper-Pearson bound at level alpha (docs/math.md section 6):
//
//	eps >= ln((1 - delta - FNR_up)/FPR_up),  eps >= ln((1 - delta - FPR_up)/FNR_up),
//	mu  >= PhiInv(1 - FPR_up) - PhiInv(FNR_up)  (= -PhiInv(FPR_up) - PhiInv(FNR_up), no cancellation).
func evalTest(fp, n0, fn, n1 int, alpha, delta float64) testEval {
	var e testEval
	e.fpU = ClopperPearsonUpper(fp, n0, alpha)
	e.fnU = ClopperPearsonUpper(fn, n1, alpha)
	e.epsXp, e.epsX = math.Inf(-1), math.Inf(-1)
	if num := 1 - delta - e.fnU; num > 0 {
		e.epsXp = math.Log(num / e.fpU)
	}
	if num := 1 - delta - e.fpU; num > 0 {
		e.epsX = math.Log(num / e.fnU)
	}
	e.mu = -privacy.PhiInv(e.fpU) - privacy.PhiInv(e.fnU)
	if math.IsNaN(e.mu) {
		e.mu = math.Inf(-1)
	}
	return e
}

// selectionPenalty divides the rate level used while CHOOSING tests (never while bounding them): the
// choice maximises over hundreds of noisy candidates, and a stricter level there favours thresholds with
// more counts, whose bound survives on fresh trials (it counters the winner's curse; over 20 seeds at
// 10^5 trials per side it raised the worst Gaussian Clopper-Pearson bound from 0.21 to 0.41 of eps and
// left the mean Gaussian-DP bound unchanged).
const selectionPenalty = 0.01

// criterion picks what a selection maximises.
type criterion int

const (
	critCP criterion = iota
	critGDP
	critFDP // the f-DP statistic's criterion, fdpSelectValue (no Clopper-Pearson bound)
)

func (c criterion) value(e testEval) float64 {
	if c == critGDP {
		return e.mu
	}
	return e.cp()
}

// test is a (threshold, orientation) pair.
type test struct {
	tau float64
	o   Orientation
}

// orientations lists the orientations allowed by o.
func orientations(o Orientation) []Orientation {
	if o == OrientBoth {
		return []Orientation{OrientGreater, OrientLess}
	}
	return []Orientation{o}
}

// searcher evaluates tests on one sample at a fixed rate level.
type searcher struct {
	s      *sample
	alpha  float64
	delta  float64
	orient []Orientation
	evals  int
}

// best returns the best orientation at tau for criterion c and its value.
func (q *searcher) best(tau float64, c criterion) (test, float64) {
	q.evals++
	bt, bv := test{tau, q.orient[0]}, math.Inf(-1)
	for _, o := range q.orient {
		fp, fn := q.s.errorsAt(tau, o)
		var v float64
		if c == critFDP {
			v = fdpSelectValue(fp, q.s.n(0), fn, q.s.n(1))
		} else {
			v = c.value(evalTest(fp, q.s.n(0), fn, q.s.n(1), q.alpha, q.delta))
		}
		if v > bv {
			bt, bv = test{tau, o}, v
		}
	}
	return bt, bv
}

// grid returns the sorted distinct candidate thresholds: quantiles of both sides at levels spaced
// geometrically from 1/n to 1/2 towards each tail (GridSize/4 per tail and side), so that the extreme
// tails where the tightest Clopper-Pearson tests live are resolved as well as the centre.
func grid(s *sample, size int) []float64 {
	per := size / 4
	c := make([]float64, 0, size)
	for b := 0; b < 2; b++ {
		a := s.s[b]
		n := len(a)
		if n == 0 {
			continue
		}
		pmin := 1 / float64(n)
		for i := 0; i < per; i++ {
			// p from pmin to 1/2 geometrically.
			p := pmin * math.Pow(0.5/pmin, float64(i)/float64(per-1))
			k := int(math.Floor(p * float64(n)))
			if k > n-1 {
				k = n - 1
			}
			c = append(c, a[k], a[n-1-k])
		}
	}
	slices.Sort(c)
	return slices.Compact(c)
}

// refine maximises criterion c over thresholds at the pooled order statistics z, starting from the best
// grid candidate: it scans 32 evenly spaced order statistics between the best candidate's neighbours and
// narrows the bracket around the best until consecutive order statistics are reached.
func (q *searcher) refine(z, cands []float64, c criterion) (test, float64) {
	var bt test
	bv, bi := math.Inf(-1), 0
	for i, tau := range cands {
		if t, v := q.best(tau, c); v > bv {
			bt, bv, bi = t, v, i
		}
	}
	if len(z) == 0 {
		return bt, bv
	}
	lo, hi := 0, len(z)-1
	if bi > 0 {
		lo = sort.SearchFloat64s(z, cands[bi-1])
	}
	if bi+1 < len(cands) {
		hi = min(len(z)-1, sort.SearchFloat64s(z, cands[bi+1]))
	}
	const fan = 32
	for {
		step := (hi - lo + fan - 1) / fan
		if step < 1 {
			step = 1
		}
		bj := -1
		prev := math.NaN()
		for j := lo; j <= hi; j += step {
			if z[j] == prev {
				continue
			}
			prev = z[j]
			if t, v := q.best(z[j], c); v > bv {
				bt, bv, bj = t, v, j
			}
		}
		if step == 1 {
			break
		}
		if bj < 0 {
			bj = sort.SearchFloat64s(z, bt.tau)
		}
		lo, hi = max(0, bj-step), min(len(z)-1, bj+step)
	}
	return bt, bv
}

// merge returns the sorted union of sorted a and b.
func merge(a, b []float64) []float64 {
	z := make([]float64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			z = append(z, a[i])
			i++
		} else {
			z = append(z, b[j])
			j++
		}
	}
	z = append(z, a[i:]...)
	return append(z, b[j:]...)
}

// fdpLevelShare is the share of the joint level 1 - Confidence that the f-DP statistic takes when
// it is computed (a Gaussian mechanism with selection trials): its regions hold together at level
// fdpLevelShare (1 - Confidence), and the single-threshold bounds of every score share the rest.
// Half, because for a Gaussian mechanism the f-DP statistic is the tightest of the three bounds
// (docs/math.md section 6.1): its margin shrinks with z of its own level, while the single-threshold
// bounds, which already split their share over 2 rates x 2 bounds x the scores, lose little more.
const fdpLevelShare = 0.5

// Analyze plays the statistics of the game on the recorded trials: it chooses tests, bounds their error
// rates with Clopper-Pearson intervals, derives the lower bounds on eps and the verdict (see doc.go for
// the procedure). Cost O(n log n) for the sorts plus O(G log n) Clopper-Pearson evaluations.
func (t *Trials) Analyze(opts Options) (*Result, error) {
	o, err := opts.normalise()
	if err != nil {
		return nil, err
	}
	sp, err := t.split(o)
	if err != nil {
		return nil, err
	}
	an, err := analyzeSplits(o, []*split{sp})
	if err != nil {
		return nil, err
	}
	return an.results[0], nil
}

// split is one score's trials, sorted, in the part that chooses the tests (sel: the split's
// selection half or the Bonferroni pilot) and the part that bounds them (bnd).
type split struct {
	sel, bnd sample
	useSel   bool // sel chooses the tests (false: fixed thresholds, every trial bounds)
	total    Sides
	pooled   map[*sample][]float64 // both sides of a part merged, once (pool)
}

// pool returns the sorted scores of both sides of part (sp.sel or sp.bnd) merged, the order
// statistics a selection refines over; computed once per part.
func (sp *split) pool(part *sample) []float64 {
	if z, ok := sp.pooled[part]; ok {
		return z
	}
	if sp.pooled == nil {
		sp.pooled = map[*sample][]float64{}
	}
	z := merge(part.s[0], part.s[1])
	sp.pooled[part] = z
	return z
}

// split snapshots the trials into the selection and bounding parts by split tag and sorts them.
func (t *Trials) split(o Options) (*split, error) {
	t.mu.Lock()
	if t.bad > 0 {
		bad := t.bad
		t.mu.Unlock()
		return nil, fmt.Errorf("audit: %d trials rejected (bit not 0/1 or non-finite score)", bad)
	}
	sp := &split{}
	sel, bnd := &sp.sel, &sp.bnd
	// Trials whose tag is below cut choose the tests (split half or Bonferroni pilot).
	frac := o.SplitFraction
	if o.Selection == SelectBonferroni {
		frac = o.PilotFraction
	}
	cut := uint8(math.Min(255, math.Max(1, math.Round(frac*256))))
	sp.useSel = o.Selection == SelectSplit || len(o.Thresholds) == 0
	for b := 0; b < 2; b++ {
		sc, tg := t.score[b], t.tag[b]
		if !sp.useSel {
			bnd.s[b] = append([]float64(nil), sc...)
			continue
		}
		ns := 0
		for _, g := range tg {
			if g < cut {
				ns++
			}
		}
		sel.s[b] = make([]float64, 0, ns)
		bnd.s[b] = make([]float64, 0, len(sc)-ns)
		for i, g := range tg {
			if g < cut {
				sel.s[b] = append(sel.s[b], sc[i])
			} else {
				bnd.s[b] = append(bnd.s[b], sc[i])
			}
		}
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range [][]float64{sel.s[0], sel.s[1], bnd.s[0], bnd.s[1]} {
		wg.Add(1)
		go func(a []float64) { defer wg.Done(); slices.Sort(a) }(a)
	}
	wg.Wait()
	total := Sides{sel.n(0) + bnd.n(0), sel.n(1) + bnd.n(1)}
	sp.total = total
	if total.X == 0 || total.XPrime == 0 {
		return nil, fmt.Errorf("audit: need trials with both values of the secret bit (have %d with x, %d with x')", total.X, total.XPrime)
	}
	if bnd.n(0) == 0 || bnd.n(1) == 0 || (sp.useSel && (sel.n(0) == 0 || sel.n(1) == 0)) {
		return nil, fmt.Errorf("audit: too few trials to split (%d with x, %d with x')", total.X, total.XPrime)
	}
	return sp, nil
}

// analysis is the analysis of one or several scores of the same trials, all of its bounds holding
// jointly at Options.Confidence.
type analysis struct {
	results  []*Result
	fdpScore int // index of the score the f-DP statistic was computed for; -1: none
}

// analyzeSplits analyses the scores' splits at the joint level o.Confidence: the single-threshold
// bounds of each score at (1 - fdpLevelShare)/len(sps) of the level when the f-DP statistic is
// computed (all of it when not), the f-DP statistic, for the one score chosen on the selection
// trials, at fdpLevelShare of it (Bonferroni).
func analyzeSplits(o Options, sps []*split) (analysis, error) {
	alpha := 1 - o.Confidence
	an := analysis{fdpScore: -1}
	fdp := o.Mechanism == privacy.Gaussian && o.FDPTests > 0 && sps[0].useSel
	alphaST := alpha
	if fdp {
		alphaST = alpha * (1 - fdpLevelShare)
	}
	for _, sp := range sps {
		res, err := sp.singleThreshold(o, alphaST/float64(len(sps)))
		if err != nil {
			return an, err
		}
		an.results = append(an.results, res)
	}
	if fdp {
		if err := an.addFDP(sps, o, alpha*fdpLevelShare); err != nil {
			return an, err
		}
	}
	for i, r := range an.results {
		// violation when a bound exceeds the claim (boundChecks: the rule the reports' words use)
		r.Verdict = verdictOf(r.Checks())
		r.Notes = notes(o, r, len(sps))
		if o.CurvePoints > 0 {
			r.Curve = sps[i].curve(r, o.CurvePoints)
		}
	}
	return an, nil
}

// addFDP computes the f-DP statistic at level alpha (fdpAcross) and files each fold's tests with
// the result of the score they belong to; fdpScore is the score of the largest bound.
func (an *analysis) addFDP(sps []*split, o Options, alpha float64) error {
	parts, evals, err := fdpAcross(sps, o, alpha)
	if err != nil {
		return fmt.Errorf("audit: f-DP bound: %w", err)
	}
	for i, e := range evals {
		an.results[i].Candidates += e
	}
	best := math.Inf(-1)
	for _, pt := range parts {
		r := an.results[pt.score]
		if r.FDP == nil {
			r.FDPConfidence = 1 - alpha
			r.Confidence -= alpha
		}
		r.FDP = append(r.FDP, pt.tests...)
		r.MuFDP = math.Max(r.MuFDP, pt.mu)
		if pt.mu > best {
			best, an.fdpScore = pt.mu, pt.score
		}
	}
	for _, r := range an.results {
		if r.FDP == nil {
			continue
		}
		eps, err := privacy.EpsilonForGDP(r.MuFDP, o.Delta)
		if err != nil {
			return fmt.Errorf("audit: f-DP bound: %w", err)
		}
		r.EpsilonLBFDP = eps
	}
	return nil
}

// curve is the empirical trade-off curve over all trials of the split, in the orientation of the
// result's Gaussian-DP test (else its CP test).
func (sp *split) curve(res *Result, points int) []CurvePoint {
	full := sample{s: [2][]float64{merge(sp.sel.s[0], sp.bnd.s[0]), merge(sp.sel.s[1], sp.bnd.s[1])}}
	or := OrientGreater
	if res.GDP != nil {
		or = Orientation(res.GDP.Orientation)
	} else if res.CP.Orientation != "" {
		or = Orientation(res.CP.Orientation)
	}
	return empiricalCurve(&full, points, or)
}

// singleThreshold chooses the tests of the single-threshold bounds (the SingleThreshold rows of
// Bounds: CP; GDP for a Gaussian mechanism) and bounds them, all rate statements holding jointly at level 1 - alpha.
func (sp *split) singleThreshold(o Options, alpha float64) (*Result, error) {
	sel, bnd := &sp.sel, &sp.bnd
	gauss := o.Mechanism == privacy.Gaussian
	var rows []LowerBound // the single-threshold rows of Bounds this mechanism's audit computes
	var crits []criterion
	for _, b := range Bounds {
		if b.SingleThreshold && b.ValidFor(string(o.Mechanism)) {
			rows, crits = append(rows, b), append(crits, b.crit)
		}
	}
	orient := orientations(o.Orientation)
	res := &Result{
		EpsilonClaimed: o.EpsilonClaimed,
		Delta:          o.Delta,
		Mechanism:      string(o.Mechanism),
		Trials:         sp.total,
		BoundTrials:    Sides{bnd.n(0), bnd.n(1)},
		SelectTrials:   Sides{sel.n(0), sel.n(1)},
		Confidence:     1 - alpha,
		Selection:      string(o.Selection),
		Orientation:    string(o.Orientation),
	}
	if gauss {
		if mu, err := privacy.KappaInverse(o.EpsilonClaimed, o.Delta); err == nil {
			res.MuClaimed = mu
		}
	}
	tests := sp.chooseTests(o, crits, orient, alpha, res)
	res.RateLevel = 1 - alpha/float64(res.Statements)
	rateAlpha := alpha / float64(res.Statements)

	// Bound every chosen test on the bounding trials; all its statements hold jointly at 1 - alpha.
	best, chosen := make([]float64, len(rows)), make([]*Bound, len(rows))
	for i := range best {
		best[i] = math.Inf(-1)
	}
	for _, tt := range tests {
		fp, fn := bnd.errorsAt(tt.tau, tt.o)
		e := evalTest(fp, bnd.n(0), fn, bnd.n(1), rateAlpha, o.Delta)
		bd := Bound{
			Threshold:   tt.tau,
			Orientation: string(tt.o),
			FPR:         float64(fp) / float64(bnd.n(0)),
			FNR:         float64(fn) / float64(bnd.n(1)),
			FPRUpper:    e.fpU,
			FNRUpper:    e.fnU,
			EpsXPrimeX:  math.Max(0, e.epsXp),
			EpsXXPrime:  math.Max(0, e.epsX),
			Mu:          math.Max(0, e.mu),
		}
		for i, b := range rows {
			if v := b.crit.value(e); v > best[i] {
				best[i], chosen[i] = v, &bd
			}
		}
	}
	for i, b := range rows {
		if err := b.set(res, best[i], chosen[i], o.Delta); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// chooseTests chooses the tests of the single-threshold bounds on the selection trials (split: one
// per bound; Bonferroni: every threshold of the grid in every orientation) and sets res.Statements
// (the rate bounds of the union bound at level alpha) and res.Candidates.
func (sp *split) chooseTests(o Options, crits []criterion, orient []Orientation, alpha float64, res *Result) []test {
	sel := &sp.sel
	var tests []test
	if o.Selection == SelectSplit {
		// 2 rates per chosen test (one test per bound), union bound over them.
		res.Statements = 2 * len(crits)
		z := sp.pool(sel)
		q := &searcher{s: sel, alpha: alpha / float64(res.Statements) * selectionPenalty, delta: o.Delta, orient: orient}
		cands := grid(sel, o.GridSize)
		for _, c := range crits {
			tt, _ := q.refine(z, cands, c)
			tests = append(tests, tt)
		}
		res.Candidates = q.evals
		return tests
	}
	var taus []float64
	if len(o.Thresholds) > 0 {
		taus = append(taus, o.Thresholds...)
		slices.Sort(taus)
		taus = slices.Compact(taus)
	} else {
		taus = grid(sel, o.GridSize)
		// The pilot also proposes one refined threshold per bound; the grid size is fixed first.
		g := len(taus) + len(crits)
		q := &searcher{s: sel, alpha: selectionPenalty * alpha / float64(2*g*len(orient)), delta: o.Delta, orient: orient}
		z := sp.pool(sel)
		extra := make([]float64, 0, len(crits))
		for _, c := range crits {
			tt, _ := q.refine(z, taus, c)
			extra = append(extra, tt.tau)
		}
		res.Candidates = q.evals
		taus = append(taus, extra...) // duplicates allowed: they only make the level conservative
	}
	res.Statements = 2 * len(taus) * len(orient)
	for _, tau := range taus {
		for _, or := range orient {
			tests = append(tests, test{tau, or})
		}
	}
	if res.Candidates == 0 {
		res.Candidates = len(taus)
	}
	return tests
}

// notes are the result's explanations; scores is the number of scores analysed together.
func notes(o Options, r *Result, scores int) []string {
	var n []string
	switch o.Selection {
	case SelectSplit:
		n = append(n, fmt.Sprintf("thresholds chosen on a held-out split (%d+%d selection trials, by trial-number hash), bounded on the other %d+%d",
			r.SelectTrials.X, r.SelectTrials.XPrime, r.BoundTrials.X, r.BoundTrials.XPrime))
	default:
		if len(o.Thresholds) > 0 {
			n = append(n, fmt.Sprintf("fixed grid of %d thresholds, Bonferroni correction over %d rate bounds", len(o.Thresholds), r.Statements))
		} else {
			n = append(n, fmt.Sprintf("grid placed on a pilot of %d+%d trials (left out), Bonferroni correction over %d rate bounds",
				r.SelectTrials.X, r.SelectTrials.XPrime, r.Statements))
		}
	}
	st := r.singleThresholdLevel()
	n = append(n, fmt.Sprintf("FPR_up and FNR_up are one-sided Clopper-Pearson upper bounds on the error rates, at level %.6g each; all %d of them hold jointly with probability >= %.6g",
		r.RateLevel, r.Statements, st))
	for _, b := range Bounds {
		if w := b.note(r, st, scores); w != "" {
			n = append(n, w)
		}
	}
	if r.GDP == nil {
		n = append(n, "pure-eps (Laplace) audit: the Clopper-Pearson bound only (no Gaussian-DP bound is computed)")
	}
	n = append(n, fmt.Sprintf("violation when a lower bound on eps > the claimed eps = %g, else consistent; consistent means no evidence of a violation at this confidence with this adversary, it does not prove the claim",
		r.EpsilonClaimed))
	return n
}

// singleThresholdLevel is the joint level of the single-threshold bounds' rate statements.
func (r *Result) singleThresholdLevel() float64 {
	return 1 - float64(r.Statements)*(1-r.RateLevel)
}
