// Package roleproc is the role process library: the process behind `dpsim plant`, `dpsim
// cloud`, `dpsim agent` and `dpsim eavesdropper` (and the binaries cmd/plant, cmd/cloud,
// cmd/agent and cmd/eavesdropper), the mirror of internal/launch on the other side of the
// role-process protocol (pkg/contract). The commands (internal/cmd/role) parse the flags into
// a Config and call Serve; everything the process does is here. It hosts the pure cores of
// pkg/sim (PlantCore, CloudCore, AgentCore or BlockCore, EavesdropperCore), talking only over
// NATS (pkg/bus).
//
// Every process: connects to --nats-url (default $NATS_URL), subscribes to its data subjects,
// to dpsim.<run>.ctl.episode and dpsim.<run>.ctl.stop, announces ctl.ready, then runs each
// episode the launcher starts, publishing ctl.done after it. Every received message is
// decoded and validated (version, run, episode, step range, dimension, finite values, sender
// matching its subject, kind); invalid ones are counted once by reason, logged (zerolog on
// stderr, rate-limited) and dropped, never fatal. A valid copy for an episode the process had
// finished is not invalid but stale (contract.ProcessResult.Stale): its cores compare it with the copy
// they used, so a differing one is a conflict (forged or corrupted traffic) however late it
// comes; copies still queued at the end are compared before the result is written. On ctl.stop, SIGINT, SIGTERM or when its
// parent (the launcher) is gone, it abandons the running episode, flushes its trace file,
// writes <out>/<name>.result.json (contract.ProcessResult, with its own peak RSS: VmHWM of
// /proc/self/status on Linux, getrusage elsewhere), publishes it on ctl.result and exits: 0
// after ctl.stop, non-zero otherwise. ctl.ready carries the process's pid and ctl.done
// [steps, missed, pid, trace next], so a launcher can tell its processes from a stray one on
// the same run id, and reads each episode's records from where the process said it begins.
// A host of agents i..j announces itself under its first agent's id (ctl.ready.agent.<i>).
// The protocol between the launcher and a process is pkg/contract; its ctl messages are
// tabulated in package internal/launch.
//
// Each process is an adapter: the role's cores (pkg/sim: PlantCore, CloudCore, AgentCore,
// EavesdropperCore) run by the one sim.Driver, over a transport that publishes their outputs
// through the fault injector (pkg/fault) and hands them their deliveries from the process's
// one bus.Inbox, with a pacer for the wall clock. The step order and the missing-input rules
// are the cores'; the same seed gives the same numbers as the fast engine (in lockstep, faults
// included). The transport sees the bus through three small interfaces (transport_io.go), so
// its unit tests run it over memory; --keep-episodes bounds the process's files (bound.go).
//
// Episodes in flight (inflight.go): a ctl.episodes (contract.EpisodesMessage) starts count
// consecutive episodes at once. The process keeps one set of cores, transport and driver per
// episode in flight (built once, reused), runs them from one receive loop with the driver's
// step-wise API (sim.Driver.Begin, Deliver, TickDue), buffers each episode's trace records and
// fault-log lines, writes them episode by episode when the whole group is done - the files
// read as if the episodes ran one by one - and answers one ctl.done per episode, in episode
// order. A publisher whose links have no rule sends the same step of consecutive episodes as
// one message (wire.Route.Episodes, batch.go), flushed whenever the process is about to wait;
// with link faults it sends one message per episode. Realtime runs and episodes with a process
// crash refuse groups of more than one episode.
//
// Where things are:
//
//   - config.go: Config (filled by the command), LoadPoint and LoadPlanFile (the plan a process
//     works on), and what the scenario decides where the flags left it open (time mode, seeds).
//   - process.go: Serve and the process - connection, ctl subscriptions, ready/done/stop,
//     the challenger's x(0), signals and the parent watch, the result file.
//   - cores.go: coreRunner, the role's cores with their trace, transcript and fault-log files.
//   - transport.go, transport_io.go, batch.go: the transport between the cores and the bus.
//   - pacer.go, clock.go: the wall clock of the steps (sim.Pacer) and its statistics (Clock;
//     pkg/wire keeps only the words every side shares: Mode, TimingStats).
//   - inflight.go, held.go: episodes in flight; crash.go: crashes, checkpoints and rejoins;
//     live.go: live faults (ctl.faults); bound.go: --keep-episodes.
//
// In the code, a process is the OS process (type process); a core is the arithmetic it hosts.
package roleproc
