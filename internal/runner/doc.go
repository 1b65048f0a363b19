// Package runner is a run of a scenario as a library: what `dpsim run` does between parsing its
// flags and printing its table. It validates the scenario and every sweep point, estimates the
// run's cost against the budget, and plays the points one after the other with one loop
// (playPoints) over one engine interface (pointEngine), played by
//
//   - the fast engine in-process (pkg/engine's Run),
//   - the worker farm (internal/farm with internal/farm/kinds: the same episodes in chunks on
//     `dpsim worker` processes, bit for bit the same Results and traces), and
//   - the role processes over NATS (internal/launch: the server set-up, one session of role
//     processes per point, the collection of their traces into the records and Results).
//
// What a run writes are observers of that loop: the summary (pkg/record's Summary, written as
// summary.json), the point's trace file, the resume state (resume.json, checkpointed as
// episodes complete), the live view's hub (--ui), the progress bar or plain progress lines, the
// MCAP recording of the bus (--record, recording.go over internal/busrec) and the timeline of
// faults; report.md is written from the summary at the end (pkg/report).
//
//	o := &runner.Options{ScenarioPath: "scenarios/cloud-vehicle.yaml", Engine: "fast", ...}
//	out, err := runner.Execute(ctx, o, os.Stderr, log)
//
// The Options are the flags of `dpsim run` (internal/cmd/run parses them and hands its parser
// in: --resume reads the recorded command line again).
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
// Before it writes, the run removes from DIR what an earlier run wrote there (summary.json,
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
// Exit status of the command over it: Execute's error is nil when every episode of every
// point completed and every process exited 0.
package runner
