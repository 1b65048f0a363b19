// Package auditcmd implements `dpsim audit`, the empirical privacy audit (docs/math.md
// section 6): it plays the distinguishing game against a scenario's system - a challenger picks,
// per trial and secretly, the initial state x or an adjacent x', the system runs one episode, the
// eavesdropper scores what it saw - and turns the scores into lower bounds on epsilon with a
// verdict (pkg/audit). This package holds the command: its flags, its printing and the report
// call; the audit itself - the point loop, the players of the engines, the live view's glue, the
// summary and the files - is the library internal/auditrun.
//
//	dpsim audit scenarios/audit-vehicle-structured.yaml
//	dpsim audit scenarios/audit-vehicle-iid-naive.yaml --trials 20000 --json
//	dpsim audit scenarios/audit-vehicle-block-vs-manifold.yaml --out out/audit-bvm
//	dpsim audit scenarios/audit-vehicle-structured.yaml --engine wire --trials 1000
//
// Two engines play the same game (pkg/audit.Game): fast (in-process, the role cores of pkg/sim
// on every core, millions of trials) and wire (the real role processes over NATS, spawned by the
// launcher, internal/launch, which is the challenger: it sends each episode's x(0) on the private
// subject dpsim-challenger.<run>.x0, outside the dpsim.> traffic the eavesdropper sniffs; the eavesdropper process estimates from the data subjects only and writes
// its estimates to its trace file; the launcher joins them with its secret bits). For the same seed
// both engines run bit-identical episodes.
//
// With --engine wire --role ENDPOINT=COMMAND a user's program plays a role in place of dpsim's
// own process, started by the same launcher machinery as dpsim run --role (launch.Programs): a
// plant or agent program opens its sealed x(0) on the private line, an eavesdropper program's
// trace supplies the estimates scored. After the game the launcher attributes what each process
// did wrong (Session.Outcome: launch.Problem, launch.Degradation); the report names the
// programs, the problems and the degradation beside the verdict, and a fatal problem or a process
// that dies fails the audit.
//
// With --ui the audit serves a live view (internal/live.AuditHub on the live view's server):
// the engines hand their trials over as they are scored (audit.FastOptions.Chunk; the wire
// engine's eavesdropper trace read as it grows) and the bounds are recomputed from them by the
// same Game.Analyze, with the same options, as the result.
//
// Exit status: 0 whatever the verdict (the verdict is a finding, not a failure; read it from the
// output), 1 when the audit could not be carried out, 2 for a usage error. With
// --fail-on-violation a violation returns ErrViolation, whose ExitCode is 3 (cmd/dpsim maps it
// when it honours ExitCoder; otherwise it exits 1).
package auditcmd
