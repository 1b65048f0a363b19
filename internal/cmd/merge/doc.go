// Package merge implements `dpsim merge OUT PART...`: the N parts written by `dpsim audit
// --shard I/N --out PART` or `dpsim run --shard I/N --out PART` (either engine; a Slurm job array,
// a Kubernetes Indexed Job) checked to be the N slices of one job and folded into the outputs
// the unsharded command writes - audit.json, report.md, the figures and the verdict; a run's
// summary.json, report.md, traces and figures - bit for bit but the times. Reading, checking and
// folding the parts are the libraries' (internal/auditrun: ReadShards, NewMerged, ShardsPlayer;
// internal/runner: ReadRunShards, MergeRunShards); dpsim run's parser, which a run part's command
// line is parsed again with, is passed in by the binary's table (New).
package merge
