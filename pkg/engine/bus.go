package engine

import (
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/sim"
)

// The bus traffic of a run (Options.Bus): each worker collects the publications of the
// episode it plays (busTap, over sim.Network.SetPublish) into a buffer of its own
// (busEpisode), and the run hands the buffers to Options.Bus in episode order (busOrder), as
// the traced episodes go to TraceSink. Episodes finish out of order across workers, so a
// buffer waits until those before it were handed on: a few episodes, each one episode's
// messages (its publications and their values), and buffers are reused.

// busEpisode is one episode's publications; Values and Except of each point into vals and
// excs once the episode ended (fix).
type busEpisode struct {
	pubs  []sim.Publication
	offs  []int // where each publication's values begin in vals
	vals  []float64
	xoffs []int // where each publication's Except begins in excs
	excs  []endpoint.Endpoint
}

func (e *busEpisode) reset() {
	e.pubs, e.offs, e.vals, e.xoffs, e.excs = e.pubs[:0], e.offs[:0], e.vals[:0], e.xoffs[:0], e.excs[:0]
}

// fix points each publication's Values into vals (nil for a gap): vals no longer grows.
func (e *busEpisode) fix() {
	for i := range e.pubs {
		xend := len(e.excs)
		if i+1 < len(e.xoffs) {
			xend = e.xoffs[i+1]
		}
		e.pubs[i].Except = nil
		if xend > e.xoffs[i] {
			e.pubs[i].Except = e.excs[e.xoffs[i]:xend:xend]
		}
		end := len(e.vals)
		if i+1 < len(e.offs) {
			end = e.offs[i+1]
		}
		if e.pubs[i].Gap {
			e.pubs[i].Values = nil
			continue
		}
		e.pubs[i].Values = e.vals[e.offs[i]:end:end]
	}
}

// busTap is a worker's collector: the network's publish hook, filling the episode's buffer.
type busTap struct{ next, cur *busEpisode }

func (b *busTap) begin() {
	b.cur, b.next = b.next, nil
	b.cur.reset()
}

func (b *busTap) end() {
	b.cur.fix()
	b.cur = nil
}

// add copies one publication (its values valid during the call only) into the buffer.
func (b *busTap) add(p *sim.Publication) {
	e := b.cur
	e.offs = append(e.offs, len(e.vals))
	e.vals = append(e.vals, p.Values...)
	e.xoffs = append(e.xoffs, len(e.excs))
	e.excs = append(e.excs, p.Except...)
	q := *p
	q.Values, q.Except = nil, nil
	e.pubs = append(e.pubs, q)
}

// busOrder hands the episodes' buffers to Options.Bus in episode order, from the goroutine
// that folds the episodes, and recycles them.
type busOrder struct {
	fn   func(ep int, pubs []sim.Publication) error
	free chan *busEpisode
	held map[int]*busEpisode
	next int
	err  error // the first error of fn: nothing is handed on after it
}

func newBusOrder(fn func(int, []sim.Publication) error, workers int) busOrder {
	return busOrder{fn: fn, free: make(chan *busEpisode, 2*workers+2), held: map[int]*busEpisode{}}
}

// buffer returns a buffer for a worker's next episode (nil without Options.Bus). Safe for
// concurrent use.
func (o *busOrder) buffer() *busEpisode {
	if o.fn == nil {
		return nil
	}
	select {
	case e := <-o.free:
		return e
	default:
		return &busEpisode{}
	}
}

// add takes episode ep's buffer (e nil: none) and hands on the held ones as far as they are
// contiguous (flushAll: all of them in episode order, over the gaps a stop left). It returns
// the first error of Options.Bus.
func (o *busOrder) add(ep int, e *busEpisode, flushAll bool) error {
	if e != nil {
		o.held[ep] = e
	}
	for o.err == nil && len(o.held) > 0 {
		e := o.held[o.next]
		if e == nil {
			if !flushAll {
				return nil
			}
			o.next = minKey(o.held)
			continue
		}
		delete(o.held, o.next)
		o.err = o.fn(o.next, e.pubs)
		o.next++
		select {
		case o.free <- e:
		default:
		}
	}
	return o.err
}
