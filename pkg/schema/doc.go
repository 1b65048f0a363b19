// Package schema is the machine-readable form of the wire and file contract of a dpsim run: the
// JSON Schemas (draft 2020-12) of everything one process writes and another reads, generated
// from the Go types that define it, so that a process written in another language can be
// checked against the same contract as the Go one.
//
// Generate reflects the types (github.com/invopop/jsonschema) with their Go doc comments as
// descriptions and adds what the types cannot say: the required fields, the layout of a
// message's vals for each ctl word, the patterns of run ids and senders. The schemas live in
// docs/schema (one file per document: see Files); docs/asyncapi.yaml describes the subjects,
// who sends and who receives what on each, and points at them. `go test ./pkg/schema -update`
// rewrites docs/schema after a change of the types; the test fails while the committed files
// differ from what the types generate.
//
//	| File                           | Document                                                    |
//	|--------------------------------|-------------------------------------------------------------|
//	| message.json                   | a wire message (wire.Message, JSON encoding), any kind        |
//	| data-yhat.json, data-u.json,   | a data message of each stream (plant yhat, cloud u, agent   |
//	| data-y.json                    | or agent-host y)                                            |
//	| ctl-<word>.json                | a coordination message of each ctl word (ready, done,       |
//	|                                | rejoin, episode, episode-x0, episodes, episodes-x0, faults, |
//	|                                | x0, stop): kind, sender and the meaning of each value       |
//	| headers.json                   | the NATS headers a message may carry (Dpsim-*)              |
//	| result.json                    | a process's result (contract.ProcessResult): ctl.result     |
//	|                                | payload and <name>.result.json                              |
//	| trace-<role>.json              | one line of a role process's <name>.trace.jsonl             |
//	| trace-control.json,            | one line of the run's merged trace.jsonl                    |
//	| trace-consensus.json           |                                                             |
//	| plan.json                      | a process's plan file <name>.plan.json                      |
//
// A data message may also travel in the binary encoding (wire.EncodeBinary, first byte 0xD5):
// the schemas describe the JSON one, which carries the same fields.
//
// Load compiles the committed schemas (github.com/santhosh-tekuri/jsonschema) and Set.Validate
// checks a document against one of them: the tests validate the traffic and files of real runs
// with it.
package schema
