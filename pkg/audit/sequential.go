package audit

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// The sequential audit (dpsim audit --sequential; docs/math.md section 6.4) decides from as few
// trials as the evidence needs, with its error level held over every look.
//
// The trials come in pairs (trials 2k and 2k+1 have opposite secret bits: Bit). A test phi
// ("guess x' when score > tau", or <= tau) gives pair k the indicators A_k = 1[phi guesses x' on
// the bit-0 trial] (a false positive) and B_k = 1[phi guesses x on the bit-1 trial] (a false
// negative). If the mechanism satisfies a null hypothesis H whose trade-off region R_H (the pairs
// (FPR, FNR) its tests can have) is convex, then for every slope a >= 0
//
//	E[a A_k + B_k | pairs < k] >= h_H(a) = min over (p, q) in R_H of a p + q,
//
// because phi and a are fixed before pair k is played and pair k is independent of the pairs
// before it. So with a bet lambda_k in [0, 1/(a+1)) fixed before pair k,
//
//	K_n(H) = prod_{k < n} (1 + lambda_k (h_H(a_k) - a_k A_k - B_k))
//
// is a nonnegative supermartingale under H with K_0 = 1 (testing by betting: Shafer 2021;
// Waudby-Smith & Ramdas 2024), and Ville's inequality gives P(sup_n K_n(H) >= 1/alpha) <= alpha:
// H may be rejected at whatever pair the evidence reaches 1/alpha, looked at as often as one
// likes, with the stop chosen by the data. The tests, slopes and bets are chosen at each look
// from the pairs before it, to make K grow fastest (plug-in Kelly, halved).
//
// Two families of hypotheses share the bets:
//
//   - free: H(eps') = "(eps', delta)-DP on the pair" for every eps' >= 0, any mechanism. R is the
//     (eps', delta) trade-off region (Kairouz, Oh & Viswanath 2015), h(a) = (1-delta) min(1, a,
//     (1+a)/(1+e^eps')).
//   - gdp (Gaussian claims): H(mu') = "the trade-off curve is at least the mu'-GDP curve" (Dong,
//     Roth & Su 2022), h(a) = a Phi(-z) + Phi(z - mu') at z = (ln a + mu'^2/2)/mu'.
//
// h decreases in the parameter and the bets do not depend on it, so K_n(eps') decreases in eps':
// rejecting any eps' >= eps* (the true eps) means K_n(eps*) >= 1/alpha too. The largest rejected
// eps' is therefore a lower bound on eps* that holds at every look at once, with probability
// >= 1 - alpha (a confidence sequence: Howard, Ramdas, McAuliffe & Sekhon 2021). The two families
// share the level (3/4 of alpha for gdp, 1/4 for free; the free family alone gets alpha for a
// Laplace claim).

// DefaultFirstLook is the number of pairs played before the first bet of the sequential audit.
const DefaultFirstLook = 100

// DefaultLookGrowth is the factor by which the pairs grow from one look of the sequential audit to
// the next (at least lookMinStep pairs).
const DefaultLookGrowth = 1.1

const (
	lookMinStep = 25
	// betShrink takes 3/4 of the plug-in Kelly bet: the bet is chosen on the same pairs that
	// estimate its gain, and over-betting a gap that is partly noise costs more than
	// under-betting it (1/2, 3/4 and 1 compared on exact Gaussian pairs: sequential_sim_test.go).
	betShrink = 0.75
	// seMargin: the bet counts on the estimated gap less this many standard errors (1/2, 1 and
	// 2 compared on exact Gaussian pairs at the edge of the claim: sequential_sim_test.go).
	seMargin = 0.5
	// gdpShare is the gdp family's share of the level for a Gaussian claim: the tight bounds of
	// a Gaussian mechanism are its, and ln(1/alpha) is what every test must reach.
	gdpShare = 0.75
	// localStep: see combinations.
	localStep = 0.05
	// seqGrid is the number of parameters of each family on its grid (plus the claim's and
	// the target's, exact).
	seqGrid = 600
)

