package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// MaxMissingListed bounds Collected.Missing; MissingCount has the total.
const MaxMissingListed = 100

// Collected is what the processes of a point recorded, merged into the sim records.
type Collected struct {
	// Control / Consensus are the merged records (CollectOptions.Keep only).
	Control   []trace.ControlRecord
	Consensus []trace.ConsensusRecord
	// Missing lists the first MaxMissingListed record pieces no process supplied;
	// MissingCount counts all of them.
	Missing      []trace.Missing
	MissingCount int
	// Episodes is the number of episodes found in the traces; TracedEpisodes and
	// TraceRecords count what was written to CollectOptions.Trace.
	Episodes       int
	TracedEpisodes int
	TraceRecords   int
	Results        *metrics.Results
}

// CollectOptions say where the merged records go.
type CollectOptions struct {
	// Trace receives the merged records (the pkg/trace format, JSON lines) of the traced
	// episodes (TraceEpisodes; the zero value: all), as they are merged; nil: none are
	// written.
	Trace         io.Writer
	TraceEpisodes trace.Episodes
	// Keep also returns every merged record in Collected: memory then grows with the
	// episodes (tests and short hand-driven runs).
	Keep bool
	// Watch, if set, sees each merged record of the traced episodes as it is written to
	// Trace (nothing when Trace is nil): the live view of a run (internal/live). It changes
	// nothing that is written.
	Watch RecordWatcher
	// Point is the point's index handed to Watch.
	Point int
	// Episodes, if set, receives each aggregated episode's per-run values
	// (metrics.Accumulator.SetEpisodeSink), a resumed point's replayed ones included.
	Episodes func(ep int, values []float64)
	// Reduced, if set, receives each complete episode reduced on its own, under its own number
	// (metrics.Accumulator.MarshalEpisode: what the fast engine's chunks hold, engine.Chunk),
	// in episode order: a shard of a run keeps them for dpsim merge (PlayOptions.Reduced).
	Reduced func(ep int, episode []byte) error
}

// RecordWatcher sees the merged records of a point's traced episodes as the collector writes
// them, in episode and step order, from the goroutine that merges (one at a time). A record
// and its slices are views valid during the call only: a watcher copies what it keeps, and
// must be cheap (it runs inside the merge).
type RecordWatcher interface {
	Control(point int, r *trace.ControlRecord)
	Consensus(point int, r *trace.ConsensusRecord)
}

// TracePath is the trace file, in a point's process directory dir, of the process of role r
// and id (an agent host: its agents id..last).
func TracePath(dir string, r endpoint.Role, id, last int) string {
	return filepath.Join(dir, contract.TraceFile(contract.ProcName(r, id, last)))
}

// Collect is CollectTo(CollectOptions{Keep: true}): the merged records in memory.
func (s *Session) Collect() (*Collected, error) { return s.CollectTo(CollectOptions{Keep: true}) }

// CollectTo reads the processes' trace files to their end and merges them (see Collector):
// one Poll and Finish. A run whose processes bound their traces (KeepEpisodes) must be
// collected episode by episode instead, with a Collector polled after each episode.
func (s *Session) CollectTo(o CollectOptions) (*Collected, error) {
	c, err := s.NewCollector(o)
	if err != nil {
		return nil, err
	}
	perr := c.Poll()
	col, ferr := c.Finish()
	return col, errors.Join(perr, ferr)
}

// Collector merges the processes' trace files into the run's records and metrics as they
// grow: each Poll reads what every trace file holds beyond what was read before and merges it
// one episode at a time (trace.MergeControlStreams / MergeConsensusStreams: every process
// writes its records in episode order), so memory stays that of one episode whatever the
// number of episodes. Each complete episode is folded into the Results by the same
// Accumulator as the fast engine (metrics.Accumulator.Results), in episode order, so the numbers
// are the fast engine's bit for bit; episodes with missing pieces (an interrupted run) are not
// aggregated and are listed in Results.IncompleteEpisodes. A trace file that cannot be read
// is reported in the error; what the other files hold is still merged.
//
// Polled after every episode, or every group of episodes in flight (the launcher does), it
// also bounds the disk: processes started with KeepEpisodes cut their trace back to the end of
// the kept episodes when the next episode (group) begins. The collector reads each process's
// trace from where the process said its next episode begins (contract.Done.TraceNext, its
// last ctl.done): the bound is computed by the process alone.
type Collector struct {
	s   *Session
	o   CollectOptions
	acc *metrics.Accumulator
	f   *folder
	// off is where each process's trace is read from at the next Poll.
	off  map[string]int64
	errs []error
	// reduced are the episodes being reduced on their own (CollectOptions.Reduced), by number.
	reduced map[int]*metrics.Episode
}

