// Package view implements `dpsim view OUT`: the finished run in OUT (a `dpsim run --out`
// directory) served in the live view's page - its traced episodes with a step slider, every
// figure of report.md as an interactive plot, the fault timeline and the summary - until
// interrupted (or --for D). Loading and serving are internal/live's (LoadView, ServeView).
package view
