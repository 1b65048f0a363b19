package launch

import (
	"io"

	"github.com/dpsim/dpsim/pkg/trace"
)

// A shard of a run over NATS (dpsim run --shard I/N) plays, of each point, only its chunks of
// the episodes (PlayOptions.Ranges), with the same processes, and hands every episode over as
// the fast engine's chunks hold it (PlayOptions.Reduced). An episode is a pure function of the
// plan, the run's seeds and its own number - the processes draw its noise and its link fates
// from them, and the scenario's process faults are scheduled by episode number - so episode e
// is the same whichever episodes its processes played before it.

// EpisodeRange is the episodes Lo..Hi-1 of a point.
type EpisodeRange struct{ Lo, Hi int }

// ranges are the episodes o plays: o.Ranges, else o.Start..o.Runs-1.
func (o PlayOptions) ranges() []EpisodeRange {
	if o.Ranges != nil {
		return o.Ranges
	}
	if o.Start >= o.Runs {
		return nil
	}
	return []EpisodeRange{{o.Start, o.Runs}}
}

// nextEpisode is the episode after the first played ones (the end of the last range when
// all were played): the first the collection counts unfinished.
func (o PlayOptions) nextEpisode(played int) int {
	rs := o.ranges()
	for _, r := range rs {
		if played < r.Hi-r.Lo {
			return r.Lo + played
		}
		played -= r.Hi - r.Lo
	}
	if len(rs) == 0 {
		return o.Start
	}
	return rs[len(rs)-1].Hi
}

// keepEpisodes are the episodes the processes keep in their traces (SessionConfig.KeepEpisodes):
// a process counts the episodes it played, so the traced ones among those it plays - the
// first ones, since the traced episodes are the point's first.
func (o PlayOptions) keepEpisodes() trace.Episodes {
	if o.Ranges == nil || o.TraceEpisodes.All() {
		return o.TraceEpisodes.From(o.Start)
	}
	n := 0
	for _, r := range o.Ranges {
		for ep := r.Lo; ep < r.Hi && o.TraceEpisodes.Traced(ep); ep++ {
			n++
		}
	}
	return trace.FirstEpisodes(n)
}

// reduce sets the collection's hand-over of reduced episodes (o.Reduced): the records of the
// traced episodes are kept from the merge (a traceKeeper watching it, discarding the writes when
// there is no trace file) and handed over with their episode.
func (o PlayOptions) reduce(copts *CollectOptions) {
	if o.Reduced == nil {
		return
	}
	keep := &traceKeeper{next: copts.Watch, eps: map[int]*trace.Traces{}}
	if copts.Trace == nil && !o.TraceEpisodes.None() {
		copts.Trace, copts.TraceEpisodes = io.Discard, o.TraceEpisodes
	}
	copts.Watch = keep
	copts.Reduced = func(ep int, episode []byte) error { return o.Reduced(ep, episode, keep.take(ep)) }
}

// traceKeeper keeps copies of the merged records of the traced episodes until their episode is
// handed over (take), and passes them on to next (nil: none).
type traceKeeper struct {
	next RecordWatcher
	eps  map[int]*trace.Traces
}

func (k *traceKeeper) of(ep int) *trace.Traces {
	tr := k.eps[ep]
	if tr == nil {
		tr = &trace.Traces{}
		k.eps[ep] = tr
	}
	return tr
}

func (k *traceKeeper) Control(point int, r *trace.ControlRecord) {
	tr := k.of(r.Episode)
	tr.Control = append(tr.Control, r.Clone())
	if k.next != nil {
		k.next.Control(point, r)
	}
}

func (k *traceKeeper) Consensus(point int, r *trace.ConsensusRecord) {
	tr := k.of(r.Episode)
	tr.Consensus = append(tr.Consensus, r.Clone())
	if k.next != nil {
		k.next.Consensus(point, r)
	}
}

// take returns the records kept of episode ep and forgets them (nil: none, not traced).
func (k *traceKeeper) take(ep int) *trace.Traces {
	tr := k.eps[ep]
	delete(k.eps, ep)
	return tr
}
