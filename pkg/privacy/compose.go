package privacy

import (
	"fmt"
	"math"
)

// This file composes the per-episode guarantee over k episodes that release the same secret with fresh
// noise (docs/math.md section 9), and splits a whole run's budget into a per-episode one.
//
//   - Gaussian: a Gaussian mechanism with y = mu*Delta/sigma is exactly y-GDP (Dong, Roth & Su 2022), and
//     kappa(eps, y) is its delta(eps) (their Corollary 2.13). k y-GDP releases compose EXACTLY to
//     sqrt(k) y-GDP (their Corollary 3.3), so the whole run's eps at delta solves kappa(eps, sqrt(k) y) = delta.
//   - Laplace (pure eps0 per episode): the optimal composition of k eps0-DP mechanisms (Kairouz, Oh &
//     Viswanath 2015, Theorem 3.3) is the privacy region of k-fold randomized response, which dominates
//     every eps0-DP mechanism: delta(eps) = sum over l with (k-2l) eps0 > eps of
//     Bin(k, q)(l) (1 - e^{eps - (k-2l) eps0}), q = 1/(1+e^{eps0}). It is evaluated in log space over the
//     O(sqrt(k)) terms that matter.

// Composition names the rule a whole-run guarantee was composed by.
type Composition string

const (
	// ComposeGDP is the exact composition of Gaussian mechanisms: k mu-GDP releases are sqrt(k) mu-GDP
	// (Dong, Roth & Su 2022, Corollary 3.3), converted to (eps, delta) by their Corollary 2.13.
	ComposeGDP Composition = "gdp-exact"
	// ComposeKOV is the optimal composition of k pure eps0-DP mechanisms (Kairouz, Oh & Viswanath 2015,
	// Theorem 3.3): exact for the worst eps0-DP mechanism, an upper bound for Laplace noise in particular.
	ComposeKOV Composition = "kov-optimal"
)

// MaxEpisodes bounds k: the Laplace composition costs O(sqrt(k)) per evaluation.
const MaxEpisodes = 1_000_000_000

func checkEpisodes(k int) error {
	if k < 1 || k > MaxEpisodes {
		return fmt.Errorf("episodes = %d: must be an integer in [1, %d]", k, MaxEpisodes)
	}
	return nil
}

// GaussianRunEpsilon composes k releases of a muEpisode-GDP mechanism (a Gaussian mechanism with
// mu*Delta/sigma = muEpisode, or any Gaussian mechanism whose Mahalanobis sensitivity is muEpisode) into
// the whole run's guarantee: muRun = sqrt(k) muEpisode exactly, and the eps with kappa(eps, muRun) = delta
// (rounded up so that kappa(eps, muRun) <= delta holds as computed).
func GaussianRunEpsilon(muEpisode float64, k int, delta float64) (muRun, eps float64, err error) {
	if err := checkEpisodes(k); err != nil {
		return 0, 0, fmt.Errorf("gaussian composition: %w", err)
	}
	if math.IsNaN(muEpisode) || muEpisode < 0 || math.IsInf(muEpisode, 0) {
		return 0, 0, fmt.Errorf("gaussian composition: mu_episode = %v: must be finite and >= 0", muEpisode)
	}
	muRun = math.Sqrt(float64(k)) * muEpisode
	eps, err = EpsilonForGDP(muRun, delta)
	if err != nil {
		return 0, 0, fmt.Errorf("gaussian composition: %w", err)
	}
	return muRun, eps, nil
}

