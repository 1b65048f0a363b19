// Package privacy implements differential privacy over affine manifolds (Z. Ren, L. Wang, D. Yuan and
// G. Shi, "Differential Privacy on Affine Manifolds: Geometrically Confined Privacy in Linear Dynamical
// Systems"; equation and theorem numbers are the journal version's): the feasibility conditions of
// Theorems 1 and 2, the sensitivities they need, the structured noise designs of Algorithms 1 and 2, and the
// scalar calibration of Gaussian and Laplace noise.
//
// # Mechanism and manifold adjacency
//
// The mechanism releases M(x) = F x + gamma for data x confined to the public affine manifold
// C_d = {x : D x + b = 0}, with structured noise gamma = Lambda eta, eta i.i.d. N(0, 1) (Gaussian mechanism)
// or Laplace(0, 1) (Laplace mechanism). Two data points are mu-adjacent on the manifold (Definition 4) when,
// for some index set d_j with D_{d_j} nonsingular, exactly one of the free coordinates changes by at most mu
// and the d_j coordinates follow from the constraint: x - x' = Psi_j e_i (x_i - x'_i), eq. (5). The
// [Adjacency] names which index sets are maximised over: [Manifold] is Definition 4 exactly (every valid
// index set), [Block] the T block index sets of Theorem 3 (one time step's state is free). They differ in
// general, and calibrating for Block while claiming Manifold is under-calibration.
//
// # Conditions (Theorems 1 and 2)
//
//   - Rank condition (8): rank(Lambda) = rank([Lambda, F D_perp]) = r. Without it no (eps, delta) holds.
//   - Gaussian (Theorem 1): (eps, delta)-DP iff Delta_N <= kappa_eps^{-1}(delta)/mu, eq. (9), with
//     kappa(eps, y) = Phi(y/2 - eps/y) - e^eps Phi(-y/2 - eps/y), eq. (7) — the exact analytic Gaussian
//     mechanism of Balle & Wang (2018): necessary and sufficient. See [Kappa], [KappaInverse].
//   - Laplace (Theorem 2): (eps, 0)-DP iff Delta_L <= eps/mu, eq. (10).
//
// Delta_N and Delta_L are the 2- and 1-norms of Lambda^+ F (x - x') maximised over adjacent pairs; the
// sensitivity code returns them together with the worst adjacent pair (the pair an auditor should test).
//
// # Noise design (Algorithms 1 and 2)
//
// Lambda_bar is a matrix with the column space of F D_perp (for dynamics the observability matrix O_T, so
// sensitivities are initial-state differences). Algorithm 1 takes gamma = Lambda_bar sqrt(Sigma) eta with
// Sigma >= (mu^2 / kappa_eps^{-1}(delta)^2) N_ij N_ij^T for every adjacent direction N_ij (the LMIs (12)):
// either the scalar Sigma = sigma^2 I or the Sigma of least trace(Lambda_bar Sigma Lambda_bar^T). Algorithm 2
// takes gamma = b Lambda_bar eta with Laplace eta and b >= mu Delta_L / eps, eq. (14).
//
// # Scalar calibration
//
// [GaussianSigma] turns (eps, delta, mu, Delta) into sigma by one of three named [Calibration]s:
//
//   - [Tight] (default): sigma = mu Delta / kappa_eps^{-1}(delta), the least sigma satisfying eq. (9).
//   - [PaperBound]: sigma = mu Delta / (sqrt(PhiInv(delta)^2 + 2 eps) + PhiInv(delta)), the closed form behind
//     the papers' figures (sigma = 2.5244, 23.4765, 232.8495 for eps = 1, 0.1, 0.01, delta = 1e-2); it keeps
//     only kappa's first term, so it is sound but noisier than Tight, increasingly so as eps shrinks
//     (1.34x at eps = 1, 8.4x at eps = 0.01).
//   - [Classic]: sigma = mu Delta sqrt(2 ln(1.25/delta)) / eps (Dwork & Roth), refused for eps >= 1.
//
// [GaussianSatisfies] is the defining inequality itself, kappa(eps, mu Delta / sigma) <= delta; every sigma
// returned satisfies it. [LaplaceScale] gives b = mu Delta_L / eps; a Laplace variable of scale b has
// variance 2 b^2. [EpsilonForGDP] converts an audited mu-GDP into the eps it certifies at a given delta
// (kappa(eps, mu_gdp) = delta, docs/math.md section 6).
//
// # Numerics
//
// Kappa is computed through the Mills-ratio form kappa = phi(A) (R(A) - R(B)), A = eps/y - y/2,
// B = eps/y + y/2, with the exponential factor in log space and the difference by Gauss-Legendre quadrature of
// -R' when y <= 1: relative error about 1e-13 or better wherever kappa >= 1e-300 (checked against 80-digit
// references for eps in [0, 50]); [LogKappa] stays finite far below that. KappaInverse runs Newton's method
// on log kappa, which is concave in y, from a point below the root: a few microseconds per call, no
// allocation. The package is pure: no I/O, no logging, errors name the offending value.
//
// CalibrateScalar is a scalar mechanism's calibration (`dpsim calibrate --epsilon ...`), with
// EpisodeBudget splitting a whole run's budget over its episodes (docs/math.md section 9).
package privacy
