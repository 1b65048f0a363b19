package role

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// episodeStart is a validated ctl.episode.
type episodeStart struct {
	ep      int
	x0      []float64 // nil: the scenario's
	private bool      // x0 comes on the private challenger subject (await it)
	sent    time.Time
}

// runner is one role's episode logic over a node.
type runner interface {
	// setup subscribes the data subjects (into n's inbox) and prepares publishers and files.
	setup(n *node) error
	// checkX0 validates an explicit initial state of a ctl.episode (nil is always valid).
	checkX0(x0 []float64) error
	// episode runs one episode; it returns errStopped (wrapped) when stopped midway.
	episode(n *node, st episodeStart) error
	// finish flushes the role's files; it runs whatever happened before.
	finish(n *node) error
	// resume restores the checkpoint of a process killed by a crash, announces its rejoin
	// and finishes the checkpoint's episode; it returns that episode.
	resume(n *node) (int, error)
}

// node is what every role process shares: configuration, plan, connection, the ctl
// subscriptions, the stop signal, counters, pacing and the result file.
type node struct {
	cfg  *Config
	log  zerolog.Logger
	scn  *scenario.Scenario
	plan *plan.Plan
	// planDigest identifies the --plan file (0: resolved from --scenario); sent in ctl.ready
	planDigest uint64
	subj       bus.Subjects
	conn       *bus.Conn
	sender     string // "<role>.<id>"
	in         *bus.Inbox
	clock      *bus.Clock
	steps      int // T

	data bus.Counters // data messages (also the collectors' late/duplicate/ahead drops)
	ctl  bus.Counters // coordination messages

	episodes  chan episodeStart
	x0s       chan x0Msg   // explicit x(0) from the challenger's private line (plant, agents)
	lastEp    atomic.Int64 // highest episode accepted (-1: none)
	stopCh    chan struct{}
	stopOnce  sync.Once
	stopMu    sync.Mutex
	stopWhy   string
	stopByCtl bool

	invalidLogged atomic.Int64
	draining      atomic.Bool

	verify *bus.Verifier // --sign-keys: the senders\' public keys (nil: no signatures)
	res    ProcessResult
	resMu  sync.Mutex // res.ConnEvents (the client's goroutine appends)
	// lastDone is the ctl.done of the newest episode finished: repeated after a reconnect,
	// for a launcher that may have missed it while the server was down.
	lastDone atomic.Pointer[bus.Message]
	// reannounce: reconnected since the last episode began; ready is repeated until the
	// launcher (which may itself have reconnected after this process) starts the next one.
	reannounce atomic.Bool
	busy       time.Duration
	ctlSubs    []*bus.Subscription
}

// stop ends the process (idempotent): byCtl marks a ctl.stop (a normal end).
func (n *node) stop(why string, byCtl bool) {
	n.stopOnce.Do(func() {
		n.stopMu.Lock()
		n.stopWhy, n.stopByCtl = why, byCtl
		n.stopMu.Unlock()
		close(n.stopCh)
	})
}

func (n *node) stopped() (why string, byCtl bool) {
	n.stopMu.Lock()
	defer n.stopMu.Unlock()
	return n.stopWhy, n.stopByCtl
}

// invalid counts, logs and drops a message a handler refused after the bus accepted it (the
// bus counted it received, not dropped).
func (n *node) invalid(c *bus.Counters, subject string, err error) {
	c.DropErr(err)
	n.logInvalid(subject, err)
}

