package role

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

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
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

	file   *os.File
	ctrace *sim.TraceWriter[sim.ControlRecord]
	atrace *sim.TraceWriter[sim.AgentRecord]
	// blockBuf holds a block record's AgentRecords while they are written
	blockBuf []sim.AgentRecord
	ntrace   *sim.TraceWriter[sim.ConsensusRecord]
	count    func() int
	flush    func() error // the trace writer's

	// Disk bound (--keep-episodes): finished counts the episodes done; keepEnd is the trace
	// file's size after the last kept episode (-1: not reached yet), where every later
	// episode starts; keeping says whether this episode's transcript and fault log are written.
	finished int
	keepEnd  int64
	keeping  bool
	epStart  time.Time  // when the episode in progress began (busy time of a checkpoint)
	syncing  chan error // the background fsync of the last finished episode (nil: none)

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
func buildCores(n *node) ([]sim.Core, error) {
	p, cfg := n.plan, n.cfg
	one := func(c sim.Core, err error) ([]sim.Core, error) {
		if err != nil {
			return nil, err
		}
		return []sim.Core{c}, nil
	}
	if cfg.Role != bus.RoleAgent && cfg.ID != 0 {
		return nil, fmt.Errorf("--id %d: a run has one %s, id 0", cfg.ID, cfg.Role)
	}
	switch cfg.Role {
	case bus.RolePlant:
		return one(sim.NewPlantCore(p, cfg.Seed))
	case bus.RoleCloud:
		return one(sim.NewCloudCore(p))
	case bus.RoleEavesdropper:
		return one(sim.NewHostedEavesdropperCore(p, sim.NewHosts(p, cfg.Batch)))
	case bus.RoleAgent:
		if p.Graph == nil {
			return nil, fmt.Errorf("agents need a consensus scenario")
		}
		if cfg.LastAgent >= p.Graph.N {
			return nil, fmt.Errorf("agents %d..%d: the network has %d agents (0..%d)", cfg.ID, cfg.LastAgent, p.Graph.N, p.Graph.N-1)
		}
		if hs := sim.NewHosts(p, cfg.Batch); hs.Batched() {
			if lo, hi := hs.Block(hs.First(cfg.ID)); lo != cfg.ID || hi-1 != cfg.LastAgent {
				return nil, fmt.Errorf("--batch %d: --agents %d..%d is not a block of the run (want %d..%d)", cfg.Batch, cfg.ID, cfg.LastAgent, lo, hi-1)
			}
			return one(sim.NewHostCore(p, cfg.Seed, hs, cfg.ID))
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
func expectOf(n *node, s sim.Endpoint) (subject string, e bus.Expect) {
	e = bus.Expect{Run: n.cfg.Run, Steps: n.steps, Sender: s.String(), Kind: streamKind(s)}
	switch s.Role {
	case sim.RolePlant:
		e.Dim = n.plan.System.Ny()
	case sim.RoleCloud:
		e.Dim = n.plan.System.Nu()
	case sim.RoleHost: // a block: one value per agent
		lo, hi := sim.NewHosts(n.plan, n.cfg.Batch).Block(s.ID)
		e.Dim = hi - lo
	default:
		e.Dim = 1
	}
	return dataSubject(n.subj, s), e
}

func (r *coreRunner) setup(n *node) error {
	cores, err := buildCores(n)
	if err != nil {
		return err
	}
	r.cores = cores
	if n.plan.System != nil {
		r.nx = n.plan.System.Nx()
	}
	if n.plan.Graph != nil {
		r.n = n.plan.Graph.N
	}
	eve := n.cfg.Role == bus.RoleEavesdropper
	// Late copies of a finished episode reach the cores, which count them stale and compare
	// them with the copies they used (a differing one is a conflict).
	opts := bus.InboxOptions{Counters: &n.data, Stop: n.stopCh, Verify: n.verify, OnInvalid: n.logInvalid, PassStale: true}
	if eve {
		// Coordination messages are legitimate traffic: skipped here, not counted as invalid.
		opts.Unknown = func(subject string) bool {
			s, err := bus.ParseSubject(subject)
			return err == nil && s.IsCtl()
		}
		if err := r.openTranscript(n); err != nil {
			return err
		}
		opts.Tap = r.tap
	}
	// The buffer holds a few steps of every expected sender's messages: per sender it does not
	// shrink as the network grows (10,000 agents, one message each per step, to the
	// eavesdropper).
	senders := 0
	for _, c := range cores {
		senders += len(c.Senders())
	}
	opts.Buffer = max(bus.DefaultInboxBuffer, 8*senders)
	in := n.conn.NewInbox(opts)
	n.in = in
	for _, c := range cores {
		for _, s := range c.Senders() {
			in.Expect(expectOf(n, s))
		}
	}
	if eve {
		err = in.SubscribeTo(n.subj.All())
	} else {
		err = in.Subscribe()
	}
	if err != nil {
		return err
	}
	inj, err := fault.New(&n.scn.Faults, n.cfg.FaultSeed)
	if err != nil {
		return err
	}
	if r.tr, err = newNATSTransport(n, in, cores, inj); err != nil {
		return err
	}
	if inj.Active() && len(r.tr.pubs) > 0 {
		if err := r.openFaultLog(n); err != nil {
			return err
		}
	}
	r.pace = newPacer(n, eve)
	r.drv = sim.NewDriver(cores, r.tr, r.pace, r.sink)
	if len(crashesOf(n, cores)) > 0 {
		r.drv.OnCrash = func(c sim.Core) error { return r.crash(n, c) }
	}
	if r.file, err = n.openTrace(); err != nil {
		return err
	}
	switch {
	case n.cfg.Role == bus.RoleAgent:
		r.atrace = sim.NewTraceWriter[sim.AgentRecord](r.file)
		r.count, r.flush = r.atrace.Count, r.atrace.Flush
	case n.scn.Kind == scenario.Consensus:
		r.ntrace = sim.NewTraceWriter[sim.ConsensusRecord](r.file)
		r.count, r.flush = r.ntrace.Count, r.ntrace.Flush
	default:
		r.ctrace = sim.NewTraceWriter[sim.ControlRecord](r.file)
		r.count, r.flush = r.ctrace.Count, r.ctrace.Flush
	}
	r.keepEnd = -1
	if n.cfg.KeepEpisodes == 0 {
		r.keepEnd = 0
	}
	r.keeping = true
	return nil
}

// beginFiles prepares the files for the next episode: past the kept episodes, the trace is cut
// back to the end of the last kept one (the launcher has read the previous episode: it starts
// an episode only after every process reported the last one done and it folded it), and the
// transcript and fault log stop growing.
func (r *coreRunner) beginFiles(n *node) error {
	r.keeping = n.cfg.KeepEpisodes < 0 || r.finished < n.cfg.KeepEpisodes
	if r.keepEnd < 0 {
		return nil
	}
	if err := r.file.Truncate(r.keepEnd); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	if _, err := r.file.Seek(r.keepEnd, io.SeekStart); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}

// endFiles makes the episode's records durable: every file this process writes is flushed
// to the kernel at once (a killed process loses no finished episode) and fsync'd once per
// episode (a power cut loses at most the episode in progress). The fsync runs in the
// background while the next episode goes on - the flush is what the launcher reads - and the
// next episode's fsync waits for it; finish waits for the last one.
func (r *coreRunner) endFiles(n *node) error {
	r.finished++
	if err := r.flush(); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
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
	if err := r.syncFiles(); err != nil {
		return err
	}
	if r.keepEnd < 0 && r.finished == n.cfg.KeepEpisodes {
		end, err := r.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return fmt.Errorf("trace file: %w", err)
		}
		r.keepEnd = end
	}
	return nil
}

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
	case sim.RolePlant:
		if len(x0) != r.nx || !finite(x0) {
			return fmt.Errorf("plant x0 needs %d finite values, got %d", r.nx, len(x0))
		}
	case sim.RoleAgent, sim.RoleHost:
		if len(x0) != r.n || !finite(x0) {
			return fmt.Errorf("consensus x0 needs %d finite values (one per agent), got %d", r.n, len(x0))
		}
	}
	return nil // the cloud and the eavesdropper never read it
}

