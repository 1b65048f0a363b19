package roleproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// coreRunner is every role process: the cores it hosts (plant; cloud; agents ID..LastAgent;
// eavesdropper) run by the one sim.Driver over a natsTransport, with a pacer for the wall
// clock and a sink writing the cores' partial records to the process's trace file. The
// step order, the missing-input rules and the faults live in pkg/sim and pkg/fault; this is
// only I/O.
type coreRunner struct {
	cores []sim.Core
	tr    *natsTransport
	pace  *pacer
	drv   *sim.Driver
	nx, n int // plant state dimension (control) / agents in the network (consensus)

	file    *os.File
	records // the trace file's writer
	// inflight runs the groups of episodes in flight (nil until the first: inflight.go);
	// grouped counts the records its slots wrote to the trace file; inGroup says the last
	// episode ran in a group.
	inflight *inflight
	grouped  int
	inGroup  bool
	// carried are the counters of the episodes run in flight before a crash (the checkpoint's)
	carried inflightCounts

	bound   diskBound  // --keep-episodes
	epStart time.Time  // when the episode in progress began (busy time of a checkpoint)
	syncing chan error // the background fsync of the last finished episode (nil: none)

	// live is the generation of live faults in force (ctl.faults; zero: the scenario's)
	live liveFaults

	// the injector's record of this process's messages (<name>.faults.jsonl)
	ffile *os.File
	fw    *bufio.Writer
	fenc  *json.Encoder
	ferr  error

	// eavesdropper transcript
	tfile *os.File
	tw    *bufio.Writer
	enc   *json.Encoder
	line  transcriptLine
	msgs  int
}

// transcriptLine is one received message in the eavesdropper's transcript: the receive time,
// the subject and the payload (as JSON when it is JSON, else base64 in data_b64).
type transcriptLine struct {
	T       int64           `json:"t"`
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data,omitempty"`
	DataB64 []byte          `json:"data_b64,omitempty"`
}