// Reasons a sequential audit stopped (SequentialReport.StoppedBecause).
const (
	StopViolation   = "violation"
	StopTarget      = "target"
	StopTrialCap    = "trial cap"
	StopInterrupted = "interrupted"
)

// SequentialOptions configure NewSequential.
type SequentialOptions struct {
	// Claim is the claim of one trial (Game.ClaimRun's eps for a trial of several episodes).
	Claim Claim
	// Confidence is the level every statement holds at, over every look at once (0: 0.95).
	Confidence float64
	// Target in (0, 1]: stop once a lower bound on eps reaches Target * eps (0: never; only a
	// violation or the trial cap stops).
	Target float64
	// MaxPairs is the trial cap: trials per value of the secret bit (> 0).
	MaxPairs int
	// FirstLook is the pairs played before the first bet (0: DefaultFirstLook); Growth the
	// factor between looks (0: DefaultLookGrowth).
	FirstLook int
	Growth    float64
}

// SequentialLook is the evidence at one look.
type SequentialLook struct {
	Pairs int `json:"pairs"`
	// LogE is ln K of each family's test of the claim (and TargetLogE of the target), one per
	// entry of SequentialReport.Families.
	LogE       []float64 `json:"log_e"`
	TargetLogE []float64 `json:"target_log_e,omitempty"`
	// EpsilonLB are the families' anytime-valid lower bounds on eps at this look.
	EpsilonLB []float64 `json:"epsilon_lb"`
}

// SequentialFamily is one family of hypotheses tested by the sequential audit.
type SequentialFamily struct {
	Name string `json:"name"` // "free" or "gdp"
	// Hypothesis says what is tested and under which assumption.
	Hypothesis string  `json:"hypothesis"`
	Alpha      float64 `json:"alpha"`
	// LogE is ln K of the test of the claim; the claim is rejected once it reaches ln(1/Alpha).
	LogE      float64 `json:"log_e"`
	Threshold float64 `json:"log_threshold"`
	// TargetLogE is ln K of the test of the target (eps_lb >= target eps).
	TargetLogE float64 `json:"target_log_e,omitempty"`
	// EpsilonLB is the family's lower bound on eps (MuLB its mu for gdp), valid at every look.
	EpsilonLB float64 `json:"epsilon_lb"`
	MuLB      float64 `json:"mu_lb,omitempty"`
	// Capped says EpsilonLB is the top of the family's grid: eps is at least that, maybe more.
	Capped bool `json:"capped,omitempty"`
}

// SequentialBet is the bet of the last look: a weighted combination of threshold tests of one
// score.
type SequentialBet struct {
	Score       string           `json:"score"`
	Orientation Orientation      `json:"orientation"`
	Tests       []SequentialTest `json:"tests"`
	Lambda      float64          `json:"lambda"`
	Objective   string           `json:"objective"`
}

// SequentialTest is one test of a bet: its threshold, slope a_k and weight c_k.
type SequentialTest struct {
	Threshold float64 `json:"threshold"`
	Slope     float64 `json:"slope"`
	Weight    float64 `json:"weight"`
}

// SequentialReport is what the sequential audit did (the "sequential" object of audit.json).
type SequentialReport struct {
	Construction string  `json:"construction"`
	Confidence   float64 `json:"confidence"`
	Target       float64 `json:"target,omitempty"`
	MaxTrials    int     `json:"max_trials"`
	// TrialsUsed are the trials per value of the secret bit the decision rests on.
	TrialsUsed struct {
		Bit0 int `json:"bit0"`
		Bit1 int `json:"bit1"`
	} `json:"trials_used"`
	Looks          int                `json:"looks"`
	StoppedBecause string             `json:"stopped_because"`
	Verdict        string             `json:"verdict"`
	EpsilonLB      float64            `json:"epsilon_lb_seq"`
	EpsilonLBGDP   float64            `json:"epsilon_lb_seq_gdp,omitempty"`
	Families       []SequentialFamily `json:"families"`
	Bet            *SequentialBet     `json:"last_bet,omitempty"`
	History        []SequentialLook   `json:"history"`
}