// serve is the main of every role: parse, set up, run episodes as ctl.episode asks, write
// the results, exit. The returned error makes the process exit non-zero.
func serve(role bus.Role, newRunner func() runner, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(role, args, stdout, stderr)
	if err != nil {
		return err
	}
	log, err := cli.Logger(stderr, cfg.LogLevel)
	if err != nil {
		return err
	}
	log = log.With().Str("proc", cfg.Name()).Str("run", cfg.Run).Logger()
	scn, p, digest, err := loadPlan(role, cfg)
	if err != nil {
		return err
	}
	if err := cfg.resolveTiming(scn); err != nil {
		return err
	}
	if role == bus.RolePlant || role == bus.RoleAgent {
		if err := cfg.resolveSeed(scn); err != nil {
			return err
		}
	}
	if err := cfg.resolveFaultSeed(scn); err != nil {
		return err
	}
	if err := mkdirOut(cfg.Out); err != nil {
		return err
	}
	n, err := newNode(role, cfg, log, scn, p, digest)
	if err != nil {
		return err
	}
	defer n.catchSignals()()
	if err := n.connect(); err != nil {
		return err
	}
	r := newRunner()
	runErr := n.run(r)
	return n.finish(r, runErr)
}

// loadPlan loads this process's plan: the --plan file the launcher wrote, or the point of
// --scenario resolved here. The cloud and the eavesdropper never see the private state.
func loadPlan(role bus.Role, cfg *Config) (scn *scenario.Scenario, p *plan.Plan, digest uint64, err error) {
	if cfg.PlanPath != "" {
		p, digest, err = LoadPlanFile(cfg.PlanPath, cfg.ConnectRetry)
		if p != nil {
			scn = p.Scenario
		}
	} else {
		scn, p, err = LoadPoint(cfg.ScenarioPath, cfg.Point)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	if role == bus.RoleCloud || role == bus.RoleEavesdropper {
		redactPrivateState(scn)
	}
	return scn, p, digest, nil
}

// newNode returns the process's node before it connects: its subjects, its result header and
// its step clock (the eavesdropper's waits for every message).
func newNode(role bus.Role, cfg *Config, log zerolog.Logger, scn *scenario.Scenario, p *plan.Plan, digest uint64) (*node, error) {
	subj, err := bus.NewSubjects(cfg.Run)
	if err != nil {
		return nil, err
	}
	n := &node{
		cfg: cfg, log: log, scn: scn, plan: p, planDigest: digest, subj: subj, sender: bus.SenderName(role, cfg.ID),
		steps: p.Steps, episodes: make(chan episodeStart, 16), x0s: make(chan x0Msg, 16), stopCh: make(chan struct{}),
	}
	n.lastEp.Store(-1)
	n.res = ProcessResult{V: ResultVersion, Run: cfg.Run, Role: string(role), ID: cfg.ID, Name: cfg.Name(),
		PID: os.Getpid(), Point: cfg.Point}
	if role == bus.RoleAgent {
		n.res.Agents = []int{cfg.ID, cfg.LastAgent}
	}
	timing := bus.Timing{Mode: cfg.Mode, Period: cfg.Period, StepTimeout: cfg.Timeout}
	if role == bus.RoleEavesdropper {
		// The eavesdropper only listens: it waits for every message (in realtime for at
		// most the grid lead, one period and the timeout).
		timing = bus.Timing{Mode: bus.Lockstep, StepTimeout: cfg.Timeout + GridLead + cfg.Period}
	}
	if n.clock, err = bus.NewClock(timing, nil); err != nil {
		return nil, cli.UsageError("%v", err)
	}
	return n, nil
}

// catchSignals makes SIGINT, SIGTERM and the death of the parent (--parent-pid) stop the
// process; the results are still written. It returns the function that stops catching signals.
func (n *node) catchSignals() (release func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			n.stop("signal "+s.String(), false)
		case <-n.stopCh:
		}
	}()
	if n.cfg.ParentPID > 0 {
		go n.watchParent(n.cfg.ParentPID)
	}
	return func() { signal.Stop(sigs) }
}