// NewCollector returns a collector of the session's traces.
func (s *Session) NewCollector(o CollectOptions) (*Collector, error) {
	acc, err := metrics.NewAccumulator(s.cfg.Plan, s.cfg.Seeds.Run)
	if err != nil {
		return nil, err
	}
	acc.SetEpisodeSink(o.Episodes)
	c := &Collector{s: s, o: o, acc: acc, off: map[string]int64{}, reduced: map[int]*metrics.Episode{}}
	out := &Collected{}
	c.f = &folder{out: out, steps: s.cfg.Plan.Steps, unfinishedFrom: math.MaxInt, unfinished: -1,
		traced: func(ep int) bool { return o.Trace != nil && o.TraceEpisodes.Traced(ep) },
		noteMissing: func(ms []trace.Missing) {
			out.MissingCount += len(ms)
			if room := MaxMissingListed - len(out.Missing); room > 0 {
				out.Missing = append(out.Missing, ms[:min(room, len(ms))]...)
			}
		}}
	return c, nil
}

// Poll merges what the trace files gained since the last Poll. With bounded traces, call it
// once after every episode (or group of episodes in flight), before the next one starts.
func (c *Collector) Poll() error {
	t := &pollFiles{dir: c.s.cfg.Dir, off: c.off}
	defer t.close()
	err := c.merge(t.open)
	c.advanceOffsets()
	return c.noteErr(errors.Join(append(t.errs, err)...))
}

// merge merges the records read through open, of either kind.
func (c *Collector) merge(open func(*Proc) io.Reader) error {
	switch c.s.cfg.Plan.Scenario.Kind {
	case scenario.CloudControl:
		return c.mergeControl(open)
	case scenario.Consensus:
		return c.mergeConsensus(open)
	}
	return nil
}

// noteErr keeps err (nil: none) for Finish and returns it.
func (c *Collector) noteErr(err error) error {
	if err != nil {
		c.errs = append(c.errs, err)
	}
	return err
}

// MaxSnapshotBytes bounds a Snapshot: what the trace files gained beyond it is merged from the
// files (Poll), so the launcher's memory stays bounded whatever the episodes in flight.
const MaxSnapshotBytes = 64 << 20

// Snapshot is what the trace files gained since the last Poll or Snapshot, read into memory
// (Collector.Snapshot) to be merged later (Collector.Merge) while the processes go on: they may
// cut their files back once the next group begins, the snapshot keeps what was there.
type Snapshot struct {
	data map[string][]byte
	errs []error
}

// Snapshot reads what every trace file gained since the last Poll or Snapshot into memory and
// moves the read offsets on, as Poll does, unless that is more than limit bytes in all: it then
// reads nothing and returns false (merge with Poll). Call it where Poll would be called.
func (c *Collector) Snapshot(limit int64) (*Snapshot, bool) {
	t := &pollFiles{dir: c.s.cfg.Dir, off: c.off}
	defer t.close()
	sections := make(map[string]*io.SectionReader, len(c.s.procs))
	var total int64
	for _, pr := range c.s.procs {
		if sr := t.section(pr); sr != nil {
			sections[pr.Name], total = sr, total+sr.Size()
		}
	}
	if total > limit {
		return nil, false
	}
	snap := &Snapshot{data: make(map[string][]byte, len(sections)), errs: t.errs}
	for name, sr := range sections {
		b := make([]byte, sr.Size())
		if _, err := io.ReadFull(sr, b); err != nil {
			snap.errs = append(snap.errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		snap.data[name] = b
	}
	c.advanceOffsets()
	return snap, true
}

// Merge merges a Snapshot as Poll merges the files, and returns Poll's error. It may run while
// the processes play the next group, never together with another Merge or Poll.
func (c *Collector) Merge(snap *Snapshot) error {
	err := c.merge(func(pr *Proc) io.Reader { return bytes.NewReader(snap.data[pr.Name]) })
	return c.noteErr(errors.Join(append(snap.errs, err)...))
}

// pollFiles are the trace files one Poll reads: each from where its process's next episode
// began (the Collector's off).
type pollFiles struct {
	dir   string
	off   map[string]int64
	files []*os.File
	errs  []error
}

// open returns the part of process pr's trace file not read yet. A file that cannot be read
// records its error and reads as empty.
func (t *pollFiles) open(pr *Proc) io.Reader {
	sr := t.section(pr)
	if sr == nil {
		return strings.NewReader("")
	}
	return bufio.NewReaderSize(sr, 1<<16)
}

// section is the part of process pr's trace file not read yet (nil: the file cannot be read,
// its error recorded).
func (t *pollFiles) section(pr *Proc) *io.SectionReader {
	f, err := os.Open(filepath.Join(t.dir, contract.TraceFile(pr.Name)))
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("%s: %w", pr.Name, err))
		return nil
	}
	t.files = append(t.files, f)
	st, err := f.Stat()
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("%s: %w", pr.Name, err))
		return nil
	}
	off := t.off[pr.Name]
	if st.Size() < off {
		t.errs = append(t.errs, fmt.Errorf("%s: the trace file has %d bytes, its process said its episode begins at %d", pr.Name, st.Size(), off))
		return nil
	}
	return io.NewSectionReader(f, off, st.Size()-off)
}

