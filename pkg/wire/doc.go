// Package wire is the NATS-free wire format of a dpsim run: the subject scheme, the message
// envelope (Message) with its JSON and binary encodings, its validation (Validate against an
// Expect, the Reasons an invalid message is dropped for, the Counters of a receiver), the
// delivery metadata a message carries in headers (Route, the Header* names), the coordination
// words (Ctl*, LauncherSender), the subject permissions of each party, and the time words every
// side shares (Mode, TimingStats). It imports neither nats.go nor pkg/bus: the transport
// (pkg/bus) builds on it, and so do the packages that only read or write messages - the
// launcher's protocol (pkg/contract) and the JSON Schemas (pkg/schema) - without depending on
// NATS.
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
//	| dpsim-challenger.<run>.x0              | launcher        | plant, agents        | an episode's secret x(0), sealed to each owner (pkg/bus seal.go) |
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
// ParseSubject reads them back. The "<role>.<id>" part of a data subject is the sender
// (SenderOfSubject), and equals the message's "from" field (pkg/bus's
// InboxOptions.MatchSubject enforces it). The plant's true state never goes on the bus: only
// yhat, which already contains the privacy noise.
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
// A compact little-endian binary encoding (Binary; layout in EncodeBinary; a connection
// chooses it with pkg/bus's WithEncoding)
// starts with the magic byte 0xD5 and the version byte; Decode detects the encoding from
// the first byte, so receivers accept both. Encoding into a reused buffer and decoding
// into a reused Message do not allocate. BenchmarkCodec (encode + decode): JSON ~0.6 us
// and 146 bytes for a 1-value message (~3 us, 427 bytes for 16 values), binary ~0.04 us
// and 71 bytes (~0.06 us, 191 bytes); a lockstep step over loopback costs 50-150 us, so
// JSON stays the default and binary is an option for large vectors or high rates.
//
// # Validation
//
// Validate checks a decoded message against an Expect (version, run id, episode, 0 <= step <
// steps, dimension, finite numbers, sender, kind) and returns an *InvalidError with the Reason
// (ReasonOf reads it back). Invalid messages are never fatal: a receiver counts them by Reason
// in Counters and drops them (pkg/bus's Inbox is the one receive path that does). Decode never
// panics on arbitrary bytes (FuzzDecode). A message may carry the same step of several
// consecutive episodes in flight (Route.Episodes, header Dpsim-Episodes: Values the episodes'
// vectors concatenated): it must lie within the episodes Expect has in flight and carry Dim
// values per episode, which binds the unsigned header to the signed payload.
//
// # Time
//
// The time words every side shares (timing.go): Mode (lockstep or realtime), the
// TimingStats a role process reports of its tick grid (overruns, missed deadlines, late
// messages, jitter) and DurationStats. Keeping the clock is internal/roleproc's business.
package wire