// seqFamily is one family's parameters (ascending) and the evidence against each.
type seqFamily struct {
	name, hypothesis string
	alpha            float64
	params           []float64 // eps' (free) or mu' (gdp)
	claim, target    int       // indices of the claim's and the target's parameter (-1: none)
	logK             []float64
	rejected         []bool
	h                []float64 // h(param, slope) of the current bet
	support          func(param, a float64) float64
	toEps            func(param float64) float64
}

// seqBet is the bet in force between two looks: a nonnegative combination of the tests "guess x'
// when score > taus[k]" (OrientGreater; <= for OrientLess) of one score, each with its slope,
//
//	W = sum_k c_k (a_k A_k + B_k),   h_H = sum_k c_k h_H(a_k),
//
// scaled so that W <= sum_k c_k (a_k + 1) = 1: every factor 1 + lam (h - W) with lam < 1 is
// positive. A combination of valid inequalities is valid; several thresholds estimate the gap
// with less variance than the best one alone (about 1.5 times fewer pairs for a Gaussian pair at
// the edge of its claim).
type seqBet struct {
	col       int
	orient    Orientation
	taus      []float64 // ascending
	c, a      []float64
	lam       float64
	objective string
	time      float64
	// wA[j], wB[j]: the A and B parts of W when j thresholds lie below the bit-0 (bit-1) score
	wA, wB []float64
}

// newSeqBet fills the parts of W by the number of thresholds below a score.
func newSeqBet(col int, o Orientation, taus, c, a []float64) *seqBet {
	b := &seqBet{col: col, orient: o, taus: taus, c: c, a: a, wA: make([]float64, len(taus)+1), wB: make([]float64, len(taus)+1)}
	for j := 0; j <= len(taus); j++ {
		for k := range taus {
			// j thresholds below the score: tests k < j have score > tau_k
			above := k < j
			if o == OrientGreater {
				if above {
					b.wA[j] += c[k] * a[k] // guesses x' on the bit-0 trial: a false positive
				} else {
					b.wB[j] += c[k] // guesses x on the bit-1 trial: a false negative
				}
			} else {
				if !above {
					b.wA[j] += c[k] * a[k]
				} else {
					b.wB[j] += c[k]
				}
			}
		}
	}
	return b
}

// below is the number of the bet's thresholds strictly below score.
func (b *seqBet) below(score float64) int {
	j, _ := slices.BinarySearch(b.taus, score)
	return j
}

// Sequential is the state of a sequential audit: feed it the pairs in order (AddPair); it looks at
// the evidence at every look and says when it has decided. Deterministic: the same pairs give the
// same decisions.
type Sequential struct {
	o        SequentialOptions
	names    []string
	fams     []*seqFamily
	scores   [][2][]float64 // [score][bit] in pair order
	sorted   [][2][]float64 // the same, sorted (up to the last look)
	bet      *seqBet
	counts   map[[2]int]int // pairs under the current bet by (thresholds below the bit-0 score, below the bit-1 score)
	pairs    int
	next     int
	history  []SequentialLook
	decision string
}

