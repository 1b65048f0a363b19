package roleproc

import "github.com/dpsim/dpsim/pkg/trace"

// diskBound is the disk bound of --keep-episodes: a process keeps the records of its traced
// episodes (the first N) in its trace, transcript and fault log; each later episode's trace
// records replace the previous one's, and its transcript and fault log lines are not written.
// The launcher reads every episode before it starts the next (it folds each into its metrics),
// so nothing is lost but disk. It is computed here only: the process reports in each ctl.done
// where its next episode's records begin (next), and the launcher reads from there.
type diskBound struct {
	keep     trace.Episodes
	finished int   // episodes done
	keepEnd  int64 // the trace's size after the last kept episode (-1: not reached yet)
	end      int64 // the trace's size after the last episode done
	// keeping says whether the episode in progress is kept: its transcript and fault log are
	// written (set when it begins).
	keeping bool
}

func newDiskBound(keep trace.Episodes) diskBound {
	b := diskBound{keep: keep, keeping: true}
	b.restore(0, -1)
	return b
}

// restore puts the bound in the state of a checkpoint: finished episodes done, keepEnd.
func (b *diskBound) restore(finished int, keepEnd int64) {
	b.finished, b.keepEnd = finished, keepEnd
	if b.keep.None() {
		b.keepEnd = 0 // nothing is kept: every episode starts at 0
	}
	b.keeping = b.keep.Traced(finished)
}

// begin starts an episode: at is where its trace records begin when the file must be cut
// back there first (cut), past the kept episodes.
func (b *diskBound) begin() (at int64, cut bool) {
	b.keeping = b.keep.Traced(b.finished)
	return b.keepEnd, b.keepEnd >= 0
}

// done ends an episode whose records end at end (the trace's size once flushed).
func (b *diskBound) done(end int64) {
	b.finished++
	b.end = end
	if n, bounded := b.keep.Limit(); bounded && b.keepEnd < 0 && b.finished == n {
		b.keepEnd = end
	}
}

// next is where the next episode's trace records begin: the end of the kept episodes once
// they are all done, else the end of the last episode (ctl.done's TraceNext).
func (b *diskBound) next() int64 {
	if b.keepEnd >= 0 {
		return b.keepEnd
	}
	return b.end
}
