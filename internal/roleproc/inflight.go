package roleproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Episodes in flight (ctl.episodes). A process runs the count episodes of a group together:
// one slot per episode - its own cores, transport (outboxes: link fates and counters of its
// episode) and driver - built when a group first needs it and reused by the next groups. One
// loop receives from the process's one inbox and hands each delivery to the driver of its
// episode (every message names its episode; a batched one is split by the transport), ticks
// the drivers whose deadline passed, and ends when every driver is done: no goroutine per
// episode. The plain broadcasts of publishers without link rules are coalesced across the
// episodes (batch.go). Each slot's trace records and fault-log lines are buffered and written
// at the end of the group, episode by episode, so the files read as if the episodes had run
// one after the other; then one ctl.done per episode goes out, in episode order.

// inflight is a process's slots and the group in progress.
type inflight struct {
	slots        []*slot
	batch        *coalescer
	first, count int // the group in progress (or the last one)
	prevFirst    int // the group before it (stale deliveries go to the slot that ran theirs)
	prevCount    int
}

// slot is one episode in flight.
type slot struct {
	cores []sim.Core
	tr    *natsTransport
	drv   *sim.Driver
	buf   bytes.Buffer // the episode's trace lines
	records
	held    held         // its records not yet encoded (held.go)
	counted int          // records moved to the trace file
	flog    bytes.Buffer // the episode's fault-log lines
	fenc    *json.Encoder
	ferr    error
	keeping bool // the episode is kept (--keep-episodes): its fault-log lines are written
}

// groupOf returns the process's inflight with at least n slots.
func (r *coreRunner) groupOf(proc *process, n int) (*inflight, error) {
	if r.inflight == nil {
		r.inflight = &inflight{batch: &coalescer{}, prevFirst: -1}
	}
	g := r.inflight
	for len(g.slots) < n {
		s, err := r.newSlot(proc, g.batch)
		if err != nil {
			return nil, err
		}
		g.slots = append(g.slots, s)
	}
	return g, nil
}

// newSlot builds the cores, transport and driver of one more episode in flight.
func (r *coreRunner) newSlot(proc *process, batch *coalescer) (*slot, error) {
	cores, err := buildCores(proc)
	if err != nil {
		return nil, err
	}
	s := &slot{cores: cores, tr: r.tr.sibling(cores)}
	s.tr.batch = batch
	s.records = newRecords(proc, &s.buf)
	s.drv = sim.NewDriver(cores, s.tr, r.pace, s.holdSink)
	r.logSlot(s)
	return s, nil
}

// logSlot records what the injector does to the slot's messages in its own fault-log lines,
// when the process has a fault log (opened at the start, or by a live change adding a rule).
func (r *coreRunner) logSlot(s *slot) {
	if r.fw == nil {
		return
	}
	if s.fenc == nil {
		s.fenc = json.NewEncoder(&s.flog)
	}
	for _, ps := range s.tr.pubs {
		ps.ob.Log = func(ev *fault.Event) {
			if !s.keeping {
				return
			}
			if err := s.fenc.Encode(ev); err != nil && s.ferr == nil {
				s.ferr = err
			}
		}
	}
}

// checkGroup refuses what a group of more than one episode cannot run: realtime (one tick grid
// per episode) and crashes (a checkpoint holds one episode's cores).
func checkGroup(proc *process, first, count int) error {
	if count < 2 {
		return nil
	}
	if proc.cfg.Mode == wire.Realtime {
		return fmt.Errorf("episodes %d..%d in flight: realtime runs one episode at a time (send them one by one)", first, first+count-1)
	}
	for _, c := range proc.scn.Faults.Crashes {
		for ep := first; ep < first+count; ep++ {
			if c.In(ep) {
				return fmt.Errorf("episodes %d..%d in flight: %s crashes in episode %d (faults.crashes), which must run alone (a checkpoint holds one episode)",
					first, first+count-1, c.Proc, ep)
			}
		}
	}
	return nil
}