// NewSequential starts a sequential audit of the scores names against o.Claim.
func NewSequential(names []string, o SequentialOptions) (*Sequential, error) {
	if len(names) == 0 {
		return nil, errors.New("audit: sequential: no scores")
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("audit: sequential: confidence %v must lie in (0, 1)", o.Confidence)
	}
	if !(o.Target >= 0 && o.Target <= 1) {
		return nil, fmt.Errorf("audit: sequential: target %v must lie in (0, 1] (0: none)", o.Target)
	}
	if o.MaxPairs < 1 {
		return nil, fmt.Errorf("audit: sequential: %d trials per side, want >= 1", o.MaxPairs)
	}
	if !(o.Claim.Epsilon > 0) || math.IsInf(o.Claim.Epsilon, 0) || !(o.Claim.Delta >= 0 && o.Claim.Delta < 1) {
		return nil, fmt.Errorf("audit: sequential: claim (eps, delta) = (%v, %v): want eps > 0 finite and 0 <= delta < 1", o.Claim.Epsilon, o.Claim.Delta)
	}
	if o.FirstLook <= 0 {
		o.FirstLook = DefaultFirstLook
	}
	if o.Growth <= 1 {
		o.Growth = DefaultLookGrowth
	}
	s := &Sequential{o: o, names: slices.Clone(names), counts: map[[2]int]int{}, scores: make([][2][]float64, len(names)), sorted: make([][2][]float64, len(names))}
	alpha := 1 - o.Confidence
	gauss := o.Claim.Mechanism == privacy.Gaussian && o.Claim.Delta > 0
	share := alpha
	if gauss {
		share = alpha * (1 - gdpShare)
	}
	s.fams = append(s.fams, freeFamily(o.Claim, o.Target, share))
	if gauss {
		f, err := gdpFamily(o.Claim, o.Target, alpha*gdpShare)
		if err != nil {
			return nil, err
		}
		s.fams = append(s.fams, f)
	}
	s.next = min(o.FirstLook, o.MaxPairs)
	return s, nil
}

// paramGrid returns n+1 values evenly spaced on [0, hi] with the extra values, sorted, and the index of
// each extra value (-1 for a value < 0).
func paramGrid(hi float64, n int, extra ...float64) ([]float64, []int) {
	v := make([]float64, 0, n+1+len(extra))
	for i := 0; i <= n; i++ {
		v = append(v, hi*float64(i)/float64(n))
	}
	for _, e := range extra {
		if e >= 0 {
			v = append(v, e)
		}
	}
	slices.Sort(v)
	v = slices.Compact(v)
	idx := make([]int, len(extra))
	for i, e := range extra {
		idx[i] = -1
		if e >= 0 {
			idx[i], _ = slices.BinarySearch(v, e)
		}
	}
	return v, idx
}

func newFamily(name, hyp string, alpha float64, params []float64, idx []int) *seqFamily {
	return &seqFamily{name: name, hypothesis: hyp, alpha: alpha, params: params, claim: idx[0], target: idx[1],
		logK: make([]float64, len(params)), rejected: make([]bool, len(params)), h: make([]float64, len(params))}
}

// freeFamily tests (eps', delta)-DP for every eps' on a grid up to max(4 eps, eps + 4).
func freeFamily(c Claim, target, alpha float64) *seqFamily {
	t := -1.0
	if target > 0 {
		t = target * c.Epsilon
	}
	params, idx := paramGrid(math.Max(4*c.Epsilon, c.Epsilon+4), seqGrid, c.Epsilon, t)
	f := newFamily("free", fmt.Sprintf("(eps', %g)-DP on the pair, any mechanism", c.Delta), alpha, params, idx)
	d := c.Delta
	f.support = func(eps, a float64) float64 {
		return (1 - d) * math.Min(1, math.Min(a, (1+a)/(1+math.Exp(eps))))
	}
	f.toEps = func(eps float64) float64 { return eps }
	return f
}

// gdpFamily tests "the trade-off curve is at least the mu'-GDP curve" for every mu' on a grid
// up to max(4 mu_claimed, mu_claimed + 2).
func gdpFamily(c Claim, target, alpha float64) (*seqFamily, error) {
	mc, err := privacy.KappaInverse(c.Epsilon, c.Delta)
	if err != nil {
		return nil, fmt.Errorf("audit: sequential: mu of the claim: %w", err)
	}
	mt := -1.0
	if target > 0 {
		if mt, err = privacy.KappaInverse(target*c.Epsilon, c.Delta); err != nil {
			return nil, fmt.Errorf("audit: sequential: mu of the target: %w", err)
		}
	}
	params, idx := paramGrid(math.Max(4*mc, mc+2), seqGrid, mc, mt)
	f := newFamily("gdp", "the trade-off curve is at least the mu'-GDP curve (valid "+validityGaussian+")", alpha, params, idx)
	f.support = gdpSupport
	d := c.Delta
	f.toEps = func(mu float64) float64 {
		e, err := privacy.EpsilonForGDP(mu, d)
		if err != nil {
			return 0
		}
		return e
	}
	return f, nil
}