// connect connects to the NATS server (retried for --connect-retry, given up when the process
// is stopped meanwhile) with the encoding, credentials, TLS and signer of the flags, and reads
// the verification keys of --sign-keys.
func (n *node) connect() error {
	cfg, log := n.cfg, n.log
	opts := []bus.Option{bus.WithEncoding(cfg.Encoding), bus.WithEnvUser(),
		bus.WithUser(cfg.natsUser, cfg.natsPassword), bus.WithTLS(cfg.TLS), bus.WithEnvSigner(),
		bus.WithReconnect(40, 250*time.Millisecond), bus.WithEvents(n.connEvent)}
	if cfg.signSeed != "" { // the --credentials file's
		opts = append(opts, bus.WithSigner(cfg.signSeed))
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-n.stopCh: // a signal while still connecting
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := bus.ConnectRetry(ctx, cfg.NATSURL, "dpsim-"+cfg.Name(), cfg.ConnectRetry, func(attempt int, err error) {
		log.Warn().Err(err).Int("attempt", attempt).Msg("NATS server not reachable yet; retrying")
	}, opts...)
	cancel()
	if err != nil {
		return err
	}
	n.conn = conn
	if cfg.SignKeys != "" {
		if n.verify, err = bus.ReadVerifier(cfg.SignKeys); err != nil {
			return err
		}
		if cfg.Role != bus.RoleEavesdropper && !conn.Signing() {
			return cli.UsageError("--sign-keys: no signing seed in $%s", bus.EnvSignSeed)
		}
	}
	return nil
}

// connEvent logs and records a connection event. After a reconnect the process announces
// itself again (ctl.ready) and repeats its last ctl.done: what it published while the server
// was down may be lost, and the launcher waits for both.
func (n *node) connEvent(ev bus.Event) {
	lvl := zerolog.WarnLevel
	if n.draining.Load() { // the drain at exit closes the connection: expected
		lvl = zerolog.DebugLevel
	}
	n.log.WithLevel(lvl).Str("event", ev.Kind.String()).Str("url", bus.RedactURL(ev.URL)).AnErr("err", ev.Err).Msg("nats connection")
	if ev.Kind == bus.EventError || n.draining.Load() {
		return
	}
	n.resMu.Lock()
	if len(n.res.ConnEvents) < MaxConnEvents {
		ce := ConnEvent{UnixNano: time.Now().UnixNano(), Event: ev.Kind.String(), Episode: int(n.lastEp.Load()), URL: bus.RedactURL(ev.URL)}
		if ev.Err != nil {
			ce.Error = ev.Err.Error()
		}
		n.res.ConnEvents = append(n.res.ConnEvents, ce)
	}
	n.resMu.Unlock()
	if ev.Kind != bus.EventReconnected || n.conn == nil {
		return
	}
	n.reannounce.Store(true)
	ready := bus.ReadyMessage(n.cfg.Run, n.sender, os.Getpid(), n.planDigest)
	_ = n.conn.Publish(n.subj.CtlReady(n.cfg.Role, n.cfg.ID), ready)
	if d := n.lastDone.Load(); d != nil {
		_ = n.conn.Publish(n.subj.CtlDone(n.cfg.Role, n.cfg.ID), d)
	}
}

func (n *node) watchParent(pid int) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.stopCh:
			return
		case <-t.C:
			if os.Getppid() != pid {
				n.stop(fmt.Sprintf("parent process %d is gone", pid), false)
				return
			}
		}
	}
}

