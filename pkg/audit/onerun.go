package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// OneRunOptions configure PlayOneRun.
type OneRunOptions struct {
	// Seed of the run: the canaries' bits (stream rng(seed, "one-run-canary")) and the noise of the
	// one episode played (episode 0 of the seed's contract streams).
	Seed uint64
	// Confidence of the bound (0: 0.95).
	Confidence float64
	// Guesses is k, the guesses on each side (k "x'" on the highest scores, k "x" on the lowest);
	// 0 applies OneRunGuesses, a rule fixed before the run.
	Guesses int
	// Adjacency audited ("" = the plan's) and the sensitivity's budget (<= 0: the default).
	Adjacency privacy.Adjacency
	Budget    int64
}

// OneRunReport is the outcome of a one-run audit (the --json object of dpsim audit --one-run).
type OneRunReport struct {
	Scenario       string  `json:"scenario"`
	Mode           string  `json:"mode"` // "one-run"
	Canaries       int     `json:"canaries"`
	GuessesPerSide int     `json:"guesses_per_side"`
	Guesses        int     `json:"guesses"` // r = 2k
	Correct        int     `json:"correct"` // v
	EpsilonClaimed float64 `json:"epsilon_claimed"`
	Delta          float64 `json:"delta"`
	Confidence     float64 `json:"confidence"`
	// EpsilonLBOneRun is the one-run lower bound at Delta that the verdict reads: the bound Bound
	// names, chosen by the mechanism (and the plan's noise model) before the run (OneRunBoundFor).
	EpsilonLBOneRun float64 `json:"epsilon_lb_one_run"`
	// Bound names it: "steinke" (Steinke, Nasr & Jagielski 2023, exact for pure eps-DP), "fdp"
	// (Mahloujifar, Melis & Chaudhuri 2024, against the Gaussian mechanism's trade-off curve) or
	// "gauss" (the continuous statistic of Agrawal et al. 2026, onerun_gauss.go: Gaussian claims).
	Bound string `json:"one_run_bound"`
	// The bounds from the same run, for comparison (only Bound's is the audit's result: taking the
	// largest would need a multiplicity correction). Steinke et al.'s and the f-DP one read the
	// guesses (m, r, v); the Gauss one is given for Gaussian mechanisms whose plan fits its model only
	// (a noise model, no faults: OneRunBoundFor).
	EpsilonLBSteinke float64 `json:"epsilon_lb_one_run_steinke"`
	EpsilonLBFDP     float64 `json:"epsilon_lb_one_run_fdp"`
	// EpsilonLBGauss is eps of MuLBGauss-GDP at Delta; MuLBGauss = 2 (T - Phi^{-1}(confidence)) /
	// sqrt(m), the exact lower confidence bound on the canaries' mean separation from
	// T = GaussStatistic = sum_i s_i z_i / sqrt(m); GaussScoreVariance is the sample variance of the
	// s_i z_i (1 up to about sqrt(2/m) when the statistic's assumption holds).
	EpsilonLBGauss     *float64 `json:"epsilon_lb_one_run_gauss,omitempty"`
	MuLBGauss          *float64 `json:"mu_lb_one_run_gauss,omitempty"`
	GaussStatistic     *float64 `json:"gauss_statistic,omitempty"`
	GaussScoreVariance *float64 `json:"gauss_score_variance,omitempty"`
	// EpsilonLBExpected is what the verdict's bound expects for a mechanism exactly at the claim:
	// for "steinke" and "fdp" the guess rule's figure of merit (0 when --guesses fixed k), for
	// "gauss" its median (OneRunGaussExpected).
	EpsilonLBExpected float64 `json:"epsilon_lb_expected_at_claim"`
	Verdict           string  `json:"verdict"`
	// Score is how the agents are ranked; Difference the canaries' gap x'_i(0) - x_i(0).
	Score      string  `json:"score"`
	Difference float64 `json:"difference"`
	// EpsilonPair is the eps each agent's estimate leaks at Delta under the noise actually run
	// (Gaussian: EpsilonForGDP of the per-agent mu; 0 where unknown).
	EpsilonPair    float64  `json:"epsilon_pair"`
	Engine         string   `json:"engine"`
	Seed           uint64   `json:"seed"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Assumptions    []string `json:"assumptions"`
}

// The one-run bounds (OneRunReport.Bound).
const (
	OneRunBoundSteinke = "steinke"
	OneRunBoundFDP     = "fdp"
	OneRunBoundGauss   = "gauss"
)

// OneRunBoundFor is the bound the verdict of a one-run audit of mech reads, fixed before the run by
// the mechanism and by whether the plan fits the Gauss statistic's model (gaussModel: a noise model
// to standardise by, not noise none, and no faults; OneRunGaussAssumption), never by the run: for pure eps-DP (Laplace) Steinke et al.'s, whose binomial tail is exactly
// randomized response's, the extreme pure eps-DP mechanism (the f-DP bound against the same curve is
// slightly looser: its recursion bounds expectations); for the Gaussian mechanism the continuous
// Gauss statistic (onerun_gauss.go), exact under its stated assumption and tighter than any count of
// thresholded guesses; for a Gaussian claim outside that model (noise none: nothing to standardise
// by; faults: the agents' errors may be correlated) Mahloujifar et al.'s against the mu-GDP curve,
// which an (eps, delta) bound cannot see (its 2 m delta alpha term swamps it unless m delta << 1).
func OneRunBoundFor(mech privacy.Mechanism, gaussModel bool) string {
	switch {
	case mech == privacy.Gaussian && gaussModel:
		return OneRunBoundGauss
	case mech == privacy.Gaussian:
		return OneRunBoundFDP
	}
	return OneRunBoundSteinke
}

// guessBound is the bound over the guesses (m, r, v) that the guess rule maximises: Mahloujifar et
// al.'s for Gaussian, Steinke et al.'s otherwise (the verdict's unless it reads the Gauss statistic,
// which makes no guesses).
func guessBound(mech privacy.Mechanism, m, r, v int, delta, conf float64) float64 {
	if mech == privacy.Gaussian {
		return OneRunFDPEpsilonLB(mech, m, r, v, delta, conf)
	}
	return OneRunEpsilonLB(m, r, v, delta, conf)
}

// OneRunAssumptions are stated with every one-run result.
var OneRunAssumptions = []string{
	"Steinke, Nasr & Jagielski 2023 (Thm 3.1, Cor. 5.4) need the transcript to be (eps, delta)-DP, and Mahloujifar, Melis & Chaudhuri 2024 " +
		"need it to be f-DP (the Gaussian mechanism's mu-GDP curve), in each agent's canary with " +
		"every other agent's x_j(0) held fixed at any value: that is the consensus claim (one agent's x_i(0) changes by mu), so the bound is valid " +
		"however the canaries interact",
	"the messages mix the neighbours' states, but in fault-free consensus the transcript is a function of x(0) + noise that the " +
		"eavesdropper's estimate inverts: each agent's score depends on its own canary and its own noise only, so the per-agent evidence is " +
		"independent across agents; only the ranking (the top guesses of all scores) is joint, which the theorem allows (its guesses may be " +
		"chosen from every score). With faults (lost messages, crashes) the estimate no longer separates the agents exactly and the scores may " +
		"be correlated: the bound then rests on the per-canary DP condition alone",
	"the per-agent score reads the eavesdropper's estimate of x_i(0) alone; with structured noise its error sigma_i eta_i is independent across " +
		"agents (the estimate separates the agents exactly), with i.i.d. noise it is the mean of T draws per agent; the other agents' estimates " +
		"carry no information about agent i's canary in either case",
	"the number of guesses is fixed before the run (OneRunGuesses: from m and the claim only), never tuned on the run's scores",
}

// OneRunGaussAssumption is stated with every one-run result of a Gaussian mechanism that reports the
// Gauss statistic (onerun_gauss.go).
const OneRunGaussAssumption = "the Gauss statistic (Agrawal et al. 2026) assumes each agent's estimate is xhat_i = x_i(0) + e_i with e_i " +
	"EXACTLY N(0, var_i), var_i the plan's noise model (structured: sigma_i^2; i.i.d.: s^2/T), and e_1..e_m independent of each other " +
	"and of the canaries' coins (fault-free consensus: the transcript is a function of x(0) + noise); then T = sum_i s_i z_i / sqrt(m), " +
	"z_i the score standardised by var_i and s_i = +-1 the secret coin, is exactly N(sqrt(m) mubar/2, 1), mubar the canaries' mean " +
	"separation, and mu_lb = 2 (T - Phi^-1(confidence)) / sqrt(m) is an exact lower confidence bound: a mechanism at its claim is " +
	"called a violation with probability exactly 1 - confidence. If the noise is not Gaussian, its variance is not var_i, or the " +
	"agents' errors are correlated (faults), the level does not hold (gauss_score_variance far from 1 is a sign)"

// PlayOneRun audits plan p (consensus) from ONE episode: agent i starts at x_i(0) = base_i or
// base_i + d by an independent fair coin S_i (d = mu z of the adjacency's worst pair, the same for
// every agent), the fast engine plays one episode, and the eavesdropper's estimate of every x_i(0)
// is scored by the likelihood ratio of the two candidates (a Gaussian's; for Laplace the same
// ranking, the projection). The auditor guesses S_i = 1 on the k highest scores and S_i = 0 on the k
// lowest, abstains on the rest, and Steinke et al.'s and Mahloujifar et al.'s f-DP bound turn
// (m, r = 2k, v correct) into eps_lb. For a Gaussian mechanism whose plan has a noise model and no
// faults the run's scores also give the Gauss statistic (onerun_gauss.go: the standardised scores signed by the coins,
// summed; exact under its assumption, OneRunGaussAssumption). The verdict reads the bound
// OneRunBoundFor names: Steinke et al.'s for Laplace, the Gauss statistic for Gaussian (the f-DP
// bound outside its model).
func PlayOneRun(p *plan.Plan, o OneRunOptions) (*OneRunReport, error) {
	g, err := newOneRun(p, o)
	if err != nil {
		return nil, err
	}
	bits, x0 := drawCanaries(o.Seed, g.base, g.d)
	vari := canaryVariances(g.em, g.m)
	start := time.Now()
	player, err := newPlayerFor(p, o.Seed, g.m)
	if err != nil {
		return nil, err
	}
	est := make([]float64, g.m)
	if err := playEpisode(player, 0, x0, est); err != nil {
		return nil, fmt.Errorf("audit: one-run: %w", err)
	}
	elapsed := time.Since(start)
	v := correctGuesses(canaryScores(est, g.base, vari, g.d), bits, g.k)
	rep := g.report(o.Seed, v, vari, elapsed)
	if g.gaussOK {
		g.gauss(rep, est, vari, bits)
	}
	return rep, nil
}

// oneRun is a one-run audit fixed before its episode: the confidence, the estimate's noise
// model, the base state, the canaries' gap d and the guesses per side k (with the bound expected
// at the claim when k comes from OneRunGuesses' rule).
type oneRun struct {
	p        *plan.Plan
	conf     float64
	em       *estimateModel
	base     []float64
	m        int     // the canaries: one per agent
	d        float64 // x_i(0) - base_i of a canary whose coin is 1
	k        int
	expected float64
	bound    string // the verdict's (OneRunBoundFor)
	gaussOK  bool   // the plan fits the Gauss statistic's model: it is computed and reported
}

// faultFree reports whether f configures no fault at all (link rules, partitions, crashes, server
// restarts, proxies): the Gauss statistic's model needs each agent's estimate to carry its own
// noise only.
func faultFree(f *scenario.FaultsSpec) bool {
	return !f.Active() && len(f.Crashes) == 0 && len(f.ServerRestarts) == 0 && len(f.Proxies) == 0
}

// newOneRun checks p and o and fixes the one-run audit: the adjacency's worst pair gives d, and
// the guesses per side are o's or OneRunGuesses' (from m and the claim only, never the run's).
func newOneRun(p *plan.Plan, o OneRunOptions) (*oneRun, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("audit: one-run: plan is nil")
	}
	if p.Scenario.Kind != scenario.Consensus {
		return nil, fmt.Errorf("audit: one-run: kind %s: the one-run audit needs kind consensus (one canary per agent)", p.Scenario.Kind)
	}
	g := &oneRun{p: p, conf: o.Confidence}
	if g.conf == 0 {
		g.conf = 0.95
	}
	if !(g.conf > 0 && g.conf < 1) {
		return nil, fmt.Errorf("audit: one-run: confidence %v: want (0, 1)", g.conf)
	}
	adj := o.Adjacency
	if adj == "" {
		adj = p.Adjacency
	}
	var err error
	if g.em, err = estimateNoise(p); err != nil {
		return nil, err
	}
	g.base = baseState(p)
	pair, err := worstPair(p, adj, o.Budget, g.base, g.em)
	if err != nil {
		return nil, err
	}
	g.m = len(g.base)
	g.d = pair.X0Prime[pair.Agent] - pair.X0[pair.Agent]
	if !(g.d != 0) {
		return nil, errors.New("audit: one-run: the adjacent pair does not differ")
	}
	pr := p.Scenario.Privacy
	g.gaussOK = p.Mechanism == privacy.Gaussian && g.em.M != nil && faultFree(&p.Scenario.Faults)
	g.bound = OneRunBoundFor(p.Mechanism, g.gaussOK)
	g.k = o.Guesses
	if g.k == 0 {
		g.k, g.expected = OneRunGuesses(g.m, p.Mechanism, pr.Epsilon, pr.Delta, g.conf)
	}
	if g.bound == OneRunBoundGauss {
		g.expected = OneRunGaussExpected(g.m, pr.Epsilon, pr.Delta, g.conf)
	}
	if g.k < 1 || 2*g.k > g.m {
		return nil, fmt.Errorf("audit: one-run: %d guesses per side with %d canaries: want 1..%d", g.k, g.m, g.m/2)
	}
	return g, nil
}

// drawCanaries draws the canaries' fair coins S_i from the seed (their own stream,
// "one-run-canary") and returns them with the initial state x_i(0) = base_i + S_i d.
func drawCanaries(seed uint64, base []float64, d float64) (bits []int, x0 []float64) {
	bits = make([]int, len(base))
	x0 = slices.Clone(base)
	cr := rng.New(seed, rng.Label("one-run-canary"))
	for i := range bits {
		bits[i] = int(cr.Uint64() >> 63)
		x0[i] += float64(bits[i]) * d
	}
	return bits, x0
}

// canaryVariances is the per-agent variance of the estimate (diagonal: estimateNoise's consensus
// M; 1 where it has none).
func canaryVariances(em *estimateModel, m int) []float64 {
	vari := make([]float64, m)
	for i := range vari {
		vari[i] = 1
		if em.M != nil {
			if s := em.M.At(i, i); s > 0 {
				vari[i] = s * s
			}
		}
	}
	return vari
}

// canaryScores are the Gaussian log-likelihood ratios of x_i(0) = base_i + d against base_i,
// d (est_i - base_i - d/2) / var_i.
func canaryScores(est, base, vari []float64, d float64) []float64 {
	scores := make([]float64, len(est))
	for i := range scores {
		scores[i] = d * (est[i] - base[i] - d/2) / vari[i]
	}
	return scores
}

// correctGuesses guesses S_i = 0 on the k lowest scores and S_i = 1 on the k highest (ties in
// agent order) and counts the correct guesses v.
func correctGuesses(scores []float64, bits []int, k int) int {
	m := len(scores)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	v := 0
	for j := 0; j < k; j++ {
		if bits[order[j]] == 0 {
			v++
		}
		if bits[order[m-1-j]] == 1 {
			v++
		}
	}
	return v
}

// report turns v correct guesses of 2k into the one-run bounds (Steinke et al.'s and the f-DP
// one, OneRunBoundFor naming the verdict's), the pair's own eps where the noise law gives it, and
// the verdict: violation when the verdict's bound exceeds the claimed eps.
func (g *oneRun) report(seed uint64, v int, vari []float64, elapsed time.Duration) *OneRunReport {
	p, pr, m, k, d := g.p, g.p.Scenario.Privacy, g.m, g.k, g.d
	rep := &OneRunReport{
		Scenario: p.Scenario.Name, Mode: "one-run", Canaries: m, GuessesPerSide: k, Guesses: 2 * k, Correct: v,
		EpsilonClaimed: pr.Epsilon, Delta: pr.Delta, Confidence: g.conf,
		EpsilonLBSteinke:  OneRunEpsilonLB(m, 2*k, v, pr.Delta, g.conf),
		EpsilonLBFDP:      OneRunFDPEpsilonLB(p.Mechanism, m, 2*k, v, pr.Delta, g.conf),
		Bound:             g.bound,
		EpsilonLBExpected: g.expected,
		Score:             "llr", Difference: d, Engine: EngineFast, Seed: seed,
		ElapsedSeconds: elapsed.Seconds(), Assumptions: slices.Clone(OneRunAssumptions),
	}
	rep.EpsilonLBOneRun = rep.EpsilonLBSteinke
	if rep.Bound == OneRunBoundFDP {
		rep.EpsilonLBOneRun = rep.EpsilonLBFDP
	}
	if p.Mechanism == privacy.Laplace {
		rep.Score = ScoreProjection
	}
	if p.Mechanism == privacy.Gaussian && g.em.M != nil {
		if e, err := privacy.EpsilonForGDP(math.Abs(d)/math.Sqrt(vari[0]), pr.Delta); err == nil {
			rep.EpsilonPair = e
		}
	}
	if p.Mechanism == privacy.Laplace && g.em.laplaceExact && g.em.M != nil {
		rep.EpsilonPair = math.Abs(d) / math.Sqrt(vari[0])
	}
	rep.setVerdict()
	return rep
}

// gauss adds the Gauss statistic of the run (onerun_gauss.go) to rep, with its assumption, and
// makes it the verdict's when it is the bound fixed for the run.
func (g *oneRun) gauss(rep *OneRunReport, est, vari []float64, bits []int) {
	t, sv := oneRunGaussStatistic(est, g.base, vari, g.d, bits)
	mu := OneRunGaussMuLB(t, g.m, g.conf)
	e := OneRunGaussEpsilonLB(mu, rep.Delta)
	rep.GaussStatistic, rep.GaussScoreVariance, rep.MuLBGauss, rep.EpsilonLBGauss = &t, &sv, &mu, &e
	rep.Assumptions = append(rep.Assumptions, OneRunGaussAssumption)
	if g.bound == OneRunBoundGauss {
		rep.EpsilonLBOneRun = e
		rep.setVerdict()
	}
}

// setVerdict is violation when the verdict's bound exceeds the claimed eps.
func (rep *OneRunReport) setVerdict() {
	rep.Verdict = Consistent
	if rep.EpsilonLBOneRun > rep.EpsilonClaimed {
		rep.Verdict = Violation
	}
}

// newPlayerFor builds the fast engine's player of p and checks it estimates every agent.
func newPlayerFor(p *plan.Plan, seed uint64, m int) (*engine.Player, error) {
	g := &Game{Plan: p, dim: m}
	return newFastPlayer(g, sim.NewSeeds(seed))
}

// OneRunGuesses is the rule fixing k, the guesses per side, BEFORE the run, from the number of
// canaries m and the claim alone: the k on a grid (multiples of max(1, m/200), up to m/2) whose
// EXPECTED bound over the guesses (guessBound's: Mahloujifar et al.'s for Gaussian, Steinke et al.'s
// otherwise) is largest when the mechanism is exactly at the claim - scores N(+-mu/2, 1) with
// mu = KappaInverse(eps, delta) for Gaussian, Laplace(+-eps/2, 1) for Laplace - taking the expected
// number of correct guesses 2k acc(k) (acc: the top-k precision of that model) rounded down. It
// returns k and that expected eps_lb. Since it reads neither the run's scores nor its canaries the
// bound stays valid; since it assumes the claim, an under-calibrated mechanism is audited with the k
// a sound one would want (not the best k for it).
func OneRunGuesses(m int, mech privacy.Mechanism, eps, delta, conf float64) (int, float64) {
	var tail func(t float64) float64 // P[score > t] for the bit-1 score; bit 0 is tail(t + shift)
	shift := eps
	switch mech {
	case privacy.Laplace:
		tail = func(t float64) float64 {
			if t < 0 {
				return 1 - 0.5*math.Exp(t)
			}
			return 0.5 * math.Exp(-t)
		}
	default:
		mu, err := privacy.KappaInverse(eps, delta)
		if err != nil || !(mu > 0) {
			return max(1, m/20), 0
		}
		shift = mu
		tail = func(t float64) float64 { return 0.5 * math.Erfc(t/math.Sqrt2) }
	}
	step := max(1, m/200)
	bestK, best := max(1, min(step, m/2)), -1.0
	for k := step; 2*k <= m; k += step {
		frac := float64(k) / float64(m)
		// threshold t: the mixture's upper tail is frac
		lo, hi := -60.0, 60.0
		for it := 0; it < 200; it++ {
			mid := (lo + hi) / 2
			if (tail(mid-shift/2)+tail(mid+shift/2))/2 > frac {
				lo = mid
			} else {
				hi = mid
			}
		}
		a, b := tail(lo-shift/2), tail(lo+shift/2)
		acc := a / (a + b)
		v := int(math.Floor(2 * float64(k) * acc))
		if e := guessBound(mech, m, 2*k, v, delta, conf); e > best {
			bestK, best = k, e
		}
	}
	return bestK, math.Max(best, 0)
}