// gdpSupport is min over p of a p + G_mu(p), G_mu(p) = Phi(PhiInv(1-p) - mu) the mu-GDP curve:
// convex, so the minimum is where its slope is -a, at 1-p = Phi(z) with z = (ln a + mu^2/2)/mu.
func gdpSupport(mu, a float64) float64 {
	if mu <= 0 || a <= 0 {
		return math.Min(1, a)
	}
	z := (math.Log(a) + mu*mu/2) / mu
	return a*privacy.Phi(-z) + privacy.Phi(z-mu)
}

// Decision is the sequential audit's decision so far: "" (play on), StopViolation, StopTarget or
// StopTrialCap.
func (s *Sequential) Decision() string { return s.decision }

// Pairs is the number of pairs fed so far.
func (s *Sequential) Pairs() int { return s.pairs }

// Looks is the number of looks so far.
func (s *Sequential) Looks() int { return len(s.history) }

// NextLook is the number of pairs at which the next look comes.
func (s *Sequential) NextLook() int { return s.next }

// AddPair feeds the next pair: the scores of its bit-0 trial and of its bit-1 trial (one per
// score, in the names' order). At a look it weighs the evidence; it returns the decision.
func (s *Sequential) AddPair(x, xPrime []float64) string {
	if s.decision != "" {
		return s.decision
	}
	for c := range s.names {
		s.scores[c][0] = append(s.scores[c][0], x[c])
		s.scores[c][1] = append(s.scores[c][1], xPrime[c])
	}
	if b := s.bet; b != nil {
		s.counts[[2]int{b.below(x[b.col]), b.below(xPrime[b.col])}]++
	}
	s.pairs++
	if s.pairs >= s.next {
		s.look()
	}
	return s.decision
}

// look settles the bet of the pairs since the last look into every family, records the evidence,
// decides, and chooses the next bet.
func (s *Sequential) look() {
	if b := s.bet; b != nil {
		// the cells in a fixed order: the sum, to the last bit, does not depend on the map's
		cells := slices.SortedFunc(maps.Keys(s.counts), func(x, y [2]int) int {
			return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
		})
		for _, f := range s.fams {
			for i := range f.params {
				for _, j := range cells {
					f.logK[i] += float64(s.counts[j]) * math.Log1p(b.lam*(f.h[i]-b.wA[j[0]]-b.wB[j[1]]))
				}
				if f.logK[i] >= math.Log(1/f.alpha) {
					f.rejected[i] = true
				}
			}
		}
	}
	clear(s.counts)
	s.record()
	for _, f := range s.fams {
		if f.rejected[f.claim] {
			s.decision = StopViolation
			return
		}
	}
	for _, f := range s.fams {
		if f.target >= 0 && f.rejected[f.target] {
			s.decision = StopTarget
			return
		}
	}
	if s.pairs >= s.o.MaxPairs {
		s.decision = StopTrialCap
		return
	}
	s.sortNew()
	s.bet = s.chooseBet()
	if s.bet != nil {
		for _, f := range s.fams {
			for i, p := range f.params {
				f.h[i] = 0
				for k, c := range s.bet.c {
					f.h[i] += c * f.support(p, s.bet.a[k])
				}
			}
		}
	}
	s.next = min(s.o.MaxPairs, max(s.pairs+lookMinStep, int(math.Ceil(float64(s.pairs)*s.o.Growth))))
}

// lowerBound is the family's largest rejected parameter (0: none) and whether it is the grid's top.
func (f *seqFamily) lowerBound() (param float64, capped bool) {
	for i := len(f.params) - 1; i >= 0; i-- {
		if f.rejected[i] {
			return f.params[i], i == len(f.params)-1
		}
	}
	return 0, false
}

