// Package sim holds the role cores of a dpsim run and the fast in-process Monte Carlo engine.
//
// # Roles
//
// Each role is a deterministic value with step functions: no I/O, no goroutines, no allocation per
// step. The same cores run inside the NATS processes (cmd/plant, cmd/cloud, cmd/agent,
// cmd/eavesdropper) and inside RunFast, so there is one implementation of every algorithm.
//
//   - PlantNode (cloud control, Section 5, eq. (23)): the true state x(t); publishes
//     yhat(t) = C x(t) + gamma(t), the noise injected at its edge (Theorem 3); applies u(t).
//   - CloudNode: the observer-based tracking controller of eq. (24); sees only yhat.
//   - AgentNode i (consensus, Section 6, eq. (25)): publishes y_i(t) = x_i(t) + gamma_i(t) and
//     updates x_i(t+1) = x_i(t) + sum_j w_ij (y_j(t) - y_i(t)) from its neighbours' messages, taken
//     in ascending neighbour index (dynamics.Graph.Neighbors order; AgentNode.Neighbors).
//   - EavesdropperNode: sees only the transcript (yhat and u; or every y) and estimates x(0) by least
//     squares on the affine manifold (pkg/estimate). It never sees the truth.
//
// # Random streams (contract)
//
// The noise of episode e is drawn from
//
//	plant:    rng.New(seed, rng.Label("plant"), 0, uint64(e))
//	agent i:  rng.New(seed, rng.Label("agent"), uint64(i), uint64(e))
//
// reseeded by Begin. Nothing else in this package draws random numbers. A NATS process and RunFast
// given the same (plan, seed, episode) therefore produce bit-identical values.
//
// # Step order (contract: the NATS engine reproduces it exactly)
//
// Cloud control, for t = 0..T-1 after PlantNode.Begin(e, x0), CloudNode.Begin(e),
// EavesdropperNode.Begin(e):
//
//  1. plant.Emit(yhat): yhat(t) = C x(t) + gamma(t)
//  2. eavesdropper.ObserveYhat(t, yhat)
//  3. cloud.Step(t, yhat, u): u(t) = -K (xhat(t) - x_r(t)), then xhat(t+1)
//  4. eavesdropper.ObserveU(t, u) (2 and 4 may arrive in either order; the step completes on both)
//  5. record: X = x(t), Ref = x_r(t), Yhat, U, Xhat = xhat(t), EveX0 = estimate from yhat(0..t)
//  6. plant.Apply(u): x(t+1) = A x(t) + B u(t)
//
// then a terminal record with X = x(T).
//
// Consensus, for t = 0..T-1 after every AgentNode.Begin(e, x_i(0)) and EavesdropperNode.Begin(e):
//
//  1. every agent i: record x_i(t), then y_i = Emit()
//  2. eavesdropper.ObserveConsensus(t, y)
//  3. record: X = x(t), Y = y(t), EveX0 = estimate from y(0..t)
//  4. every agent i: Update(y_i, [y_j for j in Neighbors()])
//
// then a terminal record with X = x(T). Each agent's arithmetic depends only on its own state and
// the step-t messages, so agents may update in any order or in different processes.
//
// # Records and results
//
// ControlRecord / ConsensusRecord are the per-step trace model, written as JSON lines by
// WriteTrace / TraceWriter and read by ReadTrace. Every field comes from exactly one role (plant:
// X, Yhat; cloud: U, Xhat; eavesdropper: EveX0; Ref from the scenario; agent i: its entries of X and
// Y, written as AgentRecords), so each process writes partial records and MergeControl /
// MergeConsensus join them by (episode, step), reporting what is missing.
//
// One JSON line per record (nil fields are omitted; floats round-trip exactly):
//
//	{"episode":0,"step":2,"x":[0.0295,0.5896],"ref":[0.964,1.66e-06],"yhat":[-0.534],"u":[4.652],"xhat":[-0.556,0.1285],"eve_x0":[-0.5635,2.5e-15]}
//	{"episode":0,"step":100,"x":[1.5639,-0.000358],"ref":[1,0]}
//	{"episode":0,"step":3,"agent":4,"x":2,"y":1.5}
//
// (a control step, the terminal control record, an agent's record).
//
// Metrics are computed from records by one implementation, the Accumulator (AggregateControl and
// AggregateConsensus wrap it). It streams: O(T d) memory per episode in flight, and folds episodes
// in episode order so the Results are bit-identical whatever the arrival order or the number of
// workers. Results is the JSON shape of summary.json "metrics"; see its field docs.
//
// The horizon: T = scenario steps is the number of releases (the privacy horizon of O_T), steps
// t = 0..T-1; per-step series of the state (tracking errors, consensus deviations) have T+1 entries
// t = 0..T, the eavesdropper's error series T entries t = 0..T-1. "Final" means t = T.
package sim
