// Package contract is the protocol between the launcher (dpsim run, internal/launch) and a role
// process (dpsim plant, cloud, agent, eavesdropper): everything one side writes and the other
// reads, and nothing else. It is the single Go source of that protocol; a process written in
// another language implements what is here.
//
//   - Files: the names of a process's files in its --out directory (ProcName, PlanFile,
//     TraceFile, ResultFile, TranscriptFile, FaultsFile, CheckpointFile, LogFile).
//   - Coordination payloads on dpsim.<run>.ctl.* (the words are pkg/wire's Ctl* tokens, the
//     envelope is wire.Message): Ready [pid, plan digest], Done [steps, missed, pid, trace
//     next], Rejoin [restart step, pid], the launcher's episode, x0 and stop messages, and the
//     timing the two sides share (GridLead, ReadyRepeat). Neither side indexes Message.Values
//     by hand.
//   - The result a process reports when it ends (ProcessResult, on ctl.result and in
//     <name>.result.json, version ResultVersion).
//   - Which episodes are traced: trace.Episodes (pkg/trace, so that the in-process engines,
//     which need no bus, share it), with one meaning for the launcher's --trace-episodes, a
//     process's --keep-episodes (N, 0 none, -1 all) and the engines' options. The process
//     reports where each episode's records end (Done), so the offsets are computed on its
//     side only.
package contract
