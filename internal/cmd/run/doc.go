// Package run implements the command `dpsim run`: it parses its flags, validates a scenario and
// every sweep point, and runs the Monte Carlo episodes - with the fast engine, or over NATS
// through the launcher (internal/launch: the server set-up, one session of role processes per
// point, the collection of their traces into the records and Results, the same aggregation as
// the fast engine) - then writes DIR/summary.json, the traces, the resume state and report.md,
// and prints the summary.
//
//	dpsim run scenarios/cloud-vehicle.yaml --out out/vehicle
//	dpsim run scenarios/consensus-gaussian.yaml --agents-per-process 5
//	dpsim run scenarios/cloud-vehicle.yaml --engine fast --runs 100000
//
// # Processes and protocol
//
// The processes, the coordination protocol on dpsim.<run>.ctl.*, the faults and delivery
// headers, the security of the traffic, crashes and outages, and time (lockstep and realtime)
// are the launcher's: go doc github.com/dpsim/dpsim/internal/launch (and pkg/contract for the
// payloads and file names a role process shares with it), and so is the play of one point's
// episodes over NATS with its trace file (launch.PlayPoint, launch.TraceOut). This package
// keeps the command: its flags, the run's points, OUT/resume.json, summary.json, the report
// and what is printed.
//
// # Files
//
//	DIR/summary.json        scenario, seed (+ seed_string, the same in decimal for readers that parse
//	                        JSON numbers as doubles, and its source), runs, steps, nats_url, status, error,
//	                        processes [{role, id, pid, max_rss_bytes, max_rss_source, exit_code, invalid,
//	                        timing, ...}], metrics (metrics.Results; a list for a sweep), points (one per sweep
//	                        point: requested and completed episodes, missing pieces, trace_episodes),
//	                        timing, invalid, stale, security, engine, mode, inflight (the episodes kept in
//	                        flight at once over the processes, --inflight: asked, used, groups, the
//	                        largest, and the episodes run alone because a crash, a server restart or a
//	                        proxy reset was scheduled in them)
//	DIR/report.md, *.png    the report (pkg/report); after a failure or Ctrl-C it opens with a status
//	                        banner (error, episodes completed of requested, missing pieces, realtime
//	                        misses) and its verdict is marked partial
//	DIR/trace.jsonl         merged per-step records of the first --trace-episodes episodes (default 100;
//	                        -1 every episode, 0 none; pkg/sim trace format, JSON lines); trace-pNN.jsonl per
//	                        point for a sweep. The metrics always cover every episode.
//	DIR/faults.jsonl        --engine fast with link faults: what the injector did to the traced episodes'
//	                        messages, one fault.Event per message not delivered on time once (faults-pNN.jsonl
//	                        per point); a NATS run has each process's own in procs/<name>.faults.jsonl
//	DIR/procs/[pNN/]        each process's own files: <name>.trace.jsonl (its partial records of every
//	                        episode, which the metrics are computed from; the plant's is the only place
//	                        x(t) is written), <name>.result.json, <name>.log (its zerolog stderr),
//	                        eavesdropper-0.transcript.jsonl (every message it received)
//
// Before it writes, the launcher removes from DIR what an earlier run wrote there (summary.json,
// report.md, trace.jsonl, trace-pNN.jsonl, the report's figures, and in procs/ and procs/pNN/
// the processes' *.log, *.trace.jsonl, *.result.json, *.transcript.jsonl), so a reused --out
// never mixes two runs; other files are left alone.
//
// Peak memory per process (max_rss_bytes): each role process reads its own VmHWM from
// /proc/self/status when it ends (Linux; max_rss_source "VmHWM") or its getrusage ru_maxrss
// elsewhere ("getrusage"), and reports it in its result. The wait4 rusage of the child is only
// a fallback ("wait4", also in wait_max_rss_bytes): on Linux it includes the launcher's memory
// at fork/exec, so a small child of a large launcher would look large.
//
// Exit status: 0 when every episode of every point completed and every process exited 0; 1
// when a process failed (the error names it and quotes its last log line), the run was
// interrupted (partial results are written, summary.json "status": "interrupted"), or a wait
// timed out; 2 for a usage error. A malformed scenario is reported with the field, value and
// line.
package run
