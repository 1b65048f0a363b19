package vecsum

import (
	"math"
	"math/rand/v2"
	"slices"
)

// MeanEstimate is a differentially private estimate of the mean of normal data with known standard
// deviations, used as the centre of Algorithm 3 when no mean is given.
//
// Method (two stages, budget (eps, delta) split evenly between them, basic composition, Lemma 2.2):
//
//  1. Coarse centre, per coordinate: a stability-based histogram (Karwa & Vadhan 2018, Lemma 2.3
//     there) with bins of width 4 sigma_j (the
//     best-placed bin holds at least 48% of the rows wherever mu_j lies). Every non-empty bin count gets Laplace(2/eps_h) noise; bins
//     whose noisy count is at most tau = 1 + (2/eps_h) ln(2/delta_h) are suppressed; the centre c_j is
//     the midpoint of the largest released bin. Replacing one row changes two counts by one (L1
//     sensitivity 2), and a bin that exists in only one of the two data sets has count 1 and is released
//     with probability at most delta_h/4, so each coordinate is (eps_h, delta_h)-DP; the d coordinates use
//     eps_h = eps/(2d), delta_h = delta/(2d) each.
//  2. Refinement: the elliptical Gaussian mechanism (Algorithm 2, Theorem 3) on the sum of the rows
//     clamped into the box prod_j [c_j - 8 sigma_j, c_j + 8 sigma_j], with budget (eps/2, delta/2);
//     mu_hat = noisy sum / n.
//
// The whole estimate is (eps, delta)-DP; it fails (error) when no bin passes the threshold, i.e. when n
// is too small for the budget and d - then pass the mean explicitly. Its error is reported so that the
// clip radius can account for it: Variance_j = sigma_j^2 / n + (NoiseSigma_j / n)^2 approximates
// Var(mu_hat_j - mu_j) (the clamping bias is negligible when |c_j - mu_j| <= 4 sigma_j).
type MeanEstimate struct {
	Mean        []float64
	Coarse      []float64 // histogram centres c_j
	NoiseSigmas []float64 // standard deviation of the noise on each coordinate of the mean
	Variance    []float64 // approximate Var(mu_hat_j - mu_j)
	Epsilon     float64   // budget spent
	Delta       float64
}

// PrivateMean estimates the mean of the rows of x (row-major, n d values, d = len(sigmas)) with
// budget (eps, delta); see MeanEstimate. Noise comes from r.
func PrivateMean(x []float64, sigmas []float64, eps, delta float64, r *rand.Rand) (*MeanEstimate, error) {
	if err := checkSigmas(sigmas); err != nil {
		return nil, err
	}
	if err := checkBudget(eps, delta); err != nil {
		return nil, err
	}
	d := len(sigmas)
	if len(x) == 0 || len(x)%d != 0 {
		return nil, inputErr("private mean: %d values do not form rows of %d", len(x), d)
	}
	if err := checkFinite("data", x); err != nil {
		return nil, err
	}
	n := len(x) / d
	epsH, deltaH := eps/(2*float64(d)), delta/(2*float64(d))
	tau := 1 + 2/epsH*math.Log(2/deltaH)
	est := &MeanEstimate{Mean: make([]float64, d), Coarse: make([]float64, d), Variance: make([]float64, d),
		Epsilon: eps, Delta: delta}
	counts := map[int64]int{}
	for j := 0; j < d; j++ {
		w := 4 * sigmas[j]
		clear(counts)
		for i := j; i < len(x); i += d {
			counts[int64(math.Floor(x[i]/w))]++
		}
		// deterministic iteration order is not needed for privacy (every bin gets fresh noise), but
		// keeps runs reproducible from the seed: visit bins in increasing order
		keys := make([]int64, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		best, bestV := int64(0), math.Inf(-1)
		for _, k := range keys {
			v := float64(counts[k]) + laplace(r, 2/epsH)
			if v > tau && v > bestV {
				best, bestV = k, v
			}
		}
		if math.IsInf(bestV, -1) {
			return nil, inputErr("private mean: dimension %d: no histogram bin passes the threshold %.0f "+
				"(n = %d rows, epsilon %.3g, delta %.3g split over %d dimensions); pass the mean explicitly",
				j+1, tau, n, eps, delta, d)
		}
		est.Coarse[j] = (float64(best) + 0.5) * w
	}
	lo, hi := make([]float64, d), make([]float64, d)
	for j := range lo {
		lo[j] = est.Coarse[j] - 8*sigmas[j]
		hi[j] = est.Coarse[j] + 8*sigmas[j]
	}
	plan, err := PlanBox(MethodElliptical, lo, hi, eps/2, delta/2)
	if err != nil {
		return nil, err
	}
	res, err := plan.Sum(x, r, nil)
	if err != nil {
		return nil, err
	}
	est.NoiseSigmas = make([]float64, d)
	for j := range est.Mean {
		est.Mean[j] = res.Sum[j] / float64(n)
		est.NoiseSigmas[j] = plan.NoiseSigmas[j] / float64(n)
		est.Variance[j] = sigmas[j]*sigmas[j]/float64(n) + est.NoiseSigmas[j]*est.NoiseSigmas[j]
	}
	return est, nil
}

func laplace(r *rand.Rand, scale float64) float64 {
	e := r.ExpFloat64() * scale
	if r.IntN(2) == 0 {
		return -e
	}
	return e
}