// sink writes a core's records to the trace and counts the steps it went without inputs.
func (r *coreRunner) sink(_ sim.Core, rd *sim.Ready) error {
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
func (r *coreRunner) episode(n *node, st episodeStart) error {
	if err := r.beginFiles(n); err != nil {
		return err
	}
	return r.drive(n, st.ep, gridOrigin(st), func() error { return r.drv.Episode(st.ep, st.x0, nil) })
}

// drive runs episode ep on the driver (run: from its start, or resumed) with the tick grid
// at origin, and makes its records durable.
func (r *coreRunner) drive(n *node, ep int, origin time.Time, run func() error) error {
	r.tr.begin(ep)
	r.pace.begin(origin)
	r.epStart = time.Now()
	forced := r.drv.Forced()
	err := run()
	n.clock.MissN(r.drv.Forced() - forced)
	if eerr := r.tr.end(); err == nil {
		err = eerr
	}
	if err != nil {
		return err
	}
	if err := r.endFiles(n); err != nil {
		return err
	}
	n.res.Steps += n.steps
	n.res.Records = r.count()
	return nil
}

// linkStats returns the process's per-link counters: its publishers' (injector side) and its
// cores' (receive side).
func (r *coreRunner) linkStats() []fault.LinkStats {
	var lists [][]fault.LinkStats
	for _, ps := range r.tr.pubs {
		lists = append(lists, ps.ob.Stats())
	}
	for _, c := range r.cores {
		lists = append(lists, c.LinkStats())
	}
	return sim.MergeLinkStats(lists...)
}

// openFaultLog records what the injector does to each of this process's messages.
func (r *coreRunner) openFaultLog(n *node) error {
	name := FaultsFile(n.cfg.Name())
	f, err := n.createFile(name)
	if err != nil {
		return fmt.Errorf("fault log: %w", err)
	}
	r.ffile, r.fw = f, bufio.NewWriterSize(f, 1<<16)
	r.fenc = json.NewEncoder(r.fw)
	n.res.FaultsFile = name
	for _, ps := range r.tr.pubs {
		ps.ob.Log = func(ev *fault.Event) {
			if !r.keeping {
				return
			}
			if err := r.fenc.Encode(ev); err != nil && r.ferr == nil {
				r.ferr = err
			}
		}
	}
	return nil
}

func (r *coreRunner) openTranscript(n *node) error {
	if !n.cfg.Transcript {
		return nil
	}
	name := TranscriptFile(n.cfg.Name())
	f, err := os.Create(filepath.Join(n.cfg.Out, name))
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	r.tfile = f
	n.res.TranscriptFile = name
	r.tw = bufio.NewWriterSize(f, 1<<16)
	r.enc = json.NewEncoder(r.tw)
	return nil
}

// tap writes every message the eavesdropper receives to its transcript.
func (r *coreRunner) tap(subject string, data []byte) {
	r.msgs++
	if r.enc == nil || !r.keeping {
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

func (r *coreRunner) finish(n *node) error {
	serr := r.waitSync()
	if r.tr != nil {
		r.drainStale()
		r.tr.close()
		n.res.Links = r.linkStats()
	}
	for _, c := range r.cores {
		n.res.Unexpected += c.Unexpected()
		n.res.Stale += c.Stale()
	}
	if r.tr != nil {
		n.res.Stale += r.tr.stale
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
	if n.in != nil && r.tfile != nil {
		// Whatever is still queued (the last coordination messages) goes into the transcript too.
		n.in.DrainTap()
	}
	if r.tfile != nil || n.cfg.Role == bus.RoleEavesdropper {
		n.res.Messages = r.msgs
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
	if cerr := closeTrace(n, tw, r.file); err == nil {
		err = cerr
	}
	if err == nil && serr != nil {
		err = serr
	}
	return err
}

// drainStale hands the cores the data messages still queued at the end of the run: copies
// of the last episode that came after the cores finished it are compared with the copies
// used like any other (a forged burst in the last episode is a conflict too), and counted.
func (r *coreRunner) drainStale() {
	for {
		m, err := r.tr.Recv(time.Time{}) // queued only: the stop already came
		if err != nil {
			return
		}
		for _, c := range r.cores {
			if c.Done() && addressedTo(m, c) { // an unfinished core (interrupted) is left as it is
				_ = c.Step(m) // a finished core files it as stale: no output, no error
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

func closeTrace(n *node, tw flusher, f *os.File) error {
	if f == nil {
		return nil
	}
	var err error
	if tw != nil {
		err = syncWriter(tw.Flush, f)
		n.res.Records = tw.Count()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}

// pacer is the wall clock of a process's driver (sim.Pacer). Lockstep: outputs go out at
// once, and a step's deadline is --timeout after the core last progressed (a safety net: the
// lockstep network's gap notices complete every step). Realtime: the plant and the agents
// release step k's output at the tick t_k = t0 + k Ts, the cloud reacts at once, and every
// step's deadline is the next tick t_{k+1} (the eavesdropper, which nobody waits for, gets a
// grace of --timeout + the grid lead + one period more).
type pacer struct {
	clock    *bus.Clock
	realtime bool
	reacts   bool // the cloud: outputs go out as soon as computed
	period   time.Duration
	timeout  time.Duration
	grace    time.Duration
	origin   time.Time
}

func newPacer(n *node, eve bool) *pacer {
	p := &pacer{clock: n.clock, realtime: n.cfg.Mode == bus.Realtime, reacts: n.cfg.Role == bus.RoleCloud,
		period: n.cfg.Period, timeout: n.cfg.Timeout}
	if eve {
		p.grace = n.cfg.Timeout + GridLead + n.cfg.Period
	}
	return p
}

func (p *pacer) begin(origin time.Time) {
	p.origin = origin
	p.clock.StartAt(origin)
}

func (p *pacer) tick(k int) time.Time { return p.origin.Add(time.Duration(k) * p.period) }

// ReleaseAt implements sim.Pacer.
func (p *pacer) ReleaseAt(o *sim.Out) time.Time {
	if !p.realtime || p.reacts {
		return time.Time{}
	}
	return p.tick(o.Step)
}

// Deadline implements sim.Pacer.
func (p *pacer) Deadline(_ sim.Core, t int, since time.Time) time.Time {
	if !p.realtime {
		return since.Add(p.timeout)
	}
	return p.tick(t + 1).Add(p.grace)
}

// Now implements sim.Pacer.
func (p *pacer) Now() time.Time { return time.Now() }

// Released implements sim.Pacer: the clock's step, jitter and overrun statistics (of the
// paced releases: the cloud's replies keep no grid).
func (p *pacer) Released(o *sim.Out, at time.Time, late bool) {
	if p.realtime && p.reacts {
		return
	}
	p.clock.Observe(o.Step, at, late)
}
