// Package kinds is the work the worker farm (internal/farm) plays, plugged into it as
// farm.Kind: a point's episodes of the fast engine (the run kind: pkg/engine's chunks,
// engine.PlayChunk, folded by engine.Fold; Run) and the distinguishing game of pkg/audit (the
// audit kind: audit.PlayChunk's scores folded into the game's outcome; Audit). The farm itself
// knows neither: it hands out chunks, checks their answers with the job's farm.Judge, verifies,
// quarantines and attributes; this package says what a chunk is, how it is checked, compared and
// folded. `dpsim worker` plays All.
package kinds