func (s *Sequential) record() {
	l := SequentialLook{Pairs: s.pairs}
	for _, f := range s.fams {
		l.LogE = append(l.LogE, f.logK[f.claim])
		if f.target >= 0 {
			l.TargetLogE = append(l.TargetLogE, f.logK[f.target])
		}
		p, _ := f.lowerBound()
		l.EpsilonLB = append(l.EpsilonLB, f.toEps(p))
	}
	s.history = append(s.history, l)
}

// sortNew merges the pairs since the last look into the sorted copies.
func (s *Sequential) sortNew() {
	for c := range s.names {
		for b := 0; b < 2; b++ {
			old := s.sorted[c][b]
			add := slices.Clone(s.scores[c][b][len(old):])
			slices.Sort(add)
			s.sorted[c][b] = merge(old, add)
		}
	}
}

// objective is one hypothesis the next bet may aim at: a family's claim or target parameter.
type objective struct {
	f    *seqFamily
	i    int
	name string
}

// chooseBet picks the bet that reaches a decision soonest by the plug-in estimate from the pairs so
// far. For every score, orientation and hypothesis still open (a family's claim or target), the
// tests at betThresholds quantiles of the pooled scores get their estimated rates
// (FP + 1/2)/(n + 1), (FN + 1/2)/(n + 1), their slopes (the faces of the (eps', delta) region, or
// the tangents of the mu'-GDP curve at each estimated FPR) and their estimated gaps
// h(a_k) - (a_k p_k + q_k); the combinations are each test alone (the free family) and the one whose weights solve
// Cov c = gap (clipped at 0: the most gap per standard deviation). The bet is the Kelly bet on
// the combined gap less seMargin of its standard error, times betShrink; the pairs to go are
// ln(1/alpha) - ln K over its growth rate. nil when no combination shows a gap.
func (s *Sequential) chooseBet() *seqBet {
	var objs []objective
	for _, f := range s.fams {
		objs = append(objs, objective{f, f.claim, f.name + " claim"})
		if f.target >= 0 {
			objs = append(objs, objective{f, f.target, f.name + " target"})
		}
	}
	n := len(s.sorted[0][0])
	var best *seqBet
	for col := range s.names {
		s0, s1 := s.sorted[col][0], s.sorted[col][1]
		z := merge(s0, s1)
		var taus []float64
		for _, lv := range curveLevels(betThresholds, len(z)) {
			taus = append(taus, z[int(math.Round(lv*float64(len(z)-1)))])
		}
		taus = slices.Compact(taus)
		for _, or := range []Orientation{OrientGreater, OrientLess} {
			p, q := make([]float64, len(taus)), make([]float64, len(taus))
			for k, tau := range taus {
				le0, le1 := countLE(s0, tau), countLE(s1, tau)
				fp, fn := n-le0, le1
				if or == OrientLess {
					fp, fn = le0, n-le1
				}
				p[k], q[k] = (float64(fp)+0.5)/float64(n+1), (float64(fn)+0.5)/float64(n+1)
			}
			for _, ob := range objs {
				need := math.Max(math.Log(1/ob.f.alpha)-ob.f.logK[ob.i], 0.1)
				for _, a := range slopeSets(ob.f, ob.f.params[ob.i], p) {
					for _, c := range combinations(ob.f, ob.f.params[ob.i], p, q, a) {
						lam, g := betOn(ob.f, ob.f.params[ob.i], p, q, a, c, n)
						if g <= 0 {
							continue
						}
						if t := need / g; best == nil || t < best.time {
							best = newSeqBet(col, or, taus, c, a)
							best.lam, best.objective, best.time = lam, ob.name, t
						}
					}
				}
			}
		}
	}
	return best
}

// betThresholds is the number of quantile levels of the tests a bet combines (12 against 6, 8,
// 24 and 48 on exact Gaussian pairs at the edge of the claim: fewer rates to estimate, enough
// to follow the curve).
const betThresholds = 12

