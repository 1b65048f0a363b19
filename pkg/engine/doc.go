// Package engine runs the machine of pkg/sim in-process: the role cores of a run on the
// in-memory network, driven by the one Driver, so that a seed gives the numbers of the NATS
// processes bit for bit.
//
//   - Run: the fast Monte Carlo engine - every episode of a plan on parallel workers, records
//     joined by pkg/trace's join, metrics by pkg/metrics' Accumulator (Results in episode order,
//     whatever the workers), traces kept or streamed for the traced episodes, and with
//     Options.Bus every message the network's publishers put on the bus, episode by episode in
//     order (bus.go: what dpsim run --engine fast --record writes). Sweep runs it on every point
//     of a sweep.
//   - PlayChunk / Fold: Run cut in two for workers on other hosts (internal/farm): a worker plays
//     episodes lo..hi-1 unfolded (each episode reduced, its links' counters, the traced records),
//     the coordinator folds the chunks, in any order, as Run folds its own: the same Results.
//   - Player: plays single episodes from a chosen initial state and returns only the
//     eavesdropper's final estimate (the auditor's engine, pkg/audit).
//   - EstimateCost / CheckCost: the memory and time an engine run will take, checked before it
//     starts.
package engine