// close closes the files opened.
func (t *pollFiles) close() {
	for _, f := range t.files {
		_ = f.Close()
	}
}

// mergeControl merges the new records of a cloud-control point's plant, cloud and eavesdropper
// (read through open) step by step and folds them into the metrics (and the trace).
func (c *Collector) mergeControl(open func(*Proc) io.Reader) error {
	s, p, f := c.s, c.s.cfg.Plan, c.f
	var plant, cloud, eve *trace.Reader[trace.ControlRecord]
	for _, pr := range s.procs {
		r := trace.NewReader[trace.ControlRecord](open(pr))
		switch pr.Role {
		case endpoint.Plant:
			plant = r
		case endpoint.Cloud:
			cloud = r
		case endpoint.Eavesdropper:
			eve = r
		}
	}
	var tw *trace.Writer[trace.ControlRecord]
	if c.o.Trace != nil {
		tw = trace.NewWriter[trace.ControlRecord](c.o.Trace)
	}
	var keep *[]trace.ControlRecord
	if c.o.Keep {
		keep = &f.out.Control
	}
	var watch func(*trace.ControlRecord)
	if w, pt := c.o.Watch, c.o.Point; w != nil {
		watch = func(r *trace.ControlRecord) { w.Control(pt, r) }
	}
	mergeErr := trace.MergeControlStreams(p.Steps, p.Reference, plant, cloud, eve, func(recs []trace.ControlRecord, missing []trace.Missing) error {
		for i := range recs {
			var ms []trace.Missing
			if i == 0 {
				ms = missing
			}
			if err := foldRecord(f, &recs[i], ms, tw, keep, watch, func(r *trace.ControlRecord) (*int, int, []float64) { return &r.Episode, r.Step, r.X },
				(*trace.ControlRecord).Clone, func(r *trace.ControlRecord, ep int) error {
					return c.addRecord(ep, r.Step, func() error { return c.acc.AddControl(r) }, func(e *metrics.Episode) error { return c.acc.PutControl(e, r) })
				}, c.discard); err != nil {
				return err
			}
		}
		return nil
	})
	if tw != nil {
		if err := tw.Flush(); err != nil && mergeErr == nil {
			mergeErr = err
		}
	}
	return mergeErr
}

// mergeConsensus merges the new records of a consensus point's agents and eavesdropper (read
// through open) step by step and folds them into the metrics (and the trace).
func (c *Collector) mergeConsensus(open func(*Proc) io.Reader) error {
	s, p, f := c.s, c.s.cfg.Plan, c.f
	var agents []*trace.Reader[trace.AgentRecord]
	var names []string
	var eve *trace.Reader[trace.ConsensusRecord]
	for _, pr := range s.procs {
		if pr.Role == endpoint.Agent {
			agents = append(agents, trace.NewReader[trace.AgentRecord](open(pr)))
			names = append(names, pr.Name)
			continue
		}
		eve = trace.NewReader[trace.ConsensusRecord](open(pr))
	}
	var tw *trace.Writer[trace.ConsensusRecord]
	if c.o.Trace != nil {
		tw = trace.NewWriter[trace.ConsensusRecord](c.o.Trace)
	}
	var keep *[]trace.ConsensusRecord
	if c.o.Keep {
		keep = &f.out.Consensus
	}
	var watch func(*trace.ConsensusRecord)
	if w, pt := c.o.Watch, c.o.Point; w != nil {
		watch = func(r *trace.ConsensusRecord) { w.Consensus(pt, r) }
	}
	mergeErr := trace.MergeConsensusStreams(p.Graph.N, p.Steps, agents, names, eve, func(r *trace.ConsensusRecord, missing []trace.Missing) error {
		return foldRecord(f, r, missing, tw, keep, watch, func(r *trace.ConsensusRecord) (*int, int, []float64) { return &r.Episode, r.Step, r.X },
			(*trace.ConsensusRecord).Clone, func(r *trace.ConsensusRecord, ep int) error {
				return c.addRecord(ep, r.Step, func() error { return c.acc.AddConsensus(r) }, func(e *metrics.Episode) error { return c.acc.PutConsensus(e, r) })
			}, c.discard)
	})
	if tw != nil {
		if err := tw.Flush(); err != nil && mergeErr == nil {
			mergeErr = err
		}
	}
	return mergeErr
}

