// Package merge implements `dpsim merge OUT PART...`: the N parts written by `dpsim audit
// --shard I/N --out PART` (a Slurm job array, a Kubernetes Indexed Job) checked to be the N
// slices of one audit and folded into the outputs the unsharded audit writes - audit.json,
// report.md, the figures and the verdict - bit for bit but the elapsed time. Reading, checking
// and folding the parts are internal/auditrun's (ReadShards, NewMerged, ShardsPlayer).
package merge