// combinations are the weights tried: every test alone, and the weights of Cov c = gap clipped at
// 0 (Cov of the W_k = a_k A_k + B_k: nested indicators, Cov(1_i, 1_j) = min(p_i, p_j) - p_i p_j).
func combinations(f *seqFamily, param float64, p, q, a []float64) [][]float64 {
	K := len(p)
	gap := make([]float64, K)
	var out [][]float64
	mu := fitMu(p, q)
	for k := range p {
		gap[k] = f.support(param, a[k]) - (a[k]*p[k] + q[k])
		if gap[k] > 0 {
			c := make([]float64, K)
			c[k] = 1
			out = append(out, c)
		}
	}
	if f.name == "gdp" {
		// the gdp family bets on the combination alone: the best of K single tests on their
		// own noisy gaps is the most overestimated one (and the bet on it too large)
		out = nil
	} else if len(out) < 2 {
		return out
	}
	if f.name == "gdp" {
		// the gaps the weights aim at: those of the mu-GDP curve fitted to the tests (smooth in k,
		// not each test's own noisy estimate), at least localStep beyond the hypothesis (so
		// that the direction is defined before the fit clears it)
		for k := range p {
			gap[k] = f.support(param, a[k]) - (a[k]*p[k] + GDPFNR(math.Max(mu, param+localStep), p[k]))
		}
	}
	cov := make([][]float64, K)
	for i := range cov {
		cov[i] = make([]float64, K)
		for j := range cov[i] {
			cov[i][j] = a[i]*a[j]*(math.Min(p[i], p[j])-p[i]*p[j]) + math.Min(q[i], q[j]) - q[i]*q[j]
		}
		cov[i][i] *= 1 + 1e-6 // ridge: neighbouring tests are nearly collinear
	}
	c, ok := solveSPD(cov, gap)
	if !ok {
		return out
	}
	for k := range c {
		c[k] = math.Max(c[k], 0)
	}
	return append(out, c)
}

// solveSPD solves m x = b for a symmetric positive definite m (Cholesky); ok false if it is not.
func solveSPD(m [][]float64, b []float64) ([]float64, bool) {
	n := len(b)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
		for j := 0; j <= i; j++ {
			sum := m[i][j]
			for k := 0; k < j; k++ {
				sum -= l[i][k] * l[j][k]
			}
			if i == j {
				if sum <= 0 {
					return nil, false
				}
				l[i][i] = math.Sqrt(sum)
			} else {
				l[i][j] = sum / l[j][j]
			}
		}
	}
	y := make([]float64, n)
	for i := range y {
		y[i] = b[i]
		for k := 0; k < i; k++ {
			y[i] -= l[i][k] * y[k]
		}
		y[i] /= l[i][i]
	}
	x := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		x[i] = y[i]
		for k := i + 1; k < n; k++ {
			x[i] -= l[k][i] * x[k]
		}
		x[i] /= l[i][i]
	}
	return x, true
}

// betOn scales the weights c so that sum c_k (a_k + 1) = 1 and returns the bet on them and its
// estimated growth rate of ln K: the combined gap less seMargin standard errors, var the combined
// variance, lam = betShrink gap/(var + gap^2) and growth lam gap - lam^2 (var + gap^2)/2 (second
// order in lam; lam < 1).
func betOn(f *seqFamily, param float64, p, q, a, c []float64, n int) (lam, growth float64) {
	scale := 0.0
	for k := range c {
		scale += c[k] * (a[k] + 1)
	}
	if scale <= 0 {
		return 0, 0
	}
	gap, v := 0.0, 0.0
	for k := range c {
		c[k] /= scale
		gap += c[k] * (f.support(param, a[k]) - (a[k]*p[k] + q[k]))
	}
	for i := range c {
		for j := range c {
			if c[i] > 0 && c[j] > 0 {
				v += c[i] * c[j] * (a[i]*a[j]*(math.Min(p[i], p[j])-p[i]*p[j]) + math.Min(q[i], q[j]) - q[i]*q[j])
			}
		}
	}
	gap -= seMargin * math.Sqrt(v/float64(n))
	if gap <= 0 {
		return 0, 0
	}
	lam = math.Min(0.99, betShrink*gap/(v+gap*gap))
	return lam, lam*gap - lam*lam*(v+gap*gap)/2
}