// advanceOffsets moves each file's read offset to where its process writes its next episode,
// as its last ctl.done said (contract.Done.TraceNext): the end of what was read, or with
// bounded traces the end of the kept episodes.
func (c *Collector) advanceOffsets() {
	for _, pr := range c.s.procs {
		c.off[pr.Name] = pr.traceNext.Load()
	}
}

// ResumeAt continues a point from episode start: acc holds the metrics of episodes
// 0..start-1 (rebuilt by the resumed launcher) and the processes, started afresh, begin at
// episode start.
func (c *Collector) ResumeAt(start int, acc *metrics.Accumulator) {
	f := c.f
	c.acc, f.merged, f.folded, f.out.Episodes = acc, start, start, start
	if c.o.Episodes != nil {
		acc.SetEpisodeSink(c.o.Episodes)
	}
	if c.o.Trace != nil {
		f.out.TracedEpisodes = start
		if n, bounded := c.o.TraceEpisodes.Limit(); bounded {
			f.out.TracedEpisodes = min(start, n)
		}
	}
}

// BoundSeries is the accumulator's BoundSeries: the mean square the paper bounds over the
// episodes folded so far, and their number. Not while a Merge runs.
func (c *Collector) BoundSeries() (runs int, s metrics.Series) { return c.acc.BoundSeries() }

// MetricsDigest is the digest of the metrics folded so far (the resume state's check).
func (c *Collector) MetricsDigest() (string, error) { return MetricsDigest(c.acc) }

// Unfinished declares the episodes from ep on unfinished: not every process reported them
// done (the run stopped in episode ep). Call it before the last Poll: what the processes
// wrote of such an episode is in no metric (each process may have finished it or not, so
// counting it would make the metrics of one role cover an episode the others' do not), it is
// listed in Results.IncompleteEpisodes, and its records in the trace are followed by a
// PartialMarkerKey line (Finish).
func (c *Collector) Unfinished(ep int) { c.f.unfinishedFrom = ep }

// Finish returns what was merged. The Accumulator folds episodes in the order they are
// numbered; the complete episodes were handed over in increasing episode order under the
// numbers 0, 1, 2, ..., so the sums are those of the fast engine (which folds episodes
// 0..runs-1 in order), and an incomplete episode never holds the later ones back in memory.
func (c *Collector) Finish() (*Collected, error) {
	out := c.f.out
	out.Results = c.acc.Results()
	out.Results.IncompleteEpisodes = c.f.incomplete
	if f := c.f; f.unfinishedRecords > 0 && c.o.Trace != nil {
		if err := json.NewEncoder(c.o.Trace).Encode(f.marker()); err != nil {
			c.errs = append(c.errs, fmt.Errorf("trace: marking the unfinished episode: %w", err))
		}
	}
	return out, errors.Join(c.errs...)
}

// folder is CollectTo's state across merged records.
type folder struct {
	out         *Collected
	steps       int
	traced      func(ep int) bool
	noteMissing func([]trace.Missing)
	folded      int   // complete episodes fold under consecutive numbers 0, 1, 2, ...
	merged      int   // episodes 0..merged-1 were merged (a bounded trace's last episode stays after the run: read once)
	incomplete  []int // episodes with missing pieces, not aggregated
	// The episode being merged: skip (merged before), whole (no piece missing so far).
	skip, whole bool
	// Episodes from unfinishedFrom on did not finish (Collector.Unfinished): unfinished is the
	// one being merged (-1: none) and unfinishedRecords counts its records in the trace; each
	// is followed by its marker line (with episodes in flight several are unfinished at once).
	unfinishedFrom, unfinished, unfinishedRecords int
}

// marker is the PartialMarkerKey line of the unfinished episode whose records were just written.
func (f *folder) marker() map[string]PartialMarker {
	return map[string]PartialMarker{PartialMarkerKey: {Episode: f.unfinished, Records: f.unfinishedRecords,
		Note: "the run stopped while this episode was in play: the records above, from its step 0, are what the processes wrote of it; it is in no metric"}}
}

