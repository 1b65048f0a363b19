// Package estimate holds the eavesdropper's estimators: pure cores that see only the transcript
// (what went over the bus), never the truth, and estimate the private initial states.
//
// Cloud control (Section 5, docs/math.md section 4). The plant x(t+1) = A x + B u, y = C x publishes
// yhat(t) = C x(t) + gamma(t) and receives u(t). Given yhat(0..t) and u(0..t-1),
//
//	yhat(s) = C A^s x0 + C sum_{r<s} A^{s-1-r} B u(r) + gamma(s),
//
// so the known input part can be subtracted and x0 is estimated by least squares on the affine
// manifold (eq. (19)-(20)): x0_hat = argmin ||Y - O_t x0 - known||^2 = (O_t'O_t)^{-1} O_t'(Y - known).
// ControlEstimator keeps O_t'O_t, O_t'(Y - known), the row block C A^t and the input-driven state
// incrementally: a step costs O(ny nx^2 + nx nu) and never allocates, whatever t. The closed loop does
// not matter: u(t) depends on past yhat, but the eavesdropper sees u, so the known part is exact.
//
// What the estimate converges to depends on the noise, and that is the point of the structured design:
//
//   - none: x0_hat = x0 exactly as soon as O_t has full column rank (t >= nx - 1 for ny = 1).
//   - structured (Theorem 3): gamma(t) = C A^t z with z = sqrt(Sigma) eta, so yhat is exactly the
//     noise-free transcript of the initial state x0 + z: x0_hat = x0 + z at every t - the error is flat,
//     no amount of observation averages the noise away.
//   - i.i.d. per step (iid-naive / iid-calibrated): the error covariance is s^2 (O_t'O_t)^{-1}, which
//     shrinks like 1/t for a marginally stable A (1/sqrt(t) in RMS): an i.i.d. design calibrated for one
//     release leaks more with every step.
//
// The estimator works on whatever (A, B, C) it is given. With the paper's position-only private
// model (A_m = 1, C_m = 1, velocity treated as input) the adversary still uses the plant's own model
// A = [1 Ts; 0 1], B = [Ts^2/2; Ts], C = [1 0]: the noise gamma(t) = sigma eta is then C A^t (sigma eta, 0),
// inside the plant's signal subspace, and the estimate is x0 + (sigma eta, 0).
//
// Average consensus (Section 6, docs/math.md section 5). Agent i publishes y_i(t) = x_i(t) + gamma_i and
// updates x_i(t+1) = x_i(t) + u_i(t) with u_i(t) = sum_j w_ij (y_j(t) - y_i(t)), computed from broadcast
// values the eavesdropper also sees. Hence y_i(t) - sum_{s<t} u_i(s) = x_i(0) + gamma_i at every t,
// and the least-squares estimate (the mean of that sequence) equals x_i(0) + gamma_i exactly: with the
// paper's constant offsets the noise is never averaged away. ConsensusEstimator does this for one
// agent, NetworkEstimator for all agents from the full y vector per step.
//
// ProjectScore turns an estimate into the score of the distinguishing game (docs/math.md section 6).
package estimate