// buildCores returns the cores a process of role hosts.
func buildCores(proc *process) ([]sim.Core, error) {
	p, cfg := proc.plan, proc.cfg
	one := func(c sim.Core, err error) ([]sim.Core, error) {
		if err != nil {
			return nil, err
		}
		return []sim.Core{c}, nil
	}
	if !cfg.Role.Many() && cfg.ID != 0 {
		return nil, fmt.Errorf("--id %d: a run has one %s, id 0", cfg.ID, cfg.Role)
	}
	switch cfg.Role {
	case endpoint.Plant:
		return one(sim.NewPlantCore(p, cfg.Seed))
	case endpoint.Cloud:
		return one(sim.NewCloudCore(p))
	case endpoint.Eavesdropper:
		return one(sim.NewEavesdropperCoreOfBlocks(p, sim.NewBlocks(p, cfg.Batch)))
	case endpoint.Agent:
		if p.Graph == nil {
			return nil, fmt.Errorf("agents need a consensus scenario")
		}
		if cfg.LastAgent >= p.Graph.N {
			return nil, fmt.Errorf("agents %d..%d: the network has %d agents (0..%d)", cfg.ID, cfg.LastAgent, p.Graph.N, p.Graph.N-1)
		}
		if hs := sim.NewBlocks(p, cfg.Batch); hs.Batched() {
			if lo, hi := hs.Block(hs.First(cfg.ID)); lo != cfg.ID || hi-1 != cfg.LastAgent {
				return nil, fmt.Errorf("--batch %d: --agents %d..%d is not a block of the run (want %d..%d)", cfg.Batch, cfg.ID, cfg.LastAgent, lo, hi-1)
			}
			return one(sim.NewBlockCore(p, cfg.Seed, hs, cfg.ID))
		}
		var out []sim.Core
		for i := cfg.ID; i <= cfg.LastAgent; i++ {
			a, err := sim.NewAgentCore(p, cfg.Seed, i)
			if err != nil {
				return nil, err
			}
			if len(a.Senders()) == 0 {
				return nil, fmt.Errorf("agent %d has no neighbours", i)
			}
			out = append(out, a)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown role %q", cfg.Role)
}

// expectOf is what a sender's data messages must carry.
func expectOf(proc *process, s endpoint.Endpoint) (subject string, e wire.Expect) {
	e = wire.Expect{Run: proc.cfg.Run, Steps: proc.steps, Sender: s.String(), Kind: s.Role.Stream()}
	switch s.Role {
	case endpoint.Plant:
		e.Dim = proc.plan.System.Ny()
	case endpoint.Cloud:
		e.Dim = proc.plan.System.Nu()
	case endpoint.Block: // a block: one value per agent
		lo, hi := sim.NewBlocks(proc.plan, proc.cfg.Batch).Block(s.ID)
		e.Dim = hi - lo
	default:
		e.Dim = 1
	}
	return proc.subj.Data(s), e
}

// setup implements runner: the cores, the inbox, the transport and its fault log, the pacer,
// the driver and the trace file.
func (r *coreRunner) setup(proc *process) error {
	cores, err := buildCores(proc)
	if err != nil {
		return err
	}
	r.cores = cores
	if proc.plan.System != nil {
		r.nx = proc.plan.System.Nx()
	}
	if proc.plan.Graph != nil {
		r.n = proc.plan.Graph.N
	}
	eve := proc.cfg.Role == endpoint.Eavesdropper
	in, err := r.openInbox(proc, eve)
	if err != nil {
		return err
	}
	inj, err := fault.New(&proc.scn.Faults, proc.cfg.FaultSeed)
	if err != nil {
		return err
	}
	if r.tr, err = newNATSTransport(proc, in, cores, inj); err != nil {
		return err
	}
	r.tr.mid, r.tr.onMid = &proc.mid, func(c *midChange) error { return r.applyMid(proc, c) }
	if inj.Active() && len(r.tr.pubs) > 0 {
		if err := r.openFaultLog(proc); err != nil {
			return err
		}
	}
	r.pace = newPacer(proc, eve)
	r.drv = sim.NewDriver(cores, r.tr, r.pace, r.sink)
	if len(crashesOf(proc, cores)) > 0 {
		r.drv.OnCrash = func(c sim.Core) error { return r.crash(proc, c) }
	}
	if err := r.openTraceFile(proc); err != nil {
		return err
	}
	r.bound = newDiskBound(proc.cfg.KeepEpisodes)
	return nil
}

// openInbox subscribes the process's one inbox to what its cores hear (the eavesdropper: to
// everything of the run, tapping its transcript).
func (r *coreRunner) openInbox(proc *process, eve bool) (*bus.Inbox, error) {
	// Late copies of a finished episode reach the cores, which count them stale and compare
	// them with the copies they used (a differing one is a conflict).
	opts := bus.InboxOptions{Counters: &proc.data, Stop: proc.stopCh, Verify: proc.verify, OnInvalid: proc.logInvalid, PassStale: true}
	if eve {
		// Coordination messages are legitimate traffic: skipped here, not counted as invalid.
		opts.Unknown = func(subject string) bool {
			s, err := wire.ParseSubject(subject)
			return err == nil && s.IsCtl()
		}
		if err := r.openTranscript(proc); err != nil {
			return nil, err
		}
		opts.Tap = r.tap
	}
	// The buffer holds a few steps of every expected sender's messages: per sender it does not
	// shrink as the network grows (10,000 agents, one message each per step, to the
	// eavesdropper).
	senders := 0
	for _, c := range r.cores {
		senders += len(c.Senders())
	}
	opts.Buffer = max(bus.DefaultInboxBuffer, 8*senders)
	in := proc.conn.NewInbox(opts)
	proc.in = in
	for _, c := range r.cores {
		for _, s := range c.Senders() {
			in.Expect(expectOf(proc, s))
		}
	}
	var err error
	if eve {
		err = in.SubscribeTo(proc.subj.All())
	} else {
		err = in.Subscribe()
	}
	return in, err
}

// openTraceFile creates the trace file and its writer for the records of the role's cores.
func (r *coreRunner) openTraceFile(proc *process) error {
	var err error
	if r.file, err = proc.openTrace(); err != nil {
		return err
	}
	r.records = newRecords(proc, atomicfile.LineFile{File: r.file}) // a write cut short leaves no partial line
	return nil
}

// records writes the records of a process's cores as trace lines to one writer: the trace
// file, or the buffer of an episode in flight.
type records struct {
	ctrace *trace.Writer[trace.ControlRecord]
	atrace *trace.Writer[trace.AgentRecord]
	// blockBuf holds a block record's AgentRecords while they are written
	blockBuf []trace.AgentRecord
	ntrace   *trace.Writer[trace.ConsensusRecord]
	count    func() int
	flush    func() error // the trace writer's
}

// newRecords returns the record writer of proc's role over w.
func newRecords(proc *process, w io.Writer) records {
	var r records
	switch {
	case proc.cfg.Role == endpoint.Agent:
		r.atrace = trace.NewWriter[trace.AgentRecord](w)
		r.count, r.flush = r.atrace.Count, r.atrace.Flush
	case proc.scn.Kind == scenario.Consensus:
		r.ntrace = trace.NewWriter[trace.ConsensusRecord](w)
		r.count, r.flush = r.ntrace.Count, r.ntrace.Flush
	default:
		r.ctrace = trace.NewWriter[trace.ControlRecord](w)
		r.count, r.flush = r.ctrace.Count, r.ctrace.Flush
	}
	return r
}

// beginFiles prepares the files for the next episode: past the kept episodes, the trace is cut
// back to the end of the last kept one (the launcher has read the previous episode: it starts
// an episode only after every process reported the last one done and it folded it), and the
// transcript and fault log stop growing.
func (r *coreRunner) beginFiles() error {
	at, cut := r.bound.begin()
	if !cut {
		return nil
	}
	if err := r.file.Truncate(at); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	if _, err := r.file.Seek(at, io.SeekStart); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}

// endFiles makes the episode's records durable: every file this process writes is flushed
// to the kernel at once (a killed process loses no finished episode) and fsync'd once per
// episode (a power cut loses at most the episode in progress). The fsync runs in the
// background while the next episode goes on - the flush is what the launcher reads - and the
// next episode's fsync waits for it; finish waits for the last one.
func (r *coreRunner) endFiles() error {
	if err := r.flush(); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	if err := r.flushLogs(); err != nil {
		return err
	}
	if err := r.syncFiles(); err != nil {
		return err
	}
	end, err := r.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	r.bound.done(end)
	return nil
}

// flushLogs flushes the fault log and the transcript to the kernel.
func (r *coreRunner) flushLogs() error {
	if r.fw != nil {
		if err := r.fw.Flush(); err != nil {
			return fmt.Errorf("fault log: %w", err)
		}
	}
	if r.tw != nil {
		if err := r.tw.Flush(); err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
	}
	return nil
}

// traceNext implements runner: where the next episode's records begin in the trace file.
func (r *coreRunner) traceNext() int64 { return r.bound.next() }

// syncFiles starts the fsync of this episode's files in the background, after the previous
// one finished (its error, if any, is returned now).
func (r *coreRunner) syncFiles() error {
	err := r.waitSync()
	files := []*os.File{r.file}
	if r.ffile != nil {
		files = append(files, r.ffile)
	}
	if r.tfile != nil {
		files = append(files, r.tfile)
	}
	done := make(chan error, 1)
	r.syncing = done
	go func() {
		var first error
		for _, f := range files {
			if err := f.Sync(); err != nil && first == nil {
				first = fmt.Errorf("fsync %s: %w", f.Name(), err)
			}
		}
		done <- first
	}()
	return err
}

// waitSync waits for the background fsync in progress (nil: none) and returns its error.
func (r *coreRunner) waitSync() error {
	if r.syncing == nil {
		return nil
	}
	err := <-r.syncing
	r.syncing = nil
	return err
}

// syncWriter flushes a buffered writer into f and fsyncs f.
func syncWriter(flush func() error, f *os.File) error {
	if err := flush(); err != nil {
		return err
	}
	return f.Sync()
}

func (r *coreRunner) checkX0(x0 []float64) error {
	if x0 == nil {
		return nil
	}
	switch r.cores[0].Endpoint().Role {
	case endpoint.Plant:
		if len(x0) != r.nx || !finite(x0) {
			return fmt.Errorf("plant x0 needs %d finite values, got %d", r.nx, len(x0))
		}
	case endpoint.Agent, endpoint.Block:
		if len(x0) != r.n || !finite(x0) {
			return fmt.Errorf("consensus x0 needs %d finite values (one per agent), got %d", r.n, len(x0))
		}
	}
	return nil // the cloud and the eavesdropper never read it
}

// sink writes a core's records as trace lines.
func (r *records) sink(_ sim.Core, rd *sim.Ready) error {
	for i := range rd.Control {
		if err := r.ctrace.Write(&rd.Control[i]); err != nil {
			return err
		}
	}
	for i := range rd.Agent {
		if err := r.atrace.Write(&rd.Agent[i]); err != nil {
			return err
		}
	}
	for i := range rd.Blocks {
		r.blockBuf = rd.Blocks[i].AppendAgents(r.blockBuf[:0])
		for k := range r.blockBuf {
			if err := r.atrace.Write(&r.blockBuf[k]); err != nil {
				return err
			}
		}
	}
	for i := range rd.Consensus {
		if err := r.ntrace.Write(&rd.Consensus[i]); err != nil {
			return err
		}
	}
	return nil
}

// episode runs one episode of every hosted core.
func (r *coreRunner) episode(proc *process, st episodeStart) error {
	if err := r.beginFiles(); err != nil {
		return err
	}
	r.inGroup = false
	return r.drive(proc, st.ep, gridOrigin(st), func() error { return r.drv.Episode(st.ep, st.x0, nil) })
}

// drive runs episode ep on the driver (run: from its start, or resumed) with the tick grid
// at origin, and makes its records durable.
func (r *coreRunner) drive(proc *process, ep int, origin time.Time, run func() error) error {
	r.tr.begin(ep)
	r.pace.begin(origin)
	r.epStart = time.Now()
	forced := r.drv.Forced()
	err := run()
	proc.clock.MissN(r.drv.Forced() - forced)
	if eerr := r.tr.end(); err == nil {
		err = eerr
	}
	if err != nil {
		return err
	}
	if err := r.endFiles(); err != nil {
		return err
	}
	proc.res.Steps += proc.steps
	proc.res.Records = r.count() + r.grouped
	return nil
}

// linkStats returns the process's per-link counters: its publishers' (injector side) and its
// cores' (receive side).
func (r *coreRunner) linkStats() []fault.LinkStats {
	lists := [][]fault.LinkStats{r.inflightCounts().Links}
	for _, ps := range r.tr.pubs {
		lists = append(lists, ps.ob.Stats())
	}
	for _, c := range r.cores {
		lists = append(lists, c.LinkStats())
	}
	return sim.MergeLinkStats(lists...)
}

// openFaultLog records what the injector does to each of this process's messages.
func (r *coreRunner) openFaultLog(proc *process) error {
	name := contract.FaultsFile(proc.cfg.Name())
	f, err := proc.createFile(name)
	if err != nil {
		return fmt.Errorf("fault log: %w", err)
	}
	r.ffile, r.fw = f, bufio.NewWriterSize(atomicfile.LineFile{File: f}, 1<<16)
	r.fenc = json.NewEncoder(r.fw)
	proc.res.FaultsFile = name
	for _, ps := range r.tr.pubs {
		ps.ob.Log = func(ev *fault.Event) {
			if !r.bound.keeping {
				return
			}
			if err := r.fenc.Encode(ev); err != nil && r.ferr == nil {
				r.ferr = err
			}
		}
	}
	return nil
}

func (r *coreRunner) openTranscript(proc *process) error {
	if !proc.cfg.Transcript {
		return nil
	}
	name := contract.TranscriptFile(proc.cfg.Name())
	f, err := os.Create(filepath.Join(proc.cfg.Out, name))
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	r.tfile = f
	proc.res.TranscriptFile = name
	r.tw = bufio.NewWriterSize(atomicfile.LineFile{File: f}, 1<<16)
	r.enc = json.NewEncoder(r.tw)
	return nil
}

// tap writes every message the eavesdropper receives to its transcript.
func (r *coreRunner) tap(subject string, data []byte) {
	r.msgs++
	if r.enc == nil || !r.bound.keeping {
		return
	}
	r.line = transcriptLine{T: time.Now().UnixNano(), Subject: subject}
	if utf8.Valid(data) && json.Valid(data) {
		r.line.Data = data
	} else {
		r.line.DataB64 = data
	}
	_ = r.enc.Encode(&r.line)
}

func (r *coreRunner) finish(proc *process) error {
	serr := r.waitSync()
	if r.tr != nil {
		r.drainStale()
		r.tr.close()
		proc.res.Links = r.linkStats()
	}
	for _, c := range r.cores {
		proc.res.Unexpected += c.Unexpected()
		proc.res.Stale += c.Stale()
	}
	if r.tr != nil {
		in := r.inflightCounts()
		proc.res.Unexpected += in.Unexpected
		proc.res.Stale += r.tr.stale + in.Stale
	}
	var err error
	if r.ffile != nil {
		err = r.ferr
		if ferr := syncWriter(r.fw.Flush, r.ffile); err == nil {
			err = ferr
		}
		if cerr := r.ffile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			err = fmt.Errorf("fault log: %w", err)
		}
	}
	if proc.in != nil && r.tfile != nil {
		// Whatever is still queued (the last coordination messages) goes into the transcript too.
		proc.in.DrainTap()
	}
	if r.tfile != nil || proc.cfg.Role == endpoint.Eavesdropper {
		proc.res.Messages = r.msgs
	}
	if r.tw != nil {
		terr := syncWriter(r.tw.Flush, r.tfile)
		if cerr := r.tfile.Close(); terr == nil {
			terr = cerr
		}
		if terr != nil && err == nil {
			err = fmt.Errorf("transcript: %w", terr)
		}
	}
	var tw flusher
	switch {
	case r.ctrace != nil:
		tw = r.ctrace
	case r.atrace != nil:
		tw = r.atrace
	case r.ntrace != nil:
		tw = r.ntrace
	}
	if cerr := closeTrace(proc, tw, r.file); err == nil {
		err = cerr
	}
	proc.res.Records += r.grouped
	if err == nil && serr != nil {
		err = serr
	}
	return err
}

// drainStale hands the cores the data messages still queued at the end of the run: copies
// of the last episode that came after the cores finished it are compared with the copies
// used like any other (a forged burst in the last episode is a conflict too), and counted.
func (r *coreRunner) drainStale() {
	tr, cores := r.tr, func(*sim.Msg) []sim.Core { return r.cores }
	if r.inGroup { // to the slot that ran the message's episode
		tr, cores = r.inflight.slots[0].tr, func(m *sim.Msg) []sim.Core { return r.inflight.slotOf(m.Episode).cores }
	}
	for {
		m, err := tr.Recv(time.Time{}) // queued only: the stop already came
		if err != nil {
			return
		}
		for _, c := range cores(m) {
			if c.Done() && addressedTo(m, c) { // an unfinished core (interrupted) is left as it is
				_ = c.Deliver(m) // a finished core files it as stale: no output, no error
				c.Ready()
			}
		}
	}
}

// addressedTo reports whether delivery m is for core c: c expects its sender and m is
// addressed to c, or to all but a list that does not name c.
func addressedTo(m *sim.Msg, c sim.Core) bool {
	if !slices.Contains(c.Senders(), m.From) {
		return false
	}
	if !m.ToAll {
		return m.To == c.Endpoint()
	}
	return !slices.Contains(m.Except, c.Endpoint())
}

type flusher interface {
	Flush() error
	Count() int
}

func closeTrace(proc *process, tw flusher, f *os.File) error {
	if f == nil {
		return nil
	}
	var err error
	if tw != nil {
		err = syncWriter(tw.Flush, f)
		proc.res.Records = tw.Count()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}
