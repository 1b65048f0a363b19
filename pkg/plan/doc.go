// Package plan resolves a validated scenario into the concrete privacy design a run uses:
// the private model, the sensitivity under the chosen adjacency with its worst adjacent pair,
// the calibrated noise (Algorithm 1 or 2, or a named baseline), the rank condition (8), and
// factories for the noise streams the plant or agents inject at their edge.
//
// One plan serves every consumer - `dpsim calibrate`, the in-process engine, the plant and
// agent processes, and the auditor - so a calibration is computed in exactly one place.
//
// New is also where a scenario's dynamics are solved, once per point (scenario.Parse solves
// none): the plant, the gains (an LQR design), the observer-controller, or the graph and its
// rate alpha. What only they refuse is a *scenario.ValidationError naming the field and its
// line, as Parse's problems; what they make suspicious is in Plan.Warnings.
//
// Noise kinds (docs/math.md section 4), for a private model (A_m, C_m) over T steps:
//
//   - structured: Lambda_bar = O_T (Theorem 3); Gaussian noise gamma(t) = C_m A_m^t sqrt(Sigma) eta
//     with the optimal Sigma of the LMIs (12), Laplace gamma(t) = C_m A_m^t b eta (Algorithm 2);
//     eta is drawn once per run.
//   - iid-calibrated: Lambda = sigma I over the whole released trajectory, sigma from Theorem 1
//     with the output-space sensitivity (sound; r = T n_y).
//   - iid-naive: fresh per-step noise calibrated for one single release (unsound over T steps:
//     the auditor shows it).
//   - none: no noise; the rank condition (8) fails and no guarantee holds.
//
// Consensus (Section 6) uses the same machinery with the scalar agent model (A, C) = (1, 1):
// every agent adds gamma_i(t) = sigma_i eta_i with eta_i drawn once per run (eqs. (29)-(31)).
//
// Calibrate states a scenario's calibration as `dpsim calibrate SCENARIO` prints it: the scale,
// the sensitivity, the worst adjacent pair, the model it came from and the conditioning.
package plan
