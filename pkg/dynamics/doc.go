// Package dynamics holds the plant, controller and consensus cores of dpsim and the stacked
// trajectory operators that turn them into mechanisms over affine manifolds (Ren, Wang, Yuan,
// Shi, "Differential privacy over affine manifolds", journal version, Sections 5-6; docs/math.md
// sections 4-5).
//
// Cloud control (Section 5). An LTI plant x(t+1) = A x + B u, y = C x (eq. 16) run for T steps
// has its stacked trajectory x = [x(0); ...; x(T-1)] on the affine manifold D x + b = 0 with
// D = [A -I; ...] (eq. 20, StackedD) and b = (I_{T-1} (x) B) u (eq. 19, InputTerm). The kernel of
// D is spanned by D_perp = [I; A; ...; A^{T-1}] (eq. 21, DPerp), the release map is
// F = I_T (x) C (eq. 18, StackedF) and F D_perp = O_T, the observability matrix (Observability).
// Assumption 1 (rank O_T = nx, A nonsingular) is checked by CheckAssumption1. The plant sends
// y^(t) = C x(t) + gamma(t) (eq. 17) to a cloud controller that runs the observer-based tracking
// law of eq. (24), u = -K (x^ - x_r), x^+ = A x^ + B u + L (y^ - C x^) (ObserverController), with
// references x_r(t) (Reference: TanhReference is the paper's (tanh t, 1 - |tanh(t-9)|)). The gains
// come from the discrete LQR (DARE, DLQR; ObserverGain by duality): the paper's vehicle gains
// K_P' = [3.4240 4.3095] = dlqr(A, B, 20 I, 1) and L = [0.8266; 0.6973] = dlqr(A', C', 2 I, 1)'.
//
// Average consensus (Section 6). Agents on an undirected weighted graph (Graph) run eq. (25),
// x_i(t+1) = x_i + sum_j w_ij (y_j - y_i) with y_i = x_i + gamma_i (ConsensusAgent,
// ConsensusNetwork). The sum of states is preserved, so with constant offsets node i converges to
// xbar0 + mean(gamma) - gamma_i (ConsensusLimit); the contraction rate is
// alpha = max(|1 - lambda_2|, |1 - lambda_n|) of the Laplacian L = Deg - W (Graph.Rate,
// Proposition 1). The paper's 10-node example graph is PaperGraph; ring, path, complete, grid and
// seeded random regular graphs are available for scaling (NamedGraph). Generated graphs use the
// weight 1/(max degree + 1) when none is given, so every node's weight sum stays below 1.
//
// Step functions (Plant.Step, ObserverController.Step, ConsensusAgent.Step,
// ConsensusNetwork.Step) are pure given their state, deterministic and allocation-free: they
// work on row-major []float64 copies of the matrices made at construction.
package dynamics
