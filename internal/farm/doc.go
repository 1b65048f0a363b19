// Package farm hands chunks of Monte Carlo episodes to worker processes on this or other hosts,
// through NATS, and returns their results in chunk order so that the caller's fold is the
// in-process engine's, bit for bit, whatever the number of workers or their hosts - and no worker
// can change it unnoticed.
//
// The farm is generic: a chunk is a range lo..hi-1 and the bytes of its result. What it is - the
// fast engine's episodes or the audit's game - is a Kind (how a worker prepares a job and plays a
// chunk) with a Judge per job (how the coordinator checks a result and compares two), plugged in
// from internal/farm/kinds (kinds.Run, kinds.Audit); the farm imports neither pkg/engine nor
// pkg/audit.
//
//   - Coordinator: starts the embedded server (pkg/bus, with an account for itself and one for
//     each worker), writes the workers' credential files (one per worker: a pool for hosts
//     elsewhere, private ones for the spawned workers), optionally spawns local `dpsim worker`
//     processes, and plays a point's chunks: Play, with a Work (its kind, the kind's parameters,
//     the chunks, the judge).
//   - Serve: a worker's loop (`dpsim worker`): asks for a chunk, fetches the job it belongs to
//     once (scenario, point, the kind's parameters - seed, options: never on argv, only to
//     authenticated workers), plays it with its Kind of the job's name, and answers.
//
// The protocol pulls: an idle worker asks for work (dpsim.farm.next.<id>, a request held by the
// coordinator until a chunk is free), so chunks go to whoever is free and a slow host takes
// fewer. A worker publishes only under its own identity <id> - its account on the embedded
// server may publish nothing else - so the subject names the sender. It holds at most MaxHeld
// chunks and heartbeats them; a chunk whose worker stays silent for Config.Silence, or holds it
// past the chunk bound (Config.ChunkTimeout, else ten times the median chunk time), is
// re-issued to another worker.
//
// Trust: the results are deterministic functions of (job, chunk), so they can be checked by
// playing them again. An answer counts only from the worker holding an open issue of its chunk
// (others are foreign or late). A share of the chunks (Config.VerifyShare), drawn by the
// coordinator with crypto/rand when the first answer arrives - a worker knows the job's seed, so
// nothing derived from it may choose - is played again by another worker and compared bit for
// bit. A mismatch, an answer that does not fit (shape, range, a score not finite) or an error is
// settled by the coordinator playing the chunk itself; a worker whose result differs from the
// coordinator's is quarantined (its account revoked, its requests refused) and every result of
// it in the open jobs is played again. Nothing is folded before a job is over, so a worker caught
// late leaves nothing behind in it; a chunk that fails at the coordinator too fails the job.
// Every event names its worker (Report: the "dispatch" object of the outputs).
//
// Durable (Config.Durable, --dispatch-durable; durable.go, queue.go): the chunks and the answers
// travel through JetStream work queues of the embedded server, stored under the command's --out
// (the workers pull; a chunk whose worker goes silent past AckWait is delivered again, one
// delivered MaxDeliver times is played by the coordinator), with the same scheduler - draw,
// checks, quarantine, fold; every accepted result is journaled before it counts; a coordinator
// started again on it takes the queued chunks and stored answers, restores the journaled chunks
// (Report: restored_chunks) and plays only the rest, to the same fold bit for bit, and refuses a
// journal of another command.
package farm
