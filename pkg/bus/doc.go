// Package bus is the NATS transport between the processes of a dpsim run (plant, cloud
// controller, consensus agents, eavesdropper, launcher): an embedded nats-server, client
// connections with reconnect handling and a clean drain, the one receive path (Inbox) that
// decodes and validates every message, the headers a message's route and signature travel in,
// the accounts, TLS and keys (signing, sealing) of a secured run. The wire format it carries -
// subjects, the message envelope and its encodings, validation, the coordination words - is
// pkg/wire's, which does not depend on NATS; this package is the only one that touches
// nats.go.
//
// # Server and connections
//
// The launcher starts an in-process server on a random loopback port with StartEmbedded
// unless a URL is given (ResolveURL: --nats-url flag, else $NATS_URL, else "" meaning
// "start embedded"). Each process connects with Connect(url, "dpsim-<role>-<id>"); the
// client reconnects automatically (WithReconnect) and counts disconnects and reconnects
// (Conn.Stats, WithEvents). Conn.Drain flushes and closes with a timeout on exit.
//
// # Subjects and messages
//
// The subjects (wire.Subjects, wire.NewSubjects), the message schema (wire.Message, JSON or
// binary: WithEncoding chooses a connection's) and the coordination words are pkg/wire's,
// documented there with the table of every subject. wire.Subjects.RolePermissions and
// LauncherPermissions give each party's subjects; NewUser and the server's options make
// accounts of them.
//
// # Receiving
//
// Every received message goes through one receive path, the Inbox (a Receiver is an Inbox
// on one subscription): decoded, its wire.Route read from the headers (fault injection:
// routeOf) and checked by wire.Validate against a wire.Expect. Invalid messages are never
// fatal: they are counted by reason in wire.Counters, handed to OnInvalid for the caller's
// log, and dropped. A batched message must lie within the episodes the receiver has in flight
// (Inbox.SetEpisodes). The coordination messages travel here too (ctl.go: SubscribeCtl);
// their payloads and constructors are pkg/contract's, the protocol between the launcher and a
// process.
//
// # Time
//
// Lockstep: a step proceeds when its messages arrived, as fast as possible; which messages a
// step needs, what happens when one is missing and when its deadline is are the role cores'
// business (pkg/sim), not this package's. Realtime: a role process keeps the statistics of
// the tick grid (internal/roleproc's Clock) in a wire.TimingStats.
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
