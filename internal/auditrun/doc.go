// Package auditrun is the empirical privacy audit as a library (docs/math.md section 6): it plays
// the distinguishing game of every point of a scenario and turns its scores into the points'
// reports - lower bounds on epsilon with a verdict (pkg/audit's Game.Analyze) - for `dpsim
// audit` (internal/cmd/audit), which keeps only its flags and its printing.
//
// The game: per trial e = 0 .. 2N-1 a challenger draws the secret bit b = audit.Bit(seed, e)
// (balanced: N trials on x, N on the adjacent x'), the system runs one episode (K with
// --episodes-per-trial) from x(0) = x or x' with fresh noise, and the eavesdropper, which sees only
// the transcript, outputs scores. From the scores the auditor bounds the error rates of threshold
// tests (Clopper-Pearson, the Gaussian-DP fit, the f-DP statistic) and derives eps_lb; the verdict
// is violation when a bound exceeds the claimed eps. A sweep's K points are each analysed at
// 1 - (1 - C)/K (Bonferroni), so that the verdict over all of them holds at C.
//
// One loop, one interface: Audit.PlayAll plays the points in turn over a Player, analyses each
// and hands its report to the Observer's callbacks (progress bar, live view: UI.Observe, files:
// Audit.WriteReport, the partial reports of an interrupted audit). Three players play the same
// episodes, bit for bit, for a seed:
//
//   - FastPlayer: in-process, the role cores of pkg/sim on every core (audit.PlayFast);
//   - Farm: the same chunks played by `dpsim worker` processes and merged (internal/farm,
//     reached from farm.go only);
//   - WirePlayer: the real role processes over NATS, spawned by the launcher (internal/launch),
//     which is the challenger: each episode's x(0) travels sealed on the private subject
//     dpsim-challenger.<run>.x0, outside the dpsim.> traffic the eavesdropper sniffs; its estimates
//     (its trace file, read back: readEstimates) and, for the precision score, its transcript
//     (readPrecision, docs/math.md section 6.3) are scored and joined with the secret bits.
//     A player that knows more of a point (the farm's dispatch, the wire processes and what they
//     did wrong) adds it to the point's report (Annotator).
//
// Besides the loop: Load and CheckCost (the scenario, the seed and the estimated cost before any
// game is built), New (the points' games, trials and confidence: flags, then the scenario's audit
// section, then the defaults), OneRun (the one-run audit of docs/math.md section 6.2), the
// summary of a sweep (SweepOutput, SweepVerdictLine) and the report files (WriteFiles); the
// shards of --shard I/N (WriteShard: a slice of the trials into a part) and their merge (ReadShards,
// NewMerged, and ShardsPlayer, the player that folds the parts' trials as the farm folds chunks).
package auditrun