// foldRecord handles one merged record of either kind; the records of an episode come in step
// order 0..T. It writes a kept episode's records to the trace (and hands them to watch, if
// set), keeps a copy in memory when asked
// (keep non-nil), and hands the records of an episode to the accumulator (add) under the next
// consecutive number - the fast engine's order - as they come: an episode found incomplete
// (a record without X) is discarded there (drop: its number and its own) and listed instead;
// add also gets the episode's own number (CollectOptions.Reduced). meta gives a record's
// episode and step fields and its state X (nil when a piece is missing); the record's slices
// may be views valid during the call only.
func foldRecord[R trace.ControlRecord | trace.ConsensusRecord](f *folder, rec *R, missing []trace.Missing, tw *trace.Writer[R],
	keep *[]R, watch func(*R), meta func(*R) (ep *int, step int, x []float64), clone func(*R) R, add func(r *R, ep int) error, drop func(folded, ep int)) error {
	epp, step, x := meta(rec)
	ep := *epp
	if step == 0 {
		f.skip = ep < f.merged
		if !f.skip {
			f.merged, f.whole = ep+1, true
			f.out.Episodes++
			if ep >= f.unfinishedFrom {
				f.whole = false // in no metric, whatever pieces it has
				f.incomplete = append(f.incomplete, ep)
				if f.unfinishedRecords > 0 && tw != nil { // the previous unfinished episode ends here
					if err := tw.WriteLine(f.marker()); err != nil {
						return err
					}
				}
				f.unfinished, f.unfinishedRecords = ep, 0
			} else if f.traced(ep) {
				f.out.TracedEpisodes++
			}
		}
	}
	if f.skip {
		return nil
	}
	unfinished := ep >= f.unfinishedFrom
	if !unfinished { // an unfinished episode lacks pieces because it did not finish
		f.noteMissing(missing)
	}
	if f.traced(ep) {
		if err := tw.Write(rec); err != nil {
			return err
		}
		f.out.TraceRecords++
		if watch != nil {
			watch(rec)
		}
		if unfinished {
			f.unfinishedRecords++
		}
	}
	if keep != nil {
		*keep = append(*keep, clone(rec))
	}
	if f.whole && x == nil {
		f.whole = false
		f.incomplete = append(f.incomplete, ep)
		drop(f.folded, ep)
	}
	if f.whole {
		r := *rec
		p, _, _ := meta(&r)
		*p = f.folded
		if err := add(&r, ep); err != nil {
			return fmt.Errorf("episode %d: %w", ep, err)
		}
		if step == f.steps {
			f.folded++
		}
	}
	return nil
}

// PartialMarkerKey is the key of the line that ends a merged trace file (trace.jsonl,
// trace-pNN.jsonl) whose last records belong to an episode that did not finish (a process
// died or the run was stopped in it): {"unfinished_episode": {"episode": 5, "records": 37,
// "note": "..."}}. The records above it, back to the first of that episode, are in no metric.
// The line is not a record: a reader of records (trace.Read) stops there with an error
// rather than take a partial episode for a finished one.
const PartialMarkerKey = "unfinished_episode"

// PartialMarker is the value of the PartialMarkerKey line.
type PartialMarker struct {
	Episode int    `json:"episode"` // the unfinished episode
	Records int    `json:"records"` // its records just above this line
	Note    string `json:"note"`
}

// addRecord folds a record of episode ep (at step) into the point's metrics (add) and, with
// CollectOptions.Reduced, into ep's own reduced episode (put), handed over at its last step.
func (c *Collector) addRecord(ep, step int, add func() error, put func(*metrics.Episode) error) error {
	if err := add(); err != nil {
		return err
	}
	if c.o.Reduced == nil {
		return nil
	}
	e := c.reduced[ep]
	if e == nil {
		e = c.acc.NewEpisode(ep)
		c.reduced[ep] = e
	}
	if err := put(e); err != nil {
		return err
	}
	if step < c.s.cfg.Plan.Steps {
		return nil
	}
	delete(c.reduced, ep)
	data, err := c.acc.MarshalEpisode(e)
	if err != nil {
		return fmt.Errorf("episode %d: %w", ep, err)
	}
	return c.o.Reduced(ep, data)
}

// discard drops what was added of an episode found incomplete: from the metrics under its
// folded number, and its own reduction.
func (c *Collector) discard(folded, ep int) {
	c.acc.Discard(folded)
	delete(c.reduced, ep)
}
