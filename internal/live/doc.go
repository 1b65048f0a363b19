// Package live is the live view of a run (dpsim run --ui): a Hub the launcher feeds as the run
// goes - progress, the merged records of the traced episodes (thinned), in realtime the messages
// as they are published (Stream), per-link counters (the injector side replayed live:
// LinkReplay; the rest as points finish), process health with memory sampled while they run,
// the timeline of faults and exits - and the HTTP server that
// shows it: the page (embedded, with its vendored charting library: it works offline), a JSON
// snapshot (/api/state), Server-Sent Events (/events) and Prometheus metrics (/metrics).
//
// Every server of the live view (Serve, ServeAudit, ServeView) answers only requests that carry
// its random token and name it in their Host header, refuses other origins and takes changes
// only as JSON (guard.go; docs/live-view.md): a web page of another site can neither read the
// run's true state nor change its faults.
//
// The hub is cheap when nobody looks: feeding it takes a mutex and copies a few numbers of a
// traced record (the records of the traced episodes only, thinned to MaxPoints per episode,
// the last MaxEpisodes episodes kept); snapshots, JSON and metrics are made when a client asks
// for them. Its memory is bounded whatever the run's length.
package live
