// Package launch runs the role processes of one scenario point and collects what they
// recorded: the launcher library behind `dpsim run` (internal/runner) and the audit's wire
// engine (internal/auditrun). Its one concern is the launcher's side of the role-process
// protocol (pkg/contract has the payloads, file names and result type both sides share):
//
//   - ServerConfig, StartServer: the one NATS server set-up - the embedded server or cluster
//     with a user per process and per launcher (RunUsers), TLS (auto or an external server's
//     files), or an external server with the credentials of its URL and a connect retry
//     (server.go).
//   - StartSession, Session: spawning the processes with their flags, environment and plan
//     files (procs.go, plans.go, keys.go for --sign), the ctl protocol - ready, episode, done,
//     stop, result, and the claims that tell a session's processes from strays (ctl.go) -,
//     episodes (Session.Episode) and the shutdown (Session.Stop). Attach mode (attach.go)
//     drives processes started by someone else.
//   - The execution of the scenario's process faults: crashes and restarts, server restarts,
//     toxiproxies and their connection resets (faults.go), recorded on a Timeline
//     (timeline.go).
//   - Collector: the merge of the processes' trace files, one episode at a time, into the run's
//     records and metrics, bit for bit those of the fast engine (collect.go; resume.go rebuilds
//     a resumed point's metrics).
//   - PlayPoint: one point from start to stop - the session, its episodes (from a resumed
//     point's start), each collected as it completes with a checkpoint and progress callback,
//     the merged records of the traced episodes to a TraceOut (traceout.go), the stop and the
//     final collection - returning what the command reports (PointOutcome; point.go). A shard
//     of a run plays only its chunks' episode ranges and takes each episode reduced, as the
//     fast engine's chunks hold it (ranges.go).
//
// # Processes
//
// Cloud control: plant-0 (holds x(t); publishes yhat = C x + gamma), cloud-0 (publishes u),
// eavesdropper-0. Consensus: one agent process per agent (agent-<i>), or with
// --agents-per-process K hosts of K agents (agents-<i>-<j>, `dpsim agent --agents i..j`), and
// eavesdropper-0. A host of agents i..j announces itself under its first agent's id: its
// ctl.ready, ctl.done and ctl.result subjects end in agent.<i>. Unless the scenario has link
// faults or crashes (per agent), a host publishes one message per step on
// dpsim.<run>.host.<i>.y carrying the outputs of all its agents (sim.BlockCore; the children get
// --batch K), so a network step costs O(hosts) messages, not O(agents). Each child gets --nats-url, --run, --plan (its
// plan file <out>/<name>.plan.json: the point resolved once by the launcher, with only that
// child's private values; see Session.writePlans), --point, --out, --mode,
// --period, --timeout, --idle-timeout, --log-level, --encoding and --parent-pid. The plant's
// and the agents' noise seed is in their plan files only, never on a command line (the
// eavesdropper and the cloud draw no randomness and never get it). Children run in their own process group: a Ctrl-C on the terminal reaches only
// the launcher, which stops them (below). A child whose parent disappears stops by itself.
//
// # Coordination protocol (dpsim.<run>.ctl.*)
//
// Coordination messages use the bus message schema (JSON, version 1; see pkg/wire) with Kind
// set to the ctl word, except ctl.result whose payload is the process's result JSON:
//
//	| Subject                               | From      | Kind    | ep | vals                          | Meaning                                   |
//	|---------------------------------------|-----------|---------|----|-------------------------------|-------------------------------------------|
//	| dpsim.<run>.ctl.ready.<role>.<id>     | process   | ready   | 0  | [pid, plan digest]            | subscribed to its subjects, ready         |
//	| dpsim.<run>.ctl.episode               | launcher  | episode | e  | []                            | start episode e (scenario x(0))           |
//	| dpsim.<run>.ctl.episode               | launcher  | episode-x0 | e | []                         | start e; its x(0) is on the private line  |
//	| dpsim.<run>.ctl.episode               | launcher  | episodes | e | [count]                      | start e..e+count-1 at once (in flight)    |
//	| dpsim.<run>.ctl.episode               | launcher  | episodes-x0 | e | [count]                   | the same; each x(0) on the private line   |
//	| dpsim.<run>.ctl.episode               | launcher  | faults  | e  | [generation, digest]          | live faults from e on (interventions.go)  |
//	| dpsim-challenger.<run>.x0             | launcher  | x0      | e  | x(0) sealed, one box per owner | the challenger's secret (plant, agents)   |
//	| dpsim.<run>.ctl.done.<role>.<id>      | process   | done    | e  | [steps, missed, pid, trace next] | finished episode e                     |
//	| dpsim.<run>.ctl.stop                  | launcher  | stop    | 0  | []                            | abandon any episode, flush, exit 0        |
//	| dpsim.<run>.ctl.rejoin.<role>.<id>    | process   | rejoin  | e  | [restart step, pid]           | restarted after a crash, subscribed again |
//	| dpsim.<run>.ctl.result.<role>.<id>    | process   | -       | -  | contract.ProcessResult JSON   | final counters, timing, files (also file) |
//
// The sequence of a run:
//
//  1. The launcher subscribes to ctl.ready.>, ctl.done.> and ctl.result.>, then spawns the
//     processes. Each process subscribes to its data subjects, ctl.episode and ctl.stop,
//     flushes, and publishes ctl.ready (repeated every 500 ms until its first episode, so a
//     launcher attaching to processes started by hand hears it too). The launcher waits for
//     every ready (60 s bound; a child that exits first fails the run, naming it).
//     It accepts ready and done only from the pid it spawned for each sender (in attach
//     mode, Session with Attach, from the first pid it hears per sender): a ready or done of
//     another pid - a stray process started by hand on the same run id, which would answer
//     every episode too - fails the run with an error naming the sender and both pids.
//  2. For e = 0, 1, ..., runs-1: the launcher publishes ctl.episode with ep = e and waits for
//     ctl.done from every process. Each process runs the T steps of episode e (new noise:
//     the plant reseeds from rng(seed, "plant", 0, e), agent i from rng(seed, "agent", i, e))
//     and publishes ctl.done. Episodes are strictly sequential and increasing, so a process
//     only ever accepts data messages of the episode it runs; the same processes serve every
//     episode. With episodes in flight (SessionConfig.Inflight K > 1, dpsim run --inflight)
//     the launcher starts groups instead: ctl.episodes with ep = e and [count] runs episodes
//     e..e+count-1 at once (count <= K; NextGroup: an episode with a process crash, a server
//     restart or a proxy reset scheduled in it runs alone, as the single ctl.episode), and
//     each process answers with one ctl.done per episode, in episode order, once the whole
//     group is done; its trace holds the group's records episode by episode, as K = 1 would
//     have written them. The launcher reads each group's records into memory as soon as it
//     is done (before the next group starts, when the processes may cut their bounded traces
//     back), merges them while the next group plays - in episode order, so the numbers are
//     those of merging at once - and then checkpoints the group (MaxSnapshotBytes bounds the
//     memory: a larger group is merged from the files first). Results do not depend on K:
//     every episode has its own random streams and cores.
//  3. The launcher publishes ctl.stop (again every 100 ms until every child exited: one still
//     starting would miss it; stopping is idempotent). Each process flushes its trace, writes
//     <out>/<name>.result.json, publishes it on ctl.result, drains its connection and exits
//     with status 0. The launcher waits for every exit (15 s bound, then SIGTERM, then
//     SIGKILL), then merges the processes' trace files one episode at a time (each process
//     writes its records in episode order), folding every complete episode into the Results
//     as it goes and streaming the first --trace-episodes merged episodes to trace.jsonl:
//     the launcher's memory does not grow with the number of episodes.
//
// An episode may start from an explicit initial state (the auditor's challenger,
// Session.Episode(ctx, e, x0)): the launcher first sends x(0) on the private subject
// dpsim-challenger.<run>.x0 (kind "x0": the plant's x(0), or each agent host's x_i(0), sealed
// to the process that owns it - pkg/contract's X0Message), then the public ctl.episode with
// kind "episode-x0" and no values. That subject is deliberately outside dpsim.>: the
// eavesdropper sniffs dpsim.<run>.> and never receives the secret; only the plant and the
// agents subscribe to it. The launcher makes a curve key pair (nkeys) for itself and for each
// of them, whose seed and the launcher's public key reach it in $DPSIM_X0_SEED and
// $DPSIM_X0_SENDER (attach mode: its credentials file), never argv: on a server without
// permissions another subscriber reads ciphertext only, and a process counts a box it cannot
// open as invalid (reason sealed). A plant told
// "episode-x0" that does not receive its x(0) within --timeout fails rather than defaulting.
// (For hand-driven runs ctl.episode may still carry x(0) in vals directly.)
//
// Every wait is bounded: a process's wait for a step's messages by --timeout in lockstep and by
// the next tick in realtime (either way the core's missing-input rule applies - the plant holds
// or zeroes u, the cloud predicts yhat, an agent reuses or skips a neighbour - the step is
// counted as missed and the run ends "degraded", or failed past --max-missed-fraction), its wait
// for the next ctl.episode by --idle-timeout, the launcher's wait for ready, done and exits by
// the bounds above. No run can hang, and a lost message is never fatal.
//
// # Faults and delivery headers
//
// A scenario's faults: section (scenario.FaultsSpec) injects per-link faults on the publish
// side (pkg/fault): every process applies the same pure fates to its own messages. A fault-free
// message is a plain publish. Otherwise a message carries NATS headers (wire.Route): Dpsim-To
// (the one subscriber "<role>.<id>" it is for; others ignore it), Dpsim-Except (on a message
// for every subscriber: those it is not for, which get deliveries of their own), Dpsim-At (the
// logical step it
// is delivered at, when later than its own), Dpsim-More (more deliveries from this sender for
// that step follow) and Dpsim-Gap (no values: in lockstep, the sender has nothing more for
// the subscriber at that step - a lost or delayed message - so the subscriber applies its
// rule at once instead of waiting for a timeout). This is what keeps a faulty lockstep run
// bit-identical to the fast engine.
//
// # Security
//
// The launcher's embedded server knows one NATS user per process and one for the launcher,
// each with a random password and its role's subject permissions (wire.Subjects.RolePermissions:
// a process publishes only its own data subject and ctl words; the eavesdropper reads
// dpsim.<run>.> and publishes nothing else; only the plant and agents read the challenger's
// line; only the launcher publishes ctl.episode and ctl.stop); a client without credentials is
// refused. A child gets its credentials in $DPSIM_NATS_USER and $DPSIM_NATS_PASSWORD, never in
// argv; credentials in an external server's URL are handed on the same way and taken out of
// every output. --tls auto makes the embedded server require TLS with a throwaway CA (the
// children get --tls-ca, a file name); --tls-ca/--tls-cert/--tls-key do the same for an external
// server. --sign gives every process (and the launcher) an ed25519 key (seed in
// $DPSIM_SIGN_SEED, public keys in procs/public-keys.json, passed as --sign-keys): data
// messages, ctl.episode, ctl.stop and the challenger's x0 carry a Dpsim-Sig header that every
// receiver verifies. Signing is on by default with an external server (--nats-url, $NATS_URL),
// whose permissions the launcher cannot see; --no-sign opts out. Without signing, two different
// messages for one (sender, episode, step) are counted as conflicts whenever the second arrives
// (late for an older step, after the receiver finished the episode or began the next one) and
// make the run degraded (--strict: failed). A copy for an episode its receiver had finished is
// not invalid but stale: counted apart (summary.json stale) and compared with the copy used.
// summary.json security records how the traffic was secured.
//
// # Crashes, outages and nothing lost
//
// A process the scenario kills (faults.crashes) writes <name>.checkpoint.json at its crash
// step and SIGKILLs itself; the launcher sees the kill and starts it again with --resume; the
// successor restores the checkpoint (cores, noise draw, counters, file offsets), publishes
// ctl.rejoin and finishes the episode. Its peers never wait for it while it is down, and hold
// what is due to it from its restart step until its rejoin. After a broker outage
// (faults.server_restarts, or a real one) every process reconnects, repeats ctl.ready until the
// next episode and repeats its last ctl.done: the launcher starts the next episode only when
// every process is back. Every process flushes and fsyncs its files once per episode, and the
// launcher folds each episode as soon as it is done (Collector): a process that dies loses no
// finished episode, and the report covers them.
//
// Hand-driven use, against any NATS server:
//
//	dpsim plant --nats-url nats://127.0.0.1:4222 --run r1 --scenario s.yaml --out /tmp/r1 &
//	dpsim cloud --nats-url nats://127.0.0.1:4222 --run r1 --scenario s.yaml --out /tmp/r1 &
//	nats pub dpsim.r1.ctl.episode '{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":0,"kind":"episode","vals":[]}'
//	nats pub dpsim.r1.ctl.stop '{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":0,"kind":"stop","vals":[]}'
//
// # Time
//
// lockstep (default): each step proceeds when its messages arrived. realtime: the plant and
// the agents start step k at t0 + k*Ts with t0 = sent(ctl.episode) + contract.GridLead (50 ms);
// a step's messages are due by the next tick. Late messages (dropped as "late"), overruns,
// missed deadlines and the jitter of every process are reported in summary.json "timing" and
// per process; never hidden, and a run with missed steps ends with status "degraded" (the
// counts in summary.json "degraded"). In realtime a run is not expected to reproduce the fast
// engine bit for bit when steps are missed (held inputs); in lockstep it is, faults included.
//
// # Files of a session
//
// A session writes into SessionConfig.Dir each process's plan file (<name>.plan.json, mode
// 0600: it holds that process's private initial values), with --sign public-keys.json, and in
// attach mode attach/commands.sh and attach/<name>.env (the credentials, mode 0600, removed
// when the session ends). Each process writes there its <name>.log, <name>.trace.jsonl,
// <name>.result.json and, as the case may be, <name>.transcript.jsonl, <name>.faults.jsonl and
// <name>.checkpoint.json (pkg/contract names them).
package launch
