// Package sim is the machine of a dpsim run: the role cores, the Driver that runs them over a
// Transport, the in-memory Network, hosts of agents, and checkpoints. What the cores produce
// is elsewhere: their records, the trace format and the one join in pkg/trace, the metrics in
// pkg/metrics, and the in-process engines that drive the machine (the fast Monte Carlo
// engine, the auditor's episode player, sweeps) in pkg/engine.
//
// # Roles
//
// Each role's arithmetic (Plant, Controller, Agent, Estimator: arithmetic.go) is a deterministic
// value with step functions (no I/O, no goroutines, no allocation per step), wrapped in a Core: a message-driven state machine in the manner of etcd
// raft's Step/Ready. Messages and deadlines go in (Core.Deliver, Core.Tick), messages to release
// and partial records come out (Core.Ready). The same cores run inside the NATS processes
// (cmd/plant, cmd/cloud, cmd/agent, cmd/eavesdropper) and inside the engines of pkg/engine (engine.Run, engine.Player),
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
// The noise of episode e is drawn from the ChaCha8 streams (docs/protocol.md section 12)
//
//	plant:    rng.NewNoise(seed, rng.Label("plant"), 0, uint64(e))
//	agent i:  rng.NewNoise(seed, rng.Label("agent"), uint64(i), uint64(e))
//
// reseeded by Begin (the secure sampler reads their digits; the float sampler a rand.Rand over them), and the fate of every message on a faulty link from the counter stream of
// (seed, rule, link, e, t) (pkg/fault). Nothing else draws random numbers. A NATS process and
// engine.Run given the same (plan, seed, episode) therefore produce bit-identical values.
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
// # Records
//
// Core.Ready carries partial records (pkg/trace): each role writes only its own fields of a
// step (plant: X, Yhat; cloud: U, Xhat; eavesdropper: EveX0; agent i: its entries of X and Y),
// and pkg/trace's join puts them together by (episode, step), in memory (pkg/engine) or from
// the NATS processes' trace files (the launcher). The horizon T and the terminal record at
// t = T are described there.
package sim
