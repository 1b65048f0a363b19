// Package replay implements `dpsim replay FILE.mcap`: a recording of `dpsim run --record`
// published onto a live NATS bus at its recorded pace (scaled by --speed, or as fast as
// possible), checked (--check), or rewritten as a closed file when it was killed before it
// closed (--recover). Reading, pacing and checking are internal/busrec's (Replay, Check,
// Recover).
package replay