// run sets the role up, announces ready and serves episodes until stopped.
func (n *node) run(r runner) error {
	if err := r.setup(n); err != nil {
		return err
	}
	if err := n.subscribeCtl(r); err != nil {
		return err
	}
	if n.takesX0() {
		if err := n.subscribeX0(r); err != nil {
			return err
		}
	}
	if err := n.flush(); err != nil {
		return err
	}
	ready := bus.ReadyMessage(n.cfg.Run, n.sender, os.Getpid(), n.planDigest)
	if err := n.conn.Publish(n.subj.CtlReady(n.cfg.Role, n.cfg.ID), ready); err != nil {
		return err
	}
	if err := n.flush(); err != nil {
		return err
	}
	n.log.Info().Int("steps", n.steps).Str("mode", n.cfg.Mode.String()).Str("nats", n.cfg.NATSURL).Msg("ready")
	if n.cfg.Resume {
		start := time.Now()
		ep, err := r.resume(n)
		n.busy += time.Since(start)
		if err != nil {
			if errors.Is(err, errStopped) {
				return nil
			}
			return fmt.Errorf("resume: %w", err)
		}
		if err := n.episodeDone(ep, start); err != nil {
			return err
		}
	}
	idle := time.NewTimer(n.cfg.IdleTimeout)
	defer idle.Stop()
	// Until the first episode, ready is repeated: a launcher that subscribes after this
	// process started (attach mode, processes started by hand) still hears it.
	again := time.NewTicker(ReadyRepeat)
	defer again.Stop()
	for {
		select {
		case <-again.C:
			if n.res.Episodes == 0 || n.reannounce.Load() {
				ready.SentUnixNano = time.Now().UnixNano()
				_ = n.conn.Publish(n.subj.CtlReady(n.cfg.Role, n.cfg.ID), ready)
				if d := n.lastDone.Load(); d != nil && n.reannounce.Load() {
					_ = n.conn.Publish(n.subj.CtlDone(n.cfg.Role, n.cfg.ID), d)
				}
			}
		case <-n.stopCh:
			return nil
		case <-idle.C:
			return fmt.Errorf("no ctl.episode or ctl.stop for %v (--idle-timeout): is the launcher gone?", n.cfg.IdleTimeout)
		case st := <-n.episodes:
			n.reannounce.Store(false)
			if st.private {
				x0, err := n.awaitX0(st.ep)
				if err != nil {
					if errors.Is(err, errStopped) {
						return nil
					}
					return err
				}
				st.x0 = x0
			}
			start := time.Now()
			err := r.episode(n, st)
			n.busy += time.Since(start)
			if err != nil {
				if errors.Is(err, errStopped) {
					return nil
				}
				return fmt.Errorf("episode %d: %w", st.ep, err)
			}
			if err := n.episodeDone(st.ep, start); err != nil {
				return err
			}
			idle.Reset(n.cfg.IdleTimeout)
		}
	}
}

// episodeDone counts a finished episode and reports it (ctl.done).
func (n *node) episodeDone(ep int, start time.Time) error {
	n.res.Episodes++
	done := bus.DoneMessage(n.cfg.Run, n.sender, ep, n.steps, n.clock.Stats().Missed, os.Getpid())
	n.lastDone.Store(done)
	if err := n.conn.Publish(n.subj.CtlDone(n.cfg.Role, n.cfg.ID), done); err != nil {
		return err
	}
	if err := n.flush(); err != nil {
		return err
	}
	n.log.Debug().Int("episode", ep).Dur("took", time.Since(start)).Msg("episode done")
	return nil
}

// flush waits (at most --timeout) until the server has processed what this process published.
func (n *node) flush() error {
	if err := n.conn.Flush(n.cfg.Timeout); err != nil {
		return fmt.Errorf("NATS flush within --timeout %v: %w", n.cfg.Timeout, err)
	}
	return nil
}

// redactPrivateState overwrites the private initial state in the scenario a cloud or an
// eavesdropper process loaded (the plant's x(0), the agents' x_i(0)) with NaN: those roles must
// work from the transcript alone, and a NaN would poison - and so expose - any accidental use.
func redactPrivateState(s *scenario.Scenario) {
	s.Seed = 0 // the seed of the noise: the cloud and the eavesdropper never learn it
	if s.Plant != nil {
		for i := range s.Plant.X0 {
			s.Plant.X0[i] = math.NaN()
		}
	}
	for i := range s.X0 {
		s.X0[i] = math.NaN()
	}
}

// x0Msg is a validated private challenger message.
type x0Msg struct {
	ep int
	x0 []float64
}

// takesX0 reports whether this role accepts an explicit x(0): the plant and the agents hold
// the private state; the cloud and the eavesdropper must never receive it.
func (n *node) takesX0() bool {
	return n.cfg.Role == bus.RolePlant || n.cfg.Role == bus.RoleAgent
}