// GaussianEpisodeBudget splits a whole run's (epsRun, delta) over k episodes of one secret (Gaussian): the
// run may be muRun-GDP with muRun = kappa_epsRun^{-1}(delta), so each episode muRun/sqrt(k)-GDP, stated as
// (epsEp, deltaEp) with KappaInverse(epsEp, deltaEp) = muRun/sqrt(k) up to rounding. deltaEp = delta unless
// the episode's mu is so small that even eps = 0 has kappa(0, mu) < delta: then epsEp = 0 and
// deltaEp = kappa(0, mu). The result is rounded so that calibrating each episode tightly at (epsEp, deltaEp)
// and composing gives eps <= epsRun at delta as computed.
func GaussianEpisodeBudget(epsRun, delta float64, k int) (epsEp, deltaEp, muEp float64, err error) {
	if err := checkEpisodes(k); err != nil {
		return 0, 0, 0, fmt.Errorf("gaussian run budget: %w", err)
	}
	muRun, err := KappaInverse(epsRun, delta)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("gaussian run budget: %w", err)
	}
	muEp = muRun / math.Sqrt(float64(k))
	if k == 1 {
		return epsRun, delta, muRun, nil
	}
	composed := func(e, d float64) float64 {
		y, err := KappaInverse(e, d)
		if err != nil {
			return math.Inf(1)
		}
		_, er, err := GaussianRunEpsilon(y, k, delta)
		if err != nil {
			return math.Inf(1)
		}
		return er
	}
	deltaEp = delta
	if Kappa(0, muEp) > delta {
		if epsEp, err = EpsilonForGDP(muEp, delta); err != nil {
			return 0, 0, 0, fmt.Errorf("gaussian run budget: %w", err)
		}
		// Rounding in the chain KappaInverse -> sqrt(k) -> EpsilonForGDP: step down by relative 2^-52,
		// 2^-51, ... until the composition is within the run's budget (a few steps at most).
		for i := -52; i < 0 && epsEp > 0 && composed(epsEp, deltaEp) > epsRun; i++ {
			epsEp -= math.Ldexp(epsEp, i)
		}
	} else {
		deltaEp = Kappa(0, muEp)
		for i := -52; i < 0 && deltaEp > 0 && composed(0, deltaEp) > epsRun; i++ {
			deltaEp -= math.Ldexp(deltaEp, i)
		}
	}
	if !(deltaEp > 0) || composed(epsEp, deltaEp) > epsRun {
		return 0, 0, 0, fmt.Errorf("gaussian run budget: epsilon = %v, delta = %v over %d episodes: no per-episode budget rounds to the run's", epsRun, delta, k)
	}
	return epsEp, deltaEp, muEp, nil
}

// logSoftplus returns log(1 + e^x) without overflow.
func logSoftplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// kovLogDelta returns log delta(eps) of the k-fold composition of eps0-DP randomized response (the optimal
// composition, Kairouz, Oh & Viswanath 2015, Theorem 3.3), -Inf where delta(eps) = 0 (eps >= k eps0):
//
//	delta(eps) = sum_{l < c} Bin(k, q)(l) (1 - e^{eps - (k-2l) eps0}),   c = (k eps0 - eps)/(2 eps0),   q = 1/(1+e^{eps0}).
//
// The binomial weights are taken in log space from the larger of the last index and the mode, and the sum
// runs outward only while its terms matter (relative 1e-20): O(sqrt(k)) terms.
func kovLogDelta(eps0 float64, k int, eps float64) float64 {
	kf := float64(k)
	if eps >= kf*eps0 {
		return math.Inf(-1)
	}
	c := (kf*eps0 - eps) / (2 * eps0)
	lmax := int(math.Ceil(c)) - 1 // the largest l with l < c
	if lmax > k {
		lmax = k
	}
	if lmax < 0 {
		return math.Inf(-1)
	}
	logQ := -logSoftplus(eps0)       // log q, q = 1/(1+e^eps0)
	logP := eps0 - logSoftplus(eps0) // log p = log(1-q)
	mode := int(math.Floor((kf + 1) * math.Exp(logQ)))
	if mode > k {
		mode = k
	}
	l0 := min(lmax, mode)
	logPmf := func(l int) float64 {
		lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
		return lg(kf+1) - lg(float64(l)+1) - lg(kf-float64(l)+1) + float64(k-l)*logP + float64(l)*logQ
	}
	weight := func(l int) float64 { return -math.Expm1(eps - float64(k-2*l)*eps0) }
	const rel = 1e-20
	sum := weight(l0) // pmf(l0)/pmf(l0) = 1
	// Downward: pmf(l-1)/pmf(l) = l/(k-l+1) e^{eps0}; pmf decreases below the mode, and weight <= 1.
	r := 1.0
	for l := l0; l > 0; l-- {
		r *= float64(l) / float64(k-l+1) * math.Exp(eps0)
		if r < rel*sum || r == 0 {
			break
		}
		sum += r * weight(l-1)
	}
	// Upward (only when the mode lies below lmax): both the pmf and the weight decrease.
	r = 1.0
	for l := l0; l < lmax; l++ {
		r *= float64(k-l) / float64(l+1) * math.Exp(-eps0)
		t := r * weight(l+1)
		if t < rel*sum || r == 0 {
			break
		}
		sum += t
	}
	if !(sum > 0) {
		return math.Inf(-1)
	}
	return logPmf(l0) + math.Log(sum)
}

