// Package run implements the command `dpsim run`: it parses its flags and runs the Monte Carlo
// episodes of a scenario - with the fast engine, or over NATS
// through the launcher (internal/launch: the server set-up, one session of role processes per
// point, the collection of their traces into the records and Results, the same aggregation as
// the fast engine) - then writes DIR/summary.json, the traces, the resume state and report.md,
// and prints the summary.
//
//	dpsim run scenarios/cloud-vehicle.yaml --out out/vehicle
//	dpsim run scenarios/consensus-gaussian.yaml --agents-per-process 5
//	dpsim run scenarios/cloud-vehicle.yaml --engine fast --runs 100000
//
// The run itself - the points, the one loop over the fast engine, the worker farm or the role
// processes over NATS, resume, summary.json and report.md - is the library internal/runner
// (go doc github.com/dpsim/dpsim/internal/runner, with the files a run writes); this package
// keeps the command: its flags, its help, the call and what is printed (the table or --json).
//
// Exit status: 0 when every episode of every point completed and every process exited 0; 1
// when a process failed (the error names it and quotes its last log line), the run was
// interrupted (partial results are written, summary.json "status": "interrupted"), or a wait
// timed out; 2 for a usage error. A malformed scenario is reported with the field, value and
// line.
package run
