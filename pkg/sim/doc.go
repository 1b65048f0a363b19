// Package sim holds the role cores of a dpsim run and the fast in-process Monte Carlo engine.
//
// # Roles
//
// Each role's arithmetic is a deterministic value with step functions (no I/O, no goroutines, no
// allocation per step), wrapped in a Core: a message-driven state machine in the manner of etcd
// raft's Step/Ready. Messages and deadlines go in (Core.Step, Core.Tick), messages to release
// and partial records come out (Core.Ready). The same cores run inside the NATS processes
// (cmd/plant, cmd/cloud, cmd/agent, cmd/eavesdropper) and inside RunFast and the auditor's Loop,
// so there is one implementation of every algorithm.
//
//   - PlantCore (cloud control, Section 5, eq. (23)): the true state x(t); releases
//     yhat(t) = C x(t) + gamma(t), the noise injected at its edge (Theorem 3); applies u(t).
//     u(t) missing at the step's deadline: hold (the newest u received) or zero
//     (faults.missing.plant).
//   - CloudCore: the observer-based tracking controller of eq. (24); sees only yhat. yhat(t)
//     missing: the prediction C xhat(t) (the observer runs open loop for the step).
//   - AgentCore i (consensus, Section 6, eq. (25)): releases y_i(t) = x_i(t) + gamma_i(t) and
//     updates x_i(t+1) = x_i(t) + sum_j w_ij (y_j(t) - y_i(t)) from its neighbours' messages, taken
//     in ascending neighbour index (dynamics.Graph.Neighbors order). y_j(t) missing: reuse-last
//     (the newest y_j received) or skip (the term is 0 this step) (faults.missing.agent).
//   - EavesdropperCore: sees only the deliveries addressed to it and estimates x(0) by least
//     squares on the affine manifold (pkg/estimate) from what it received: a missing output is
//     left out, a missing u(t) replaced by what the plant's rule applies; each record names the
//     messages it missed (EveMissing). It never sees the truth.
//
// # Random streams (contract)
//
// The noise of episode e is drawn from
//
//	plant:    rng.New(seed, rng.Label("plant"), 0, uint64(e))
//	agent i:  rng.New(seed, rng.Label("agent"), uint64(i), uint64(e))
//
// reseeded by Begin, and the fate of every message on a faulty link from the counter stream of
// (seed, rule, link, e, t) (pkg/fault). Nothing else draws random numbers. A NATS process and
// RunFast given the same (plan, seed, episode) therefore produce bit-identical values.
//
// # Step order (contract: it follows from the cores, not from a loop)
//
// No loop sequences the roles. A core completes step t when it has, from every sender it
// expects, the last delivery for step t (on time, or a lockstep gap notice: see pkg/fault), or
// when Tick(t) says the step's deadline passed; then it does its work and releases its next
// message. One Driver runs a set of cores over a Transport: the in-memory Network (every core
// of a run; logical time, deterministic) or a NATS process's adapter (its own cores; wall-clock
// deadlines from a Pacer). Cloud control, step t: the plant releases yhat(t); the cloud,
// having yhat(t), releases u(t); the plant, having u(t), applies it and releases yhat(t+1);
// the eavesdropper completes t when it has yhat(t) and u(t). Consensus, step t: every agent
// releases y_i(t); agent i, having its neighbours' y_j(t), updates and releases y_i(t+1).
// Each core's arithmetic depends only on its own state and the deliveries of the step, never on
// their arrival order, so cores may run in any order or in different processes.
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
