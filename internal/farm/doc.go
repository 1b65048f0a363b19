// Package farm hands chunks of Monte Carlo episodes to worker processes on this or other hosts,
// through NATS, and merges their answers so that the result is the in-process fast engine's, bit
// for bit, whatever the number of workers or their hosts.
//
//   - Coordinator: starts the embedded server (internal/launch's StartServer, with an account for
//     itself and one for the workers), writes the workers' credentials file, optionally spawns
//     local `dpsim worker` processes, and plays a point's episodes: Audit (pkg/audit's game, the
//     chunks of audit.PlayChunk) or Run (pkg/engine's Run, the chunks of engine.PlayChunk folded
//     by engine.Fold).
//   - Serve: a worker's loop (`dpsim worker`): asks for a chunk, fetches the job it belongs to
//     once (scenario, point, seed, options: never on argv, only to authenticated workers), plays
//     it with the in-process engine, and answers.
//
// The protocol pulls: an idle worker asks for work (dpsim.farm.next, a request held by the
// coordinator until a chunk is free), so chunks go to whoever is free and a slow host takes
// fewer. A worker holds at most two chunks (one playing, one fetched ahead) and publishes a
// heartbeat naming them; a chunk whose worker stays silent for Config.Silence is re-issued to
// another worker. The first valid answer of a chunk is folded; a later one (the silent worker
// came back) is ignored and counted; an answer that does not fit its chunk is counted as invalid
// and the chunk re-issued. Every such degradation names the worker that caused it (Report).
package farm
