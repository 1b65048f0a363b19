// Package john computes the John ellipsoid (the largest-volume inscribed ellipsoid) of a
// symmetric polytope P = {x : |a_i^T x| <= 1, i = 1..n}, A = [a_1 .. a_n]^T of size n x d,
// n >= d, rank d, following J. Gu, X. Li, Y. Liang, Z. Shi, Z. Song and J. Yu, "Fast John
// Ellipsoid Computation with Differential Privacy Optimization".
//
// # Problem
//
// For weights w >= 0 let Q(w) = A^T diag(w) A and h_i(w) = a_i^T Q(w)^{-1} a_i (Definition
// 3.8). The John ellipsoid is E* = {x : x^T Q x <= 1} with Q = Q(w*), where w* is the fixed
// point w_i = w_i h_i(w) (Lemma 3.3: sum w* = d, h_i = 1 where w*_i > 0, h_i < 1 elsewhere).
// A weight vector v is a (1+xi)-approximation (Definition 3.4) when sum v = d and
// h_i(v) <= 1 + xi for all i; then E/sqrt(1+xi) is inside P and P is inside sqrt(d) E
// (Lemma 3.5). Every Result reports the quantities a user needs to check this: the weights
// v (sum d), Q, sum v, max_i h_i(v) computed exactly, log det Q, the iterations and time.
//
// # Exact method
//
// w_1 = d/n, w_{k+1,i} = w_{k,i} h_i(w_k): per iteration one Gram matrix Q = A^T W A,
// a Cholesky factor Q = U^T U and the leverages h_i = ||a_i^T U^{-1}||^2 (a triangular
// solve per row): O(n d^2). Each iterate sums to d (sum_i w_i h_i(w) = tr I = d) and
// w_{T+1,i} is a leverage score, at most 1, so by the convexity of log h_i (Lemma 3.9) the
// average u of w_1..w_T satisfies log h_i(u) <= (1/T) sum_k log(w_{k+1,i}/w_{k,i}) <=
// ln(n/d)/T. Hence DefaultMaxIter = ceil(ln(n/d)/ln(1+xi)) is a proven iteration count
// (Cohen, Cong, Song, Zhuo). The normalised last iterate is verified for free every
// iteration (h(c w) = h(w)/c) and the run stops once it meets 1 + xi; in practice this is
// much earlier than the bound (25 instead of 80 iterations at n = 1e5, d = 50, xi = 0.1).
// The output is whichever of the last iterate and the average is verified better.
//
// # Fast method (Algorithm 1 without noise)
//
// Per iteration k with B_k = sqrt(W_k) A:
//
//   - line 14, O(1)-approximate leverage scores of B_k: tau_i = w_{k,i} hs_{k-1,i}, where
//     hs_{k-1,i} = ||S_{k-1} U_{k-1}^{-T} a_i||^2 / s is the sketched leverage the previous
//     iteration computed anyway (an unbiased JL estimate of a_i^T P_{k-1}^{-1} a_i). For
//     k = 1 it comes from a CountSketch subspace embedding of B_1 with 2 d^2 rows
//     (Clarkson-Woodruff). The estimate is in P_{k-1}'s metric; if the power-iteration
//     estimate of lambda_max(P_k^{-1} P_{k-1}) exceeds RefreshRatio = 4 (the factor by
//     which it can undershoot), the scores are recomputed in P_k's metric and the sample
//     redrawn (Result.Refreshes counts this; it is rare after the first iterations);
//   - line 15, leverage-score sampling: row i is kept with probability
//     p_i = min(1, N tau_i / sum tau) and weight 1/p_i, so P_k = B^T D_k B is unbiased for
//     B^T B; N = ceil(SampleConstant d ln(d+1) / xi), SampleConstant = 4 (the paper's
//     N = Theta(xi0^{-2} d log(nd/delta1)) with one power of 1/xi: the sampling errors of
//     the T iterations are independent and average out like the sketch's). Once the
//     weights concentrate the heavy rows are kept with p_i = 1 and the sample is small
//     (about 900 rows at n = 1e5, d = 50);
//   - lines 16-18, Gaussian sketch S_k (s x d, iid N(0,1), Definition 3.10):
//     wbar_i = ||S_k P_k^{-1/2} sqrt(w_i) a_i||^2 / s, computed as w_i ||M a_i||^2 / s with
//     M = S_k U_k^{-T} (same law, a Gaussian S is rotation invariant): one n x d times d x s
//     product. s = ceil(SketchConstant / xi), SketchConstant = 1 (s = 10 at xi = 0.1);
//   - lines 23-28: the output is the average of the iterates, normalised to sum d.
//
// Cost O(n d s + N d^2 + d^3) per iteration against O(n d^2) for exact. The sketch gives
// each weight a multiplicative error of relative variance 2/s per iteration; averaging T
// iterates reduces it, and the union over n rows costs sqrt(ln n), so the default is
// T = ceil(FastIterConstant ln(n) V / (2 xi^2)), V = 2/s (plus 1/12 for dp), with
// FastIterConstant = 8 fitted on seeded Gaussian polytopes (n = 500..3000, d = 5..20,
// xi = 0.1, 20 seeds per size and method: 0 of 120 runs missed 1 + xi, worst max h 1.086;
// with 6 instead of 8 the worst was 1.099, with 4 four runs failed). The paper's
// T = Theta(xi^{-2} log(n/delta0)) has the same shape. Config.CheckEvery stops as soon as
// the averaged iterate is verified (one exact evaluation per check).
//
// Measured (n = 1e5, d = 50, xi = 0.1, 2 cores shared with other jobs; BenchmarkIteration
// and BenchmarkToleranceFast): one exact iteration costs 145 ms of CPU, one fast iteration
// 21 ms (about 7x; 7-10x in wall time depending on the load), dp the same as fast. But
// Algorithm 1 needs many more iterations: 300 to a verified max h <= 1.1 (checked every 25)
// against 25 for the exact last iterate, so its time to tolerance is about twice the exact
// method's (5.1-5.3 s against 2.5-2.8 s wall; 7.2 against 3.7 CPU seconds). The sketch
// saves work per iteration, not in total, at this size.
//
// # DP method and what is (not) guaranteed
//
// Lines 19-20: w_{k+1,i} = wbar_{k+1,i} (1 + z_{k+1,i}), z iid N^T(0, sigma^2, [-0.5, 0.5])
// (Definition 6.5, TruncatedNormal). The paper's sigma (Theorem 6.7) is
// Theta(L eps0 sqrt(T log(1/delta)) / ((1 - 2 L eps0) eps)) with L = poly(n, d, kappa(A),
// ...) and unspecified constants. This package exposes sigma (Config.NoiseScale) and
// claims no privacy guarantee: Result.Guarantee is always GuaranteeNone, because none of
// the following can be justified.
//
//  1. No global Lipschitz constant exists. Neighbours are eps0-close: one row moves by at
//     most eps0 (Definition 1.2). Let a_j = 0 in A (a vacuous constraint) and
//     ||a'_j|| = eps0 in A'. Under A the update w_j h_j is exactly 0 and the multiplicative
//     noise keeps it 0; under A' it is positive. The output laws have disjoint supports:
//     delta = 1 whatever sigma. Rows that are tiny rather than zero give the same effect
//     whenever the ratio of the two updates leaves [1/3, 3] (the noise supports
//     [wbar/2, 3 wbar/2] no longer overlap). So the (eps, delta) claim can only hold on a
//     restricted domain (the paper assumes sigma_min(A) >= 1/poly(d) etc. and
//     eps0 <= 0.1 sigma_min(W_k^{1/2} A), conditions on the private data and on the
//     iterates).
//  2. The Lipschitz bound one can compute is local. LocalSensitivity bounds, at given
//     public weights w, the relative change r_i = F_i(A')/F_i(A) - 1 of the exact update
//     F_i = w_i h_i(w; A) over all eps0-neighbours A' (derivation below); it is a proof, and
//     the tests check it against random and adversarial neighbours (it is within a factor
//     1.2-1.6 of the worst change found). But it depends on A (through lambda_min(Q),
//     h_j and the row geometry), so noise calibrated from it is data-dependent (it can
//     reveal A), and it holds at one w: along the run the weights concentrate and the
//     sensitivity changes.
//  3. Algorithm 1's randomness is not Lipschitz in A: the sampling probabilities D_k
//     depend on A and a row moving can flip which rows are sampled; the rank-s sketch can
//     nearly annihilate a_j, so the relative change of wbar_j is unbounded.
//  4. Q = A^T V A, max_leverage and logdet_q are computed from A itself after the noisy
//     iterations; they are not covered by any noise (only v could be).
//
// What is reported instead: NoiseScale, NoiseSource and, with Eps0 > 0, the local
// Sensitivity at w_1. Without an explicit sigma, CalibrateNoise derives one from
// (eps, delta, eps0) as the noise an idealised mechanism would need: T rounds of a
// Gaussian mechanism whose noise variables shift by at most beta = Sensitivity.ZShift
// (Lemma 6.6's beta = L eps0) compose to mu-GDP with mu = sqrt(T) beta / sigma (Dong, Roth,
// Su), and mu-GDP is (eps, delta)-DP iff kappa_eps(mu) <= delta (privacy.KappaInverse).
// This fixes the paper's c2 and replaces L eps0 by the local bound; it is labelled
// "calibrated-heuristic" and still carries GuaranteeNone. Since |z| <= 0.5, a sigma above
// 0.5 makes z nearly uniform (variance at most 1/12): more sigma then adds almost no
// noise, a further reason the paper's sigma ~ sqrt(T) cannot buy privacy here. The default
// T for dp uses the largest noise variance 1/12, so the accuracy target is met whatever
// sigma is (tests: sigma = 0.05, 1 and calibrated).
//
// Early stopping (CheckEvery) evaluates the private A; with dp it is one more
// data-dependent release.
//
// # Local sensitivity (derivation)
//
// Fix w, let Q = A^T W A, u_i = Q^{-1/2} a_i (|u_i|^2 = h_i), e = eps0/sqrt(lambda_min(Q))
// and change row j: b = u_j, b' = Q^{-1/2} a'_j, |b' - b| <= e. Then
// Q^{-1/2} Q' Q^{-1/2} = I + Delta with Delta = w_j (b' b'^T - b b^T), rank <= 2, and
// ||Delta|| <= delta_j = w_j (2 sqrt(h_j) e + e^2) (< 1 required). For i != j,
// h'_i/h_i - 1 = -u_i^T G u_i / |u_i|^2 with G = (I + Delta)^{-1} Delta, ||G|| <= g_j =
// delta_j/(1 - delta_j), G = P_V G P_V for V = range(Delta); so |r_i| <= g_j |P_V u_i|^2/|u_i|^2
// <= g_j and sum_{i != j} r_i^2 <= g_j^2 tr(P_V M P_V) <= g_j^2 (lambda_1 + lambda_2)(M) with
// M = sum_i u_i u_i^T / |u_i|^2 (Ky Fan). For i = j, h'_j = b'^T (I + Delta)^{-1} b' with
// |b'| in [sqrt(h_j) - e, sqrt(h_j) + e], so r_j is in
// [(1 - e/sqrt(h_j))^2/(1 + delta_j) - 1, (1 + e/sqrt(h_j))^2/(1 - delta_j) - 1]
// (unbounded when sqrt(h_j) <= e). L2 = max_j sqrt(r_j^2 + g_j^2 (lambda_1 + lambda_2)).
// In z-space: w = F(1+z) = F'(1+z') gives |z'_i - z_i| <= 1.5 |r_i| / (1 - |r_i|), hence
// ZShift = 1.5 L2 / (1 - MaxAbs).
//
// # Implementation
//
// The solvers are pure (no I/O, no logging); Plot, the accuracy experiment of dpsim john
// --plot-out (Curves: max_i h_i(v) - 1 of each method's output against its iterations, drawn by
// AccuracyFigure in pkg/figure's style), is the one function that writes files. Solver.Step advances one iteration without
// allocating (the tests measure 0 allocations with 1 and 2 workers). Rows are cut into at
// most 16 fixed chunks of 128-row tiles, processed by a persistent worker pool with serial
// gonum BLAS calls (Dgemm for the Gram and sketch products, Dtrsm for the leverages) and
// reduced in chunk order, so results are bit-identical for any worker count. Randomness
// comes from pkg/rng streams derived from Config.Seed.
package john
