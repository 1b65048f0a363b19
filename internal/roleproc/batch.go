package roleproc

import (
	"cmp"
	"slices"

	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// coalescer gathers what the publishers of a process release for its episodes in flight and
// sends the same step of consecutive episodes as one message (wire.Route.Episodes): in
// lockstep, one message per step and direction for all of them. Only plain broadcasts of
// publishers whose links have no rule are gathered (pubStream.coalesce); the others go out
// one message per episode, as their faults need.
type coalescer struct {
	streams []*batchStream // in the order they first released
	vals    []float64      // scratch: a run's values, concatenated
}

// batchStream is one publisher's gathered releases.
type batchStream struct {
	ps      *pubStream
	entries []batchEntry
	arena   []float64
}

// batchEntry is one release: episode, step and its values in the stream's arena.
type batchEntry struct {
	ep, step, off, n int
}

// add gathers the release of step of episode ep by ps (values are copied).
func (c *coalescer) add(ps *pubStream, ep, step int, values []float64) {
	var bs *batchStream
	for _, s := range c.streams {
		if s.ps.subject == ps.subject {
			bs = s
			break
		}
	}
	if bs == nil {
		bs = &batchStream{ps: ps}
		c.streams = append(c.streams, bs)
	}
	bs.entries = append(bs.entries, batchEntry{ep: ep, step: step, off: len(bs.arena), n: len(values)})
	bs.arena = append(bs.arena, values...)
}

// pending reports whether releases wait to be sent.
func (c *coalescer) pending() bool {
	for _, s := range c.streams {
		if len(s.entries) > 0 {
			return true
		}
	}
	return false
}

// flush sends what was gathered: per publisher, by step, then episode (each episode's steps
// keep their order), the runs of consecutive episodes of one step as one message each.
func (c *coalescer) flush() error {
	for _, s := range c.streams {
		if len(s.entries) == 0 {
			continue
		}
		slices.SortStableFunc(s.entries, func(a, b batchEntry) int {
			if a.step != b.step {
				return cmp.Compare(a.step, b.step)
			}
			return cmp.Compare(a.ep, b.ep)
		})
		for i := 0; i < len(s.entries); {
			first := s.entries[i]
			j := i + 1
			for j < len(s.entries) && j-i < wire.MaxEpisodes && s.entries[j].step == first.step && s.entries[j].ep == first.ep+(j-i) {
				j++
			}
			c.vals = c.vals[:0]
			for _, e := range s.entries[i:j] {
				c.vals = append(c.vals, s.arena[e.off:e.off+e.n]...)
			}
			var r wire.Route // one episode: the plain message of one episode
			if j-i > 1 {
				r.Episodes = j - i
			}
			if err := s.ps.pub.SendRouted(first.ep, first.step, c.vals, r); err != nil {
				return err
			}
			i = j
		}
		s.entries, s.arena = s.entries[:0], s.arena[:0]
	}
	return nil
}

// batchSplit hands out a batched message's episodes one by one.
type batchSplit struct {
	vals   []float64 // the message's values (valid until the inbox's next message)
	ep     int       // its first episode
	n, dim int       // episodes, values per episode
	next   int       // the next episode to hand out
}

// part fills m (its sender and route already set) with the next episode's delivery.
func (b *batchSplit) part(m *sim.Msg) *sim.Msg {
	i := b.next
	b.next++
	if b.next == b.n {
		b.n, b.next = 0, 0
	}
	m.Episode = b.ep + i
	m.Values = b.vals[i*b.dim : (i+1)*b.dim]
	return m
}