// subscribeX0 listens on the challenger's private subject (outside dpsim.>) for explicit
// initial states; they are validated and queued for the episode that announces them.
func (n *node) subscribeX0(r runner) error {
	o := bus.CtlOptions{Expect: bus.Expect{Run: n.cfg.Run, Episode: bus.AnyEpisode, Kind: bus.CtlX0, Sender: bus.LauncherSender},
		Counters: &n.ctl, OnInvalid: n.logInvalid, Verify: n.verify}
	sub, err := n.conn.SubscribeCtl(n.subj.ChallengerX0(), o, func(subject string, m *bus.Message) {
		x0 := append([]float64(nil), m.Values...)
		if err := r.checkX0(x0); err != nil || len(x0) == 0 {
			n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonDim, Detail: fmt.Sprintf("explicit x0: %v", err)})
			return
		}
		select {
		case n.x0s <- x0Msg{ep: m.Episode, x0: x0}:
		default:
			n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonAhead, Detail: "too many x0 messages queued"})
		}
	})
	if err != nil {
		return err
	}
	n.ctlSubs = append(n.ctlSubs, sub)
	return nil
}

// logInvalid logs (the first 20, then every 1000th) a message the bus dropped and counted
// (the OnInvalid of the data inbox and of the ctl subscriptions: counting it again here would
// count every invalid message twice).
func (n *node) logInvalid(subject string, err error) {
	k := n.invalidLogged.Add(1)
	if k <= 20 || k%1000 == 0 {
		n.log.Warn().Str("subject", subject).Str("reason", bus.ReasonOf(err).String()).Int64("invalid_total", k).
			Err(err).Msg("dropped invalid message")
	}
}

// awaitX0 returns the private x(0) of episode ep (older ones are stale and dropped), waiting
// at most --timeout: a private episode without its x(0) is an error, never a silent default.
func (n *node) awaitX0(ep int) ([]float64, error) {
	deadline := time.NewTimer(n.cfg.Timeout)
	defer deadline.Stop()
	for {
		select {
		case m := <-n.x0s:
			if m.ep == ep {
				return m.x0, nil
			}
		case <-n.stopCh:
			return nil, errStopped
		case <-deadline.C:
			return nil, fmt.Errorf("episode %d announced a private x0 that did not arrive within %v", ep, n.cfg.Timeout)
		}
	}
}

// subscribeCtl handles ctl.episode and ctl.stop: they are validated (bad ones counted and
// dropped) and turned into the episodes channel and the stop signal.
func (n *node) subscribeCtl(r runner) error {
	o := bus.CtlOptions{Expect: bus.Expect{Run: n.cfg.Run, Episode: bus.AnyEpisode}, Counters: &n.ctl, OnInvalid: n.logInvalid, Verify: n.verify}
	ep, err := n.conn.SubscribeCtl(n.subj.CtlEpisode(), o, func(subject string, m *bus.Message) {
		if m.Kind != bus.CtlEpisode && m.Kind != bus.CtlEpisodeX0 {
			n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonKind, Detail: fmt.Sprintf("kind %q on ctl.episode", m.Kind)})
			return
		}
		private := m.Kind == bus.CtlEpisodeX0 && n.takesX0()
		var x0 []float64
		if len(m.Values) > 0 { // hand-driven runs may still put x(0) on ctl.episode
			x0 = append([]float64(nil), m.Values...)
			if err := r.checkX0(x0); err != nil {
				n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonDim, Detail: err.Error()})
				return
			}
		}
		if int64(m.Episode) <= n.lastEp.Load() {
			n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonEpisode,
				Detail: fmt.Sprintf("episode %d after episode %d: episodes must increase", m.Episode, n.lastEp.Load())})
			return
		}
		select {
		case n.episodes <- episodeStart{ep: m.Episode, x0: x0, private: private, sent: time.Unix(0, m.SentUnixNano)}:
			n.lastEp.Store(int64(m.Episode))
		default:
			n.invalid(&n.ctl, subject, &bus.InvalidError{Reason: bus.ReasonAhead, Detail: "too many episodes queued"})
		}
	})
	if err != nil {
		return err
	}
	o.Expect.Kind = bus.CtlStop
	st, err := n.conn.SubscribeCtl(n.subj.CtlStop(), o, func(_ string, m *bus.Message) {
		n.stop("ctl.stop from "+m.Sender, true)
	})
	if err != nil {
		return err
	}
	n.ctlSubs = append(n.ctlSubs, ep, st)
	return nil
}

