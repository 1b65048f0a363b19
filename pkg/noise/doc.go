// Package noise generates the privacy noise a plant or a consensus agent adds to what it publishes.
//
// A Stream yields one noise vector gamma(t) per step of an episode (one Monte Carlo run). Reset starts
// an episode from a caller-supplied random source - in dpsim always a noise stream of pkg/rng, e.g.
// rng.NewNoise(seed, rng.Label("plant"), 0, episode) (ChaCha8 keyed by SHA-256 of the seed and the
// path) - so every episode is reproducible from the run seed and different paths give independent
// streams. Next writes gamma(t) and advances t. Neither allocates, so a stream can run 10^8 steps
// inside an audit.
//
// Streams are the float sampler (privacy.sampler: float): textbook float64 noise, private in the
// reals only. The default secure sampler is SecureStream (secure.go) over ExactSampler (exact.go):
// exact normal and Laplace samples and the release rounded exactly to a grid, so the published
// float64 values are as private as the real mechanism (docs/math.md section 10).
//
// The designs (docs/math.md sections 3-5, Kind in kind.go names them):
//
//   - Structured (Algorithm 1 / Theorem 3, Algorithm 2 for Laplace): gamma(t) = C_m A_m^t S eta with
//     eta ~ N(0,1)^r or Laplace(0,1)^r drawn ONCE per episode; S = sqrt(Sigma) (Gaussian) or sigma I
//     (Laplace, eq. (14)). The stream keeps z(t) = A_m^t S eta and updates z <- A_m z, so a step costs
//     O(nz^2 + m nz) whatever t is. The noise lives in the signal subspace of the private model: an
//     eavesdropper's estimate of the initial state never improves with t (see pkg/estimate).
//   - IID (iid-calibrated and iid-naive; they differ only in the scale the caller passes): a fresh
//     N(0, scale^2) or Laplace(0, scale) value per component and step.
//   - None: zeros.
//   - Consensus offsets gamma_i(t) = sigma_i eta_i (Section 6): NewOffset, a 1x1 structured stream.
//
// Laplace(0, b) has density exp(-|x|/b)/(2b) and variance 2 b^2 (not b^2): a Laplace stream of scale b
// has per-component covariance 2 b^2 where a Gaussian of scale sigma has sigma^2.
package noise
