// Package record declares what a run records: summary.json, the main product of `dpsim run`,
// and the parts of it other packages fill in - the fault timeline (TimelineEvent), how the
// traffic was secured (Security), the files holding secrets (SecretFiles), the problems
// attributed to a process (Problem), the processes a run left behind (Leftover), the episodes
// in flight (InflightCounts), the live interventions (Intervention) and the worker farm's
// dispatch (Dispatch).
//
// It is plain data low in the house: the launcher (internal/launch), the worker farm
// (internal/farm) and the run library fill it, the report (pkg/report) and the live view
// (internal/live) read it, and none of them declares a part of summary.json of its own. A
// field added here is one field of the file; docs/outputs.md describes them.
package record