// KOVDelta is delta(eps) of the optimal composition of k eps0-DP mechanisms (see kovLogDelta).
func KOVDelta(eps0 float64, k int, eps float64) float64 {
	return math.Exp(kovLogDelta(eps0, k, eps))
}

// LaplaceRunEpsilon returns the whole run's eps at delta for k releases of a pure eps0-DP mechanism
// (Laplace noise) by the optimal composition (ComposeKOV): the least eps with delta(eps) <= delta, to a
// relative 1e-13 and rounded up. delta = 0 gives k eps0 exactly (then basic composition is optimal); k = 1
// and delta > 0 gives the eps < eps0 at which a pure eps0-DP mechanism is also (eps, delta)-DP.
func LaplaceRunEpsilon(eps0 float64, k int, delta float64) (float64, error) {
	if err := checkEpisodes(k); err != nil {
		return 0, fmt.Errorf("laplace composition: %w", err)
	}
	if math.IsNaN(eps0) || eps0 < 0 || math.IsInf(eps0, 0) {
		return 0, fmt.Errorf("laplace composition: epsilon = %v: must be finite and >= 0", eps0)
	}
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return 0, fmt.Errorf("laplace composition: delta = %v: must lie in [0, 1)", delta)
	}
	if delta == 0 || eps0 == 0 {
		return float64(k) * eps0, nil
	}
	ld := math.Log(delta)
	if kovLogDelta(eps0, k, 0) <= ld {
		return 0, nil
	}
	// Bisection down to adjacent floats: where delta(eps) is nearly linear near eps0 (k = 1, small delta)
	// its relative accuracy is set by the last bit of eps.
	lo, hi := 0.0, float64(k)*eps0 // delta(lo) > delta >= delta(hi) = 0
	for it := 0; it < 2200; it++ {
		mid := 0.5 * (lo + hi)
		if mid <= lo || mid >= hi {
			break
		}
		if kovLogDelta(eps0, k, mid) > ld {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// AdvancedComposition is the advanced composition theorem (Dwork, Rothblum & Vadhan 2010, Theorem III.3;
// Dwork & Roth 2014, Theorem 3.20) for k eps0-DP mechanisms at delta:
// eps = sqrt(2 k ln(1/delta)) eps0 + k eps0 (e^eps0 - 1). It is never better than ComposeKOV; dpsim
// prints it for comparison only.
func AdvancedComposition(eps0 float64, k int, delta float64) float64 {
	kf := float64(k)
	return math.Sqrt(2*kf*math.Log(1/delta))*eps0 + kf*eps0*math.Expm1(eps0)
}

// LaplaceEpisodeEpsilon splits a whole run's (epsRun, delta) over k episodes of one pure eps0-DP
// mechanism: the largest eps0 whose optimal k-fold composition (ComposeKOV) is within epsRun at delta.
// delta = 0 gives epsRun/k (rounded down so that k eps0 <= epsRun as computed).
func LaplaceEpisodeEpsilon(epsRun, delta float64, k int) (float64, error) {
	if err := checkEpisodes(k); err != nil {
		return 0, fmt.Errorf("laplace run budget: %w", err)
	}
	if math.IsNaN(epsRun) || epsRun <= 0 || math.IsInf(epsRun, 0) {
		return 0, fmt.Errorf("laplace run budget: epsilon = %v: must be finite and > 0", epsRun)
	}
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return 0, fmt.Errorf("laplace run budget: delta = %v: must lie in [0, 1)", delta)
	}
	run := func(e float64) float64 {
		v, err := LaplaceRunEpsilon(e, k, delta)
		if err != nil {
			return math.Inf(1)
		}
		return v
	}
	lo := epsRun / float64(k) // k*lo <= epsRun up to rounding: basic composition bounds the optimal one
	for i := 0; i < 64 && run(lo) > epsRun; i++ {
		lo = math.Nextafter(lo, 0)
	}
	if delta == 0 {
		return lo, nil
	}
	hi := 2 * lo
	for i := 0; i < 1100 && run(hi) <= epsRun; i++ {
		lo, hi = hi, 2*hi
	}
	for it := 0; it < 200 && hi-lo > 1e-13*lo; it++ {
		mid := 0.5 * (lo + hi)
		if run(mid) <= epsRun {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// RunGuarantee is the guarantee of a whole run: k episodes that each release the same secret with fresh
// noise, composed by the named rule.
type RunGuarantee struct {
	Episodes  int       `json:"episodes"`
	Mechanism Mechanism `json:"mechanism"`
	// EpsilonEpisode, DeltaEpisode: the per-episode guarantee the noise was calibrated for.
	EpsilonEpisode float64 `json:"epsilon_episode"`
	DeltaEpisode   float64 `json:"delta_episode"`
	// MuEpisode and MuRun (Gaussian only): the exact GDP parameter of one episode's noise (mu*Delta/sigma,
	// or the Mahalanobis sensitivity for a full Sigma) and of the run, sqrt(k) MuEpisode.
	MuEpisode float64 `json:"mu_episode,omitempty"`
	MuRun     float64 `json:"mu_run,omitempty"`
	// EpsilonRun is the whole run's epsilon at DeltaRun.
	EpsilonRun  float64     `json:"epsilon_run"`
	DeltaRun    float64     `json:"delta_run"`
	Composition Composition `json:"composition"`
	// Note says what the numbers rest on (e.g. a non-tight calibration computed through its exact mu).
	Note string `json:"note,omitempty"`
	// DpEvent and DpEventCurve are the guarantee as accountants' events and its eps(delta) at a few
	// deltas (NewDpEvent; docs/math.md section 9.1), DpEventError why they are absent. They are
	// written beside the guarantee, under dp_event, dp_event_curve and dp_event_error, by RunFields
	// (dpsim calibrate) and record.PointSummary (summary.json).
	DpEvent      *DpEventRecord `json:"-"`
	DpEventCurve []EpsDelta     `json:"-"`
	DpEventError string         `json:"-"`
}

// ComposeGaussian returns the run guarantee of k episodes of a Gaussian mechanism whose exact per-episode
// GDP parameter is muEpisode, at deltaRun. cal is the calibration the noise was made with: a non-tight
// one is composed through its exact mu (smaller than the one its (eps, delta) claim allows), and the note
// says so.
func ComposeGaussian(k int, epsEp, deltaEp, muEpisode, deltaRun float64, cal Calibration) (RunGuarantee, error) {
	muRun, eps, err := GaussianRunEpsilon(muEpisode, k, deltaRun)
	if err != nil {
		return RunGuarantee{}, err
	}
	g := RunGuarantee{Episodes: k, Mechanism: Gaussian, EpsilonEpisode: epsEp, DeltaEpisode: deltaEp,
		MuEpisode: muEpisode, MuRun: muRun, EpsilonRun: eps, DeltaRun: deltaRun, Composition: ComposeGDP,
		Note: "exact: each episode is mu_episode-GDP and k of them are sqrt(k) mu_episode-GDP (Dong, Roth & Su 2022, Cor. 3.3); eps_run solves kappa(eps, mu_run) = delta (Cor. 2.13)"}
	if cal != "" && cal != Tight {
		g.Note += fmt.Sprintf("; the %s calibration adds more noise than its (eps, delta) needs, and the run is composed through its exact mu = mu*Delta/sigma", cal)
	}
	g.setDpEvent(muEpisode)
	return g, nil
}

// ComposeLaplace returns the run guarantee of k episodes of a pure eps0-DP mechanism at deltaRun
// (ComposeKOV).
func ComposeLaplace(k int, eps0, deltaRun float64) (RunGuarantee, error) {
	eps, err := LaplaceRunEpsilon(eps0, k, deltaRun)
	if err != nil {
		return RunGuarantee{}, err
	}
	note := "optimal composition of k pure eps-DP mechanisms (Kairouz, Oh & Viswanath 2015, Thm 3.3): exact for the worst eps-DP mechanism, an upper bound for Laplace noise"
	if deltaRun == 0 {
		note += "; at delta = 0 it is k eps (basic composition is optimal)"
	}
	g := RunGuarantee{Episodes: k, Mechanism: Laplace, EpsilonEpisode: eps0, EpsilonRun: eps, DeltaRun: deltaRun,
		Composition: ComposeKOV, Note: note}
	g.setDpEvent(eps0)
	return g, nil
}
