// Package busrec records the bus traffic of a run as an MCAP file (https://mcap.dev, written
// with github.com/foxglove/mcap/go/mcap) and reads it back, also from a file whose writer was
// killed before it wrote the summary section.
//
// A Recorder subscribes to dpsim.<run>.> (wire.Subjects.All, the filter the eavesdropper
// sniffs: data, ctl words, results) of each point and writes every message it receives as one
// MCAP message on the channel of its subject (one channel per subject, message encoding
// "json"): a binary-encoded message (wire.BinaryMagic) is decoded with wire.Decode, the
// processes' decoder, and written as wire.EncodeJSON of it. Each channel carries, as its
// schema (encoding "jsonschema"), the JSON Schema of docs/schema that its subject's messages
// follow (SchemaFor; embedded in the binary from schemas/, kept equal to docs/schema by a
// test). Log time is the receive time, publish time the message's "sent" field (a result
// document has none: its receive time). The challenger's private line
// (wire.ChallengerPrefix, the secret x(0)s) lies outside dpsim.<run>.> and is never recorded.
// A message's NATS headers (the route of an addressed or delayed message, Dpsim-Episodes of a
// group of episodes in flight, the signature) are recorded just before it on the companion
// channel "<subject>#headers" (headers.go: HeaderRecord), and published again by Replay.
//
// The recording stands alone (meta.go): beside the run's metadata it holds the scenario file
// as an attachment and each point's eavesdropper metrics; Rerun (rerun.go, dpsim replay
// --check) plays each point's traffic to a fresh eavesdropper process spawned through the
// launcher's session (internal/launch) and compares its metrics with the recorded ones bit
// for bit (fold.go folds them with the one metrics.Accumulator).
//
// The file is chunked and zstd-compressed; a chunk is written to the file when it fills
// (Options.ChunkSize), so a recording killed mid-run keeps every complete chunk and Recover
// reads them with the MCAP lexer. Close writes the summary section (statistics, the indexes).
// The recording is bounded (Options.Limit): past it messages are counted, not written.
package busrec
