// Package vecsum releases the sum of n vectors in R^d under (epsilon, delta)-differential privacy with
// the mechanisms of Poulsen, "Differentially private vector sums in the case of normally distributed
// data" (docs/math.md section 7). Neighbouring data sets differ in one row (Definition 2.1, replacement;
// n is public).
//
//   - Algorithm 1, the Gaussian mechanism (PlanBox with MethodGaussian): rows in a box
//     prod_j [lo_j, hi_j], per-coordinate sensitivity Delta_j = hi_j - lo_j, noise Delta_2 sigma_opt on
//     every coordinate, expected error d sigma_opt^2 ||Delta||_2^2 (eq. (1)).
//   - Algorithm 2, the elliptical Gaussian mechanism (MethodElliptical): noise sigma_opt Delta_j / b_j
//     with the optimal b_j = sqrt(Delta_j / sum Delta) (Theorem 3), error sigma_opt^2 ||Delta||_1^2
//     (eq. (6)), a factor d ||Delta||_2^2 / ||Delta||_1^2 in [1, d] better.
//   - Algorithm 3 for normal data x_ij ~ N(mu_j, sigma_j^2) (PlanNormal, NormalPlan.Sum, Accumulator):
//     centre at mu_hat, scale by b_j = 1/sqrt(sigma_j sum_i sigma_i) (Lemma 4.1), clip to radius C with
//     Pr[||(x - mu) . b|| > C] = p_C (default 1/n; C from the generalized chi-square upper quantile of
//     pkg/gchisq, as the paper does with chi2comb), add N(0, (2 C sigma_opt / b_j)^2). The factor 2 is
//     the diameter of the clipping ball: replacing one clipped row moves the scaled sum by at most 2C.
//     Expected noise error (2 C sigma_opt)^2 sum_j b_j^-2 = 4 sigma_opt^2 C^2 (sum sigma)^2 (eq. (9)).
//
// sigma_opt (Theorem 2) is the exact analytic Gaussian mechanism multiplier of Balle & Wang,
// 1/privacy.KappaInverse(eps, delta).
//
// # The comparison of Section 5 (the thesis figure)
//
// Without the scaling the centred data are clipped at C_n with the same clipping probability and every
// coordinate gets 2 C_n sigma_opt, an expected error d (2 C_n sigma_opt)^2. (Section 5 prints
// E_n = (2 C_n sigma_opt)^2; without the factor d the "gain" E_n/E_t would be 1/d for equal sigmas,
// contradicting the paper's own observation that it lies in [1, d], so the factor is a typo.) GainTable
// and WriteGainPlot reproduce Figure 2: Zipf sigma_i = i^-alpha / sum_j j^-alpha, alpha in [1e-2, 1e2],
// d in {10, 100, 1000}, n in {1e2, 1e3, 1e6}. The gain rises from 1 to d with alpha; unlike the paper's
// remark that "n has no impact", larger n gives a moderately larger gain at intermediate alpha (e.g.
// d = 1000, alpha = 1: 72, 86, 107 for n = 1e2, 1e3, 1e6).
//
// # Clipping error
//
// The paper ignores the error clipping itself causes. EstimateClipError estimates it for normal data
// (importance sampling of the rare clipping event), NormalResult.ClipError reports the realised value
// on a data set (a non-private diagnostic), and the tests check both against simulation.
//
// # Mean estimate
//
// Algorithm 3 needs a centre. When none is given, PrivateMean spends part of the budget on it (the
// caller chooses the split; the command uses 25% of epsilon and of delta, basic composition): a
// stability-based histogram per coordinate for a coarse centre, then the elliptical Gaussian mechanism on
// the rows clamped to c_j +- 8 sigma_j. The mean estimate's uncertainty is added to the data variance
// (sigma_j^2 + Var(mu_hat_j - mu_j)) before planning, so the clip radius covers it. This is feasible
// only when n is large compared with d log(d/delta)/eps; otherwise pass the mean.
//
// # Implementation notes
//
// The paper's pseudo-code for Algorithm 3 adds mu_hat to every clipped scaled row before dividing by b;
// the centre belongs to the original space, so a clipped row contributes mu_hat + (C/||x~_i||)(x_i -
// mu_hat). Rows are summed in blocks of 64 by one fused pass (norm and column sum, within 2x of a plain
// sum for n = 10^6, d = 10); a block with a clipped row is summed again row by row with the clipped
// values, so an outlier never enters a sum (adding it and subtracting it later would lose the other rows
// to rounding). Standard deviations above MaxSigma and box widths above MaxWidth are refused (their squares would
// overflow); the clipping error of a huge outlier may still be +Inf (a diagnostic).
// Noise is drawn from the math/rand/v2 stream passed in (PCG seeded via pkg/rng); that stream and
// float64 Gaussian sampling are fine for simulation and evaluation but are not a hardened DP sampler.
package vecsum