// group implements runner: the episodes first..first+count-1 of st in flight from their
// explicit initial states x0s (nil: the scenario's), their files written in episode order;
// done hears of each episode in order once all are done, with where the next one's records
// begin in the trace file.
func (r *coreRunner) group(proc *process, st episodeStart, x0s [][]float64, done func(ep int, traceNext int64) error) error {
	if err := checkGroup(proc, st.ep, st.count); err != nil {
		return err
	}
	g, err := r.groupOf(proc, st.count)
	if err != nil {
		return err
	}
	r.inGroup = true
	if err := r.beginGroup(proc, g, st); err != nil {
		return err
	}
	forced := g.forced()
	err = r.runGroup(g, x0s)
	proc.clock.MissN(g.forced() - forced)
	for _, s := range g.slots[:g.count] {
		if eerr := s.tr.end(); err == nil {
			err = eerr
		}
	}
	if err != nil {
		r.writePartial(g)
		return err
	}
	nexts, err := r.writeGroup(proc, g)
	if err != nil {
		return err
	}
	for k, next := range nexts {
		if err := done(g.first+k, next); err != nil {
			return err
		}
	}
	return nil
}

// beginGroup starts the group of st: the trace is cut back as for its first episode, the
// inbox takes the group's episodes, each slot's outboxes begin its episode.
func (r *coreRunner) beginGroup(proc *process, g *inflight, st episodeStart) error {
	if err := r.beginFiles(); err != nil {
		return err
	}
	g.prevFirst, g.prevCount, g.first, g.count = g.first, g.count, st.ep, st.count
	keepAny := false
	for k, s := range g.slots[:g.count] {
		s.tr.beginOutboxes(st.ep + k)
		s.keeping = r.bound.keep.Traced(r.bound.finished + k)
		keepAny = keepAny || s.keeping
	}
	// The transcript is the wire, where a message may carry several episodes: it is written
	// while any episode of the group is kept.
	r.bound.keeping = keepAny
	g.slots[0].tr.in.SetEpisodes(st.ep, st.count)
	r.pace.begin(gridOrigin(st))
	r.epStart = time.Now()
	return nil
}

// runGroup begins every slot's episode and runs the receive loop until all are done; what
// was coalesced goes out at the end.
func (r *coreRunner) runGroup(g *inflight, x0s [][]float64) error {
	for k, s := range g.slots[:g.count] {
		var x0 []float64
		if k < len(x0s) {
			x0 = x0s[k]
		}
		if err := s.drv.Begin(g.first+k, x0); err != nil {
			return err
		}
	}
	recv := g.slots[0].tr
	recv.idle = g.encodeHeld
	defer func() { recv.idle = nil }()
	if err := g.loop(); err != nil {
		return err
	}
	return g.batch.flush()
}

// loop is the group's one receive loop (sim.Driver's loop over several drivers): what is
// queued is delivered at once; only when nothing is, the drivers' deadlines are gathered (a
// pass over every slot, not one per delivery) and the receive waits until the earliest, and
// the drivers whose deadline passed are ticked if nothing came. Groups run in lockstep, where
// no output is held for a release time, so releasing before each wait is releasing before
// each receive.
func (g *inflight) loop() error {
	slots, recv := g.slots[:g.count], g.slots[0].tr
	live := 0
	for _, s := range slots {
		if !s.drv.Done() {
			live++
		}
	}
	for live > 0 {
		m, err := recv.Recv(time.Time{})
		if errors.Is(err, sim.ErrIdle) {
			var deadline time.Time
			if deadline, err = g.wait(); err == nil {
				m, err = recv.Recv(deadline)
			}
			if errors.Is(err, sim.ErrIdle) {
				if live, err = g.tickDue(); err != nil {
					return err
				}
				continue
			}
		}
		if err != nil {
			return err
		}
		s := g.slotOf(m.Episode)
		done := s.drv.Done()
		if err := s.drv.Deliver(m); err != nil {
			return err
		}
		if !done && s.drv.Done() {
			live--
		}
	}
	return nil
}