// slopeSets are the slopes tried for a hypothesis, one per test: the two faces of the (eps',
// delta) region, or the tangents of the mu'-GDP curve at the tests' FPRs.
func slopeSets(f *seqFamily, param float64, p []float64) [][]float64 {
	if f.name == "free" {
		up, down := make([]float64, len(p)), make([]float64, len(p))
		for k := range p {
			up[k], down[k] = math.Exp(param), math.Exp(-param)
		}
		return [][]float64{up, down}
	}
	a := make([]float64, len(p))
	for k := range p {
		z := privacy.PhiInv(1 - p[k])
		a[k] = math.Exp(param*z - param*param/2)
	}
	return [][]float64{a}
}

// Report is what the audit did and found, stopped for the reason given (the decision, or
// StopInterrupted; "" while it plays on: the evidence so far, without a verdict).
func (s *Sequential) Report(stopped string) *SequentialReport {
	r := &SequentialReport{
		Construction: "test supermartingales by betting on the error indicators of a test chosen from the earlier pairs (Waudby-Smith & Ramdas 2024), rejected by Ville's inequality; the rejected parameters of each family form a confidence sequence (Howard et al. 2021); docs/math.md section 6.4",
		Confidence:   s.o.Confidence, Target: s.o.Target, MaxTrials: s.o.MaxPairs,
		Looks: len(s.history), StoppedBecause: stopped, Verdict: Consistent, History: slices.Clone(s.history),
	}
	r.TrialsUsed.Bit0, r.TrialsUsed.Bit1 = s.lastLook(), s.lastLook()
	if stopped == "" {
		r.Verdict = "" // still playing: evidence, not a verdict
	}
	if s.decision == StopViolation {
		r.Verdict = Violation
	}
	for _, f := range s.fams {
		p, capped := f.lowerBound()
		sf := SequentialFamily{Name: f.name, Hypothesis: f.hypothesis, Alpha: f.alpha, LogE: f.logK[f.claim],
			Threshold: math.Log(1 / f.alpha), EpsilonLB: f.toEps(p), Capped: capped}
		if f.target >= 0 {
			sf.TargetLogE = f.logK[f.target]
		}
		if f.name == "gdp" {
			sf.MuLB = p
			r.EpsilonLBGDP = sf.EpsilonLB
		} else {
			r.EpsilonLB = sf.EpsilonLB
		}
		r.Families = append(r.Families, sf)
	}
	if b := s.bet; b != nil {
		r.Bet = &SequentialBet{Score: s.names[b.col], Orientation: b.orient, Lambda: b.lam, Objective: b.objective}
		for k, c := range b.c {
			if c > 0 {
				r.Bet.Tests = append(r.Bet.Tests, SequentialTest{Threshold: b.taus[k], Slope: b.a[k], Weight: c})
			}
		}
	}
	return r
}

// lastLook is the pairs at the last look: what the decision rests on.
func (s *Sequential) lastLook() int {
	if len(s.history) == 0 {
		return 0
	}
	return s.history[len(s.history)-1].Pairs
}

// fitMu is the median over the tests with both rates in [0.05, 0.95] of PhiInv(1-p) - PhiInv(q),
// the mu of the GDP curve through each (0 if none).
func fitMu(p, q []float64) float64 {
	var m []float64
	for k := range p {
		if p[k] >= 0.05 && p[k] <= 0.95 && q[k] >= 0.05 && q[k] <= 0.95 {
			m = append(m, privacy.PhiInv(1-p[k])-privacy.PhiInv(q[k]))
		}
	}
	if len(m) == 0 {
		return 0
	}
	slices.Sort(m)
	return m[len(m)/2]
}
