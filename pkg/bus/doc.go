// Package bus is the NATS transport between the processes of a dpsim run (plant, cloud
// controller, consensus agents, eavesdropper, launcher): an embedded nats-server, client
// connections with reconnect handling and a clean drain, the subject scheme, a versioned
// message schema with validation, and the words of the lockstep and realtime time modes.
//
// # Server and connections
//
// The launcher starts an in-process server on a random loopback port with StartEmbedded
// unless a URL is given (ResolveURL: --nats-url flag, else $NATS_URL, else "" meaning
// "start embedded"). Each process connects with Connect(url, "dpsim-<role>-<id>"); the
// client reconnects automatically (WithReconnect) and counts disconnects and reconnects
// (Conn.Stats, WithEvents). Conn.Drain flushes and closes with a timeout on exit.
//
// # Subjects
//
// Every subject starts with "dpsim.<run>", where <run> is a run id that is a single NATS
// token (ValidToken: no '.', '*', '>', white space or control characters; at most 64
// bytes). Watch a whole run with `nats sub 'dpsim.<run>.>'`, or every run with
// `nats sub 'dpsim.>'`.
//
//	| Subject                                | Publisher       | Subscribers          | Payload                                         |
//	|----------------------------------------|-----------------|----------------------|-------------------------------------------------|
//	| dpsim.<run>.plant.<id>.yhat            | plant <id>      | cloud, eavesdropper  | yhat(t) = C x(t) + gamma(t), kind "yhat"        |
//	| dpsim.<run>.cloud.<id>.u               | cloud <id>      | plant, eavesdropper  | control input u(t), kind "u"                    |
//	| dpsim.<run>.agent.<i>.y                | agent <i>       | neighbours, eavesdr. | y_i(t) = x_i(t) + gamma_i(t) (eq. 25), kind "y" |
//	| dpsim.<run>.ctl.episode                | launcher        | all                  | episode Message.Episode begins                  |
//	| dpsim.<run>.ctl.ready.<role>.<id>      | every process   | launcher             | ready, vals [pid, plan digest]                  |
//	| dpsim.<run>.ctl.done.<role>.<id>       | every process   | launcher             | episode finished, vals [steps, missed, pid, trace next] |
//	| dpsim.<run>.ctl.result.<role>.<id>     | every process   | launcher             | results of the process                          |
//	| dpsim.<run>.ctl.stop                   | launcher        | all                  | flush and exit                                  |
//	| dpsim.<run>.ctl.start                  | (reserved)      | -                    | Subjects.CtlStart: nothing publishes it         |
//	| dpsim-challenger.<run>.x0              | launcher        | plant, agents        | an episode's secret x(0), sealed to each owner (seal.go) |
//
// A process that hosts several consensus agents (agents-<i>-<j>) publishes each agent's y
// on that agent's subject, and announces itself (ready, done, result) under its first
// agent's id: ctl.ready.agent.<i>. The launcher accepts ready and done only from the process
// it started for a sender (the pid in vals), so a stray process on the same run id fails the
// run instead of silently duplicating a role; the coordination protocol is documented in
// package internal/launch and, for a program of any language, in docs/protocol.md.
//
// The roles, the sender names "<role>.<id>" and the stream each role publishes are
// pkg/endpoint's, shared with the machine (pkg/sim). Subjects builds the subjects
// (NewSubjects(run).PlantYhat(0), or Data(e) for any publisher's endpoint e), with wildcard
// filters such as AllAgentY ("dpsim.<run>.agent.*.y") and All ("dpsim.<run>.>");
// ParseSubject reads them back. The "<role>.<id>" part of a data subject is the sender, and equals the message's
// "from" field (InboxOptions.MatchSubject enforces it). The plant's true state never
// goes on the bus: only yhat, which already contains the privacy noise.
//
// # Message schema (version 1)
//
// JSON by default, one object per message, readable on the wire:
//
//	{"v":1,"run":"r1","ep":0,"step":3,"from":"plant.0","sent":1700000000123456789,"kind":"yhat","vals":[0.5,-1.25]}
//
//	| JSON   | Field        | Type      | Meaning                                          |
//	|--------|--------------|-----------|--------------------------------------------------|
//	| v      | V            | int       | schema version, 1 (Version)                      |
//	| run    | Run          | string    | run id                                           |
//	| ep     | Episode      | int       | Monte Carlo episode, 0-based                     |
//	| step   | Step         | int       | time step t, 0-based, < steps of the episode     |
//	| from   | Sender       | string    | "<role>.<id>", e.g. "plant.0", "agent.17"        |
//	| sent   | SentUnixNano | int64     | sender's wall clock at publish (Unix ns)         |
//	| kind   | Kind         | string    | required: yhat, u, y or a ctl word               |
//	| vals   | Values       | []float64 | the vector (finite numbers only)                 |
//
// A compact little-endian binary encoding (WithEncoding(Binary); layout in EncodeBinary)
// starts with the magic byte 0xD5 and the version byte; Decode detects the encoding from
// the first byte, so receivers accept both. Encoding into a reused buffer and decoding
// into a reused Message do not allocate. BenchmarkCodec (encode + decode): JSON ~0.6 us
// and 146 bytes for a 1-value message (~3 us, 427 bytes for 16 values), binary ~0.04 us
// and 71 bytes (~0.06 us, 191 bytes); a lockstep step over loopback costs 50-150 us, so
// JSON stays the default and binary is an option for large vectors or high rates.
//
// # Validation
//
// Every received message goes through one receive path, the Inbox (a Receiver is an Inbox
// on one subscription): decoded, its Route read from the headers (fault injection: see
// Route) and checked by Validate against an Expect (version, run id, episode, 0 <= step <
// steps, dimension, finite numbers, sender, kind). Invalid messages are never fatal: they are
// counted by Reason in Counters, handed to OnInvalid for the caller's log, and dropped.
// Decode never panics on arbitrary bytes (FuzzDecode). A message may carry the same step of
// several consecutive episodes in flight (Route.Episodes, header Dpsim-Episodes: Values the
// episodes' vectors concatenated): it must lie within the episodes the receiver has in flight
// (Inbox.SetEpisodes) and carry Dim values per episode, which binds the unsigned header to the
// signed payload. The coordination messages travel here
// (ctl.go: their words, SubscribeCtl); their payloads and constructors are pkg/contract's, the
// protocol between the launcher and a process. This package is the only one that touches
// nats.go.
//
// # Time
//
// Lockstep: a step proceeds when its messages arrived, as fast as possible; which messages a
// step needs, what happens when one is missing and when its deadline is are the role cores'
// business (pkg/sim), not this package's. Realtime: a role process keeps the statistics of
// the tick grid t0 + k*Ts (internal/roleproc's Clock, the only user of the wall clock):
// overruns, missed deadlines, late messages (ReasonLate) and the jitter (mean, max, p99) are
// reported in TimingStats, never hidden. This package holds the time words every side shares
// (Mode, TimingStats, DurationStats: timing.go).
//
// # Performance
//
// BenchmarkLockstepVsRequestReply measures, over the embedded server, a raw nc.Request
// loop and the lockstep plant <-> cloud exchange of this package (1-value yhat and u per
// step, decoded and validated, separate connections for plant and cloud). Interleaving
// both in one run (paired-*) on a loaded, shared 2-core machine gave 8,000-18,000 steps/s
// for each, ratio lockstep/raw 0.86-1.03 (target >= 0.5): one lockstep step costs about
// one raw request-reply. Binary encoding does not change the lockstep rate measurably
// (paired ratio ~1.0 for both), so JSON is the default. The lockstep path allocates
// nothing in this package; the remaining allocations (12 per step) are the NATS client's
// and the in-process server's per-message copies.
package bus