// wait releases what is due and returns the earliest deadline of the drivers not done.
func (g *inflight) wait() (time.Time, error) {
	var deadline time.Time
	for _, s := range g.slots[:g.count] {
		if err := s.drv.Release(); err != nil {
			return deadline, err
		}
		if s.drv.Done() {
			continue
		}
		if d := s.drv.Deadline(); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	return deadline, nil
}

// tickDue ticks the drivers not done whose deadline passed and returns how many are not done.
func (g *inflight) tickDue() (live int, err error) {
	for _, s := range g.slots[:g.count] {
		if s.drv.Done() {
			continue
		}
		if err := s.drv.TickDue(); err != nil {
			return 0, err
		}
		if !s.drv.Done() {
			live++
		}
	}
	return live, nil
}

// slotOf returns the slot of episode ep: the group's, else the one that ran it in the group
// before (a stale copy, compared there with the copy used), else the first.
func (g *inflight) slotOf(ep int) *slot {
	if k := ep - g.first; k >= 0 && k < g.count {
		return g.slots[k]
	}
	if k := ep - g.prevFirst; k >= 0 && k < g.prevCount {
		return g.slots[k]
	}
	return g.slots[0]
}

// forced sums the slots' steps completed by a deadline.
func (g *inflight) forced() int {
	n := 0
	for _, s := range g.slots {
		n += s.drv.Forced()
	}
	return n
}

// writeGroup appends the group's trace records and fault-log lines episode by episode, makes
// them durable as endFiles does, and returns each episode's trace next (ctl.done).
func (r *coreRunner) writeGroup(proc *process, g *inflight) ([]int64, error) {
	nexts := make([]int64, g.count)
	for k, s := range g.slots[:g.count] {
		if err := s.flushHeld(); err != nil {
			return nil, err
		}
		if _, err := (atomicfile.LineFile{File: r.file}).Write(s.buf.Bytes()); err != nil {
			return nil, fmt.Errorf("trace file: %w", err)
		}
		s.buf.Reset()
		r.grouped += s.count() - s.counted
		s.counted = s.count()
		if s.ferr != nil {
			return nil, fmt.Errorf("fault log: %w", s.ferr)
		}
		if r.fw != nil && s.keeping {
			if _, err := r.fw.Write(s.flog.Bytes()); err != nil {
				return nil, fmt.Errorf("fault log: %w", err)
			}
		}
		s.flog.Reset()
		end, err := r.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("trace file: %w", err)
		}
		r.bound.done(end)
		nexts[k] = r.bound.next()
		proc.res.Steps += proc.steps
	}
	if err := r.flushLogs(); err != nil {
		return nil, err
	}
	proc.res.Records = r.count() + r.grouped
	return nexts, r.syncFiles()
}

// writePartial writes what the slots of an unfinished group recorded, episode by episode, as
// an unfinished episode leaves its records in the trace (best effort: the group failed or
// was stopped).
func (r *coreRunner) writePartial(g *inflight) {
	for _, s := range g.slots[:g.count] {
		if s.flushHeld() == nil {
			_, _ = (atomicfile.LineFile{File: r.file}).Write(s.buf.Bytes())
		}
		s.buf.Reset()
		s.flog.Reset()
		r.grouped += s.count() - s.counted
		s.counted = s.count()
	}
}

// inflightCounts returns the counters of every episode run in flight: those carried over a
// restart and the slots'.
func (r *coreRunner) inflightCounts() inflightCounts {
	out := r.carried
	lists := [][]fault.LinkStats{r.carried.Links}
	if r.inflight != nil {
		for _, s := range r.inflight.slots {
			for _, ps := range s.tr.pubs {
				lists = append(lists, ps.ob.Stats())
			}
			for _, c := range s.cores {
				lists = append(lists, c.LinkStats())
				out.Unexpected += c.Unexpected()
				out.Stale += c.Stale()
			}
			out.Stale += s.tr.stale
		}
	}
	out.Links = sim.MergeLinkStats(lists...)
	return out
}

// awaitX0s returns the private x(0) of each episode of a group, in order.
func (proc *process) awaitX0s(first, count int) ([][]float64, error) {
	x0s := make([][]float64, count)
	for k := range x0s {
		x0, err := proc.awaitX0(first + k)
		if err != nil {
			return nil, err
		}
		x0s[k] = x0
	}
	return x0s, nil
}

// maxQueuedX0 is how many private x(0)s may wait: a whole group's, and more.
const maxQueuedX0 = contract.MaxInflight + 16