// grid returns the origin of a realtime episode's tick grid.
func gridOrigin(st episodeStart) time.Time {
	return st.sent.Add(GridLead)
}

// finish writes the result file, publishes it on ctl.result and drains the connection.
func (n *node) finish(r runner, runErr error) error {
	why, byCtl := n.stopped()
	if err := r.finish(n); err != nil && runErr == nil {
		runErr = err
	}
	switch {
	case runErr != nil:
		n.res.Status, n.res.Error = StatusFailed, runErr.Error()
	case why != "" && !byCtl:
		n.res.Status, n.res.Error = StatusInterrupted, why
		runErr = errors.New("interrupted: " + why)
	default:
		n.res.Status = StatusOK
	}
	n.res.BusySeconds = n.busy.Seconds()
	if n.busy > 0 {
		n.res.StepsPerSec = float64(n.res.Steps) / n.busy.Seconds()
	}
	n.res.PeakRSSBytes, n.res.PeakRSSSource = peakRSS()
	n.res.Invalid = n.data.Snapshot()
	n.res.CtlInvalid = n.ctl.Snapshot()
	n.res.Timing = n.clock.Stats()
	if n.conn != nil {
		n.res.Conn = n.conn.Stats()
		n.res.SlowConsumerDropped = n.inboxDropped()
		if d := n.res.SlowConsumerDropped; d > 0 {
			n.log.Warn().Int("dropped", d).Msg("slow consumer: the NATS client dropped messages")
		}
	}
	n.resMu.Lock()
	data, err := json.MarshalIndent(&n.res, "", "  ")
	n.resMu.Unlock()
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(n.cfg.Out, ResultFile(n.cfg.Name())), append(data, '\n'), 0o644)
	}
	if err != nil && runErr == nil {
		runErr = fmt.Errorf("result file: %w", err)
	}
	if n.conn != nil {
		if data != nil {
			_ = n.conn.PublishRaw(n.subj.CtlResult(n.cfg.Role, n.cfg.ID), data)
		}
		n.draining.Store(true)
		if err := n.conn.Drain(5 * time.Second); err != nil {
			n.log.Warn().Err(err).Msg("drain")
		}
	}
	ev := n.log.Info()
	if runErr != nil {
		ev = n.log.Error().Err(runErr)
	}
	ev.Str("status", n.res.Status).Int("episodes", n.res.Episodes).Int("steps", n.res.Steps).
		Uint64("invalid", n.res.Invalid.Dropped).Msg("exit")
	return runErr
}

func (n *node) inboxDropped() int {
	if n.in == nil {
		return 0
	}
	return n.in.Dropped()
}

// createFile creates (truncates) one of the process's files - or, resuming after a crash,
// opens it as it is: the checkpoint says where to cut it.
func (n *node) createFile(name string) (*os.File, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if n.cfg.Resume {
		flags = os.O_RDWR | os.O_CREATE
	}
	return os.OpenFile(filepath.Join(n.cfg.Out, name), flags, 0o644)
}

// openTrace creates the process's trace file.
func (n *node) openTrace() (*os.File, error) {
	name := TraceFile(n.cfg.Name())
	f, err := n.createFile(name)
	if err != nil {
		return nil, fmt.Errorf("trace file: %w", err)
	}
	n.res.TraceFile = name
	return f, nil
}
