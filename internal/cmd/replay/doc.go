// Package replay implements `dpsim replay FILE.mcap`: a recording of `dpsim run --record`
// published onto a live NATS bus with its headers at its recorded pace (scaled by --speed, or as
// fast as possible), checked and re-run into a fresh eavesdropper to the recorded metrics bit for
// bit (--check), or rewritten as a closed file when it was killed before it closed (--recover).
// Reading, pacing, checking and the re-run are internal/busrec's (Replay, Check, Rerun, Recover).
package replay
