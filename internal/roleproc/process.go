package roleproc

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
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/rss"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// errStopped is returned by waits interrupted by ctl.stop, a signal or the launcher going away.
var errStopped = errors.New("stopped")

// episodeStart is a validated ctl.episode (or ctl.episodes: a group).
type episodeStart struct {
	ep      int
	count   int       // episodes in flight from ep (ctl.episodes); 0 or 1: ep alone
	x0      []float64 // nil: the scenario's
	private bool      // x0 comes on the private challenger subject (await it)
	sent    time.Time
	// faults, when set, is a ctl.faults: no episode, the live faults in force from ep (live.go)
	faults *liveFaults
}

// runner is one role's episode logic over a process.
type runner interface {
	// setup subscribes the data subjects (into proc's inbox) and prepares publishers and files.
	setup(proc *process) error
	// checkX0 validates an explicit initial state of a ctl.episode (nil is always valid).
	checkX0(x0 []float64) error
	// episode runs one episode; it returns errStopped (wrapped) when stopped midway.
	episode(proc *process, st episodeStart) error
	// group runs the st.count episodes of a group in flight from their explicit x(0)s (nil:
	// the scenario's) and hands done each episode with its trace next, in episode order,
	// once all are done; errStopped (wrapped) when stopped midway.
	group(proc *process, st episodeStart, x0s [][]float64, done func(ep int, traceNext int64) error) error
	// finish flushes the role's files; it runs whatever happened before.
	finish(proc *process) error
	// resume restores the checkpoint of a process killed by a crash, announces its rejoin
	// and finishes the checkpoint's episode; it returns that episode.
	resume(proc *process) (int, error)
	// traceNext is where the next episode's records begin in the trace file (ctl.done).
	traceNext() int64
	// updateFaults rebuilds the runner on proc's scenario faults as a ctl.faults changed
	// them, between episodes (live.go).
	updateFaults(proc *process, lf liveFaults) error
}

// process is what every role process shares: configuration, plan, connection, the ctl
// subscriptions, the stop signal, counters, pacing and the result file.
type process struct {
	cfg  *Config
	log  zerolog.Logger
	scn  *scenario.Scenario
	plan *plan.Plan
	// planDigest identifies the --plan file (0: resolved from --scenario); sent in ctl.ready
	planDigest uint64
	subj       wire.Subjects
	conn       *bus.Conn
	sender     string // "<role>.<id>"
	in         *bus.Inbox
	clock      *Clock
	steps      int // T

	data wire.Counters // data messages (also the collectors' late/duplicate/ahead drops)
	ctl  wire.Counters // coordination messages

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
	res    contract.ProcessResult
	resMu  sync.Mutex // res.ConnEvents (the client's goroutine appends)
	// lastDone is the ctl.done of the newest episode finished, or of every episode of the
	// newest group: repeated after a reconnect, for a launcher that may have missed them
	// while the server was down.
	lastDone atomic.Pointer[[]*wire.Message]
	// reannounce: reconnected since the last episode began; ready is repeated until the
	// launcher (which may itself have reconnected after this process) starts the next one.
	reannounce atomic.Bool
	busy       time.Duration
	ctlSubs    []*bus.Subscription
	// rejoin is this process's own ctl.rejoin after a restart (nil: not restarted); echoed
	// once to every restarted peer of the same episode it hears (crash.go, echoRejoin).
	rejoin   atomic.Pointer[wire.Message]
	echoMu   sync.Mutex
	echoedTo map[string]bool
	// mid is a live change of the faults for a step of the episode in progress (live.go)
	mid midFaults
}

// stop ends the process (idempotent): byCtl marks a ctl.stop (a normal end).
func (proc *process) stop(why string, byCtl bool) {
	proc.stopOnce.Do(func() {
		proc.stopMu.Lock()
		proc.stopWhy, proc.stopByCtl = why, byCtl
		proc.stopMu.Unlock()
		close(proc.stopCh)
	})
}

func (proc *process) stopped() (why string, byCtl bool) {
	proc.stopMu.Lock()
	defer proc.stopMu.Unlock()
	return proc.stopWhy, proc.stopByCtl
}

// invalid counts, logs and drops a message a handler refused after the bus accepted it (the
// bus counted it received, not dropped).
func (proc *process) invalid(c *wire.Counters, subject string, err error) {
	c.DropFrom(subject, err)
	proc.logInvalid(subject, err)
}

// Serve is the main of every role process, once the command parsed its flags into cfg: it
// loads the plan, connects, runs episodes as ctl.episode asks, writes the results and returns
// when stopped. Its log goes to stderr (zerolog at cfg.LogLevel). The returned error makes the
// process exit non-zero; a usage error (cli.ErrUsage) is one the scenario reveals in the flags.
func Serve(cfg *Config, stderr io.Writer) error {
	role := cfg.Role
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
	if role.Private() { // the plant and the agents draw noise from the run seed
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
	proc, err := newProcess(role, cfg, log, scn, p, digest)
	if err != nil {
		return err
	}
	defer proc.catchSignals()()
	if err := proc.connect(); err != nil {
		return err
	}
	r := &coreRunner{}
	runErr := proc.run(r)
	return proc.finish(r, runErr)
}

// loadPlan loads this process's plan: the --plan file the launcher wrote, or the point of
// --scenario resolved here. The cloud and the eavesdropper never see the private state.
func loadPlan(role endpoint.Role, cfg *Config) (scn *scenario.Scenario, p *plan.Plan, digest uint64, err error) {
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
	// What the launcher leaves out of a plan file is left out of a scenario read here.
	plan.KeepFor(role, cfg.ID, cfg.LastAgent).Redact(scn)
	return scn, p, digest, nil
}

// newProcess returns the process before it connects: its subjects, its result header and
// its step clock (the eavesdropper's waits for every message).
func newProcess(role endpoint.Role, cfg *Config, log zerolog.Logger, scn *scenario.Scenario, p *plan.Plan, digest uint64) (*process, error) {
	subj, err := wire.NewSubjects(cfg.Run)
	if err != nil {
		return nil, err
	}
	proc := &process{
		cfg: cfg, log: log, scn: scn, plan: p, planDigest: digest, subj: subj, sender: endpoint.Endpoint{Role: role, ID: cfg.ID}.String(),
		steps: p.Steps, episodes: make(chan episodeStart, 16), x0s: make(chan x0Msg, maxQueuedX0), stopCh: make(chan struct{}),
	}
	proc.lastEp.Store(-1)
	proc.res = contract.ProcessResult{V: contract.ResultVersion, Run: cfg.Run, Role: role.String(), ID: cfg.ID, Name: cfg.Name(),
		PID: os.Getpid(), Point: cfg.Point}
	if role == endpoint.Agent {
		proc.res.Agents = []int{cfg.ID, cfg.LastAgent}
	}
	timing := Timing{Mode: cfg.Mode, Period: cfg.Period, StepTimeout: cfg.Timeout}
	if role == endpoint.Eavesdropper {
		// The eavesdropper only listens: it waits for every message (in realtime for at
		// most the grid lead, one period and the timeout).
		timing = Timing{Mode: wire.Lockstep, StepTimeout: cfg.Timeout + contract.GridLead + cfg.Period}
	}
	if proc.clock, err = NewClock(timing, nil); err != nil {
		return nil, cli.UsageError("%v", err)
	}
	return proc, nil
}

// catchSignals makes SIGINT, SIGTERM and the death of the parent (--parent-pid) stop the
// process; the results are still written. It returns the function that stops catching signals.
func (proc *process) catchSignals() (release func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			proc.stop("signal "+s.String(), false)
		case <-proc.stopCh:
		}
	}()
	if proc.cfg.ParentPID > 0 {
		go proc.watchParent(proc.cfg.ParentPID)
	}
	return func() { signal.Stop(sigs) }
}

// connect connects to the NATS server (retried for --connect-retry, given up when the process
// is stopped meanwhile) with the encoding, credentials, TLS and signer of the flags, and reads
// the verification keys of --sign-keys.
func (proc *process) connect() error {
	cfg, log := proc.cfg, proc.log
	opts := []bus.Option{bus.WithEncoding(cfg.Encoding), bus.WithEnvUser(),
		bus.WithUser(cfg.Secrets.NATSUser, cfg.Secrets.NATSPassword), bus.WithTLS(cfg.TLS), bus.WithEnvSigner(),
		bus.WithReconnect(40, 250*time.Millisecond), bus.WithEvents(proc.connEvent)}
	if cfg.Secrets.SignSeed != "" { // the --credentials file's
		opts = append(opts, bus.WithSigner(cfg.Secrets.SignSeed))
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-proc.stopCh: // a signal while still connecting
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
	proc.conn = conn
	if cfg.SignKeys != "" {
		if proc.verify, err = bus.ReadVerifier(cfg.SignKeys); err != nil {
			return err
		}
		if cfg.Role != endpoint.Eavesdropper && !conn.Signing() {
			return cli.UsageError("--sign-keys: no signing seed in $%s", bus.EnvSignSeed)
		}
	}
	return nil
}

// connEvent logs and records a connection event. After a reconnect the process announces
// itself again (ctl.ready) and repeats its last ctl.done: what it published while the server
// was down may be lost, and the launcher waits for both.
func (proc *process) connEvent(ev bus.Event) {
	lvl := zerolog.WarnLevel
	if proc.draining.Load() { // the drain at exit closes the connection: expected
		lvl = zerolog.DebugLevel
	}
	proc.log.WithLevel(lvl).Str("event", ev.Kind.String()).Str("url", bus.RedactURL(ev.URL)).AnErr("err", ev.Err).Msg("nats connection")
	if ev.Kind == bus.EventError || proc.draining.Load() {
		return
	}
	proc.resMu.Lock()
	if len(proc.res.ConnEvents) < contract.MaxConnEvents {
		ce := contract.ConnEvent{UnixNano: time.Now().UnixNano(), Event: ev.Kind.String(), Episode: int(proc.lastEp.Load()), URL: bus.RedactURL(ev.URL)}
		if ev.Err != nil {
			ce.Error = ev.Err.Error()
		}
		proc.res.ConnEvents = append(proc.res.ConnEvents, ce)
	}
	proc.resMu.Unlock()
	if ev.Kind != bus.EventReconnected || proc.conn == nil {
		return
	}
	proc.reannounce.Store(true)
	ready := contract.Ready{PID: os.Getpid(), Plan: proc.planDigest}.Message(proc.cfg.Run, proc.sender)
	_ = proc.conn.Publish(proc.subj.CtlReady(proc.cfg.Role, proc.cfg.ID), ready)
	proc.repeatDone()
}

// repeatDone publishes again the newest ctl.done (of every episode of the newest group).
func (proc *process) repeatDone() {
	if ds := proc.lastDone.Load(); ds != nil {
		for _, d := range *ds {
			_ = proc.conn.Publish(proc.subj.CtlDone(proc.cfg.Role, proc.cfg.ID), d)
		}
	}
}

// watchParent stops the process when the launcher (pid) is gone. Its parent is the launcher,
// or a shell of the launcher's (dpsim run --role starts a command through sh, which may not
// exec it): it stops when its own parent changes (the shell died and it was re-parented) or
// when pid no longer exists.
func (proc *process) watchParent(pid int) {
	parent := os.Getppid()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-proc.stopCh:
			return
		case <-t.C:
			if os.Getppid() != parent || (parent != pid && !alive(pid)) {
				proc.stop(fmt.Sprintf("parent process %d is gone", pid), false)
				return
			}
		}
	}
}

// alive reports whether process pid exists (signal 0: nothing is sent). Where signals do not
// exist (Windows), only the parent's change tells.
func alive(pid int) bool {
	if runtime.GOOS == "windows" {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission)
}

// run sets the role up, announces ready and serves episodes until stopped.
func (proc *process) run(r runner) error {
	ready, err := proc.announce(r)
	if err != nil {
		return err
	}
	if proc.cfg.Resume {
		if err := proc.resume(r); errors.Is(err, errStopped) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return proc.serveEpisodes(r, ready)
}

// announce sets the role up, subscribes the coordination subjects and announces ctl.ready,
// which it returns (repeated until the first episode).
func (proc *process) announce(r runner) (*wire.Message, error) {
	if err := r.setup(proc); err != nil {
		return nil, err
	}
	if err := proc.subscribeCtl(r); err != nil {
		return nil, err
	}
	if proc.takesX0() {
		if err := proc.subscribeX0(r); err != nil {
			return nil, err
		}
	}
	if err := proc.flush(); err != nil {
		return nil, err
	}
	ready := contract.Ready{PID: os.Getpid(), Plan: proc.planDigest}.Message(proc.cfg.Run, proc.sender)
	if err := proc.conn.Publish(proc.subj.CtlReady(proc.cfg.Role, proc.cfg.ID), ready); err != nil {
		return nil, err
	}
	if err := proc.flush(); err != nil {
		return nil, err
	}
	proc.log.Info().Int("steps", proc.steps).Str("mode", proc.cfg.Mode.String()).Str("nats", proc.cfg.NATSURL).Msg("ready")
	return ready, nil
}

// resume finishes the episode of the checkpoint of a process killed by a crash (--resume);
// errStopped when stopped meanwhile.
func (proc *process) resume(r runner) error {
	start := time.Now()
	ep, err := r.resume(proc)
	proc.busy += time.Since(start)
	if err != nil {
		if errors.Is(err, errStopped) {
			return errStopped
		}
		return fmt.Errorf("resume: %w", err)
	}
	return proc.episodeDone(ep, start, r.traceNext())
}

// serveEpisodes runs the episodes ctl.episode starts until stopped (ctl.stop, a signal) or
// idle for --idle-timeout, repeating ready until the first episode.
func (proc *process) serveEpisodes(r runner, ready *wire.Message) error {
	idle := time.NewTimer(proc.cfg.IdleTimeout)
	defer idle.Stop()
	// Until the first episode, ready is repeated: a launcher that subscribes after this
	// process started (attach mode, processes started by hand) still hears it.
	again := time.NewTicker(contract.ReadyRepeat)
	defer again.Stop()
	for {
		select {
		case <-again.C:
			if proc.res.Episodes == 0 || proc.reannounce.Load() {
				ready.SentUnixNano = time.Now().UnixNano()
				_ = proc.conn.Publish(proc.subj.CtlReady(proc.cfg.Role, proc.cfg.ID), ready)
				if proc.reannounce.Load() {
					proc.repeatDone()
				}
			}
		case <-proc.stopCh:
			return nil
		case <-idle.C:
			return fmt.Errorf("no ctl.episode or ctl.stop for %v (--idle-timeout): is the launcher gone?", proc.cfg.IdleTimeout)
		case st := <-proc.episodes:
			if st.faults != nil {
				if err := proc.applyLiveFaults(r, *st.faults, st.ep); err != nil {
					return err
				}
				continue
			}
			if err := proc.playEpisode(r, st); errors.Is(err, errStopped) {
				return nil
			} else if err != nil {
				return err
			}
			idle.Reset(proc.cfg.IdleTimeout)
		}
	}
}

// playEpisode runs the episode st starts (awaiting its private x(0) first) and reports it
// done; errStopped when stopped meanwhile.
func (proc *process) playEpisode(r runner, st episodeStart) error {
	proc.reannounce.Store(false)
	if st.count > 1 {
		return proc.playGroup(r, st)
	}
	if st.private {
		x0, err := proc.awaitX0(st.ep)
		if err != nil {
			return err
		}
		st.x0 = x0
	}
	start := time.Now()
	err := r.episode(proc, st)
	proc.busy += time.Since(start)
	if err != nil {
		if errors.Is(err, errStopped) {
			return errStopped
		}
		return fmt.Errorf("episode %d: %w", st.ep, err)
	}
	return proc.episodeDone(st.ep, start, r.traceNext())
}

// playGroup runs the group of episodes st starts (awaiting their private x(0)s first) and
// reports each done, in episode order; errStopped when stopped meanwhile.
func (proc *process) playGroup(r runner, st episodeStart) error {
	var x0s [][]float64
	if st.private {
		var err error
		if x0s, err = proc.awaitX0s(st.ep, st.count); err != nil {
			return err
		}
	}
	start := time.Now()
	var dones []*wire.Message
	err := r.group(proc, st, x0s, func(ep int, traceNext int64) error {
		d, err := proc.publishDone(ep, traceNext)
		dones = append(dones, d)
		repeat := slices.Clone(dones) // read by the client's goroutine on a reconnect
		proc.lastDone.Store(&repeat)
		return err
	})
	proc.busy += time.Since(start)
	if err != nil {
		if errors.Is(err, errStopped) {
			return errStopped
		}
		return fmt.Errorf("episodes %d..%d: %w", st.ep, st.ep+st.count-1, err)
	}
	if err := proc.flush(); err != nil {
		return err
	}
	proc.log.Debug().Int("first", st.ep).Int("count", st.count).Dur("took", time.Since(start)).Msg("episodes done")
	return nil
}

// episodeDone counts a finished episode and reports it (ctl.done), with where the next
// episode's records begin in the trace file (traceNext).
func (proc *process) episodeDone(ep int, start time.Time, traceNext int64) error {
	d, err := proc.publishDone(ep, traceNext)
	proc.lastDone.Store(&[]*wire.Message{d})
	if err != nil {
		return err
	}
	if err := proc.flush(); err != nil {
		return err
	}
	proc.log.Debug().Int("episode", ep).Dur("took", time.Since(start)).Msg("episode done")
	return nil
}

// publishDone counts a finished episode and publishes its ctl.done (not flushed), which it
// returns.
func (proc *process) publishDone(ep int, traceNext int64) (*wire.Message, error) {
	proc.res.Episodes++
	done := contract.Done{Steps: proc.steps, Missed: proc.clock.Stats().Missed, PID: os.Getpid(), TraceNext: traceNext}.Message(proc.cfg.Run, proc.sender, ep)
	return done, proc.conn.Publish(proc.subj.CtlDone(proc.cfg.Role, proc.cfg.ID), done)
}

// flush waits (at most contract.FlushWait(--timeout)) until the server has processed what this
// process published.
func (proc *process) flush() error {
	wait := contract.FlushWait(proc.cfg.Timeout)
	if err := proc.conn.Flush(wait); err != nil {
		return fmt.Errorf("NATS flush within %v: %w", wait, err)
	}
	return nil
}

// x0Msg is a validated private challenger message.
type x0Msg struct {
	ep int
	x0 []float64
}

// takesX0 reports whether this role accepts an explicit x(0): the plant and the agents hold
// the private state; the cloud and the eavesdropper must never receive it.
func (proc *process) takesX0() bool {
	return proc.cfg.Role.Private()
}

// subscribeX0 listens on the challenger's private subject (outside dpsim.>) for explicit
// initial states; they are validated and queued for the episode that announces them.
func (proc *process) subscribeX0(r runner) error {
	o := bus.CtlOptions{Expect: wire.Expect{Run: proc.cfg.Run, Episode: wire.AnyEpisode, Kind: wire.CtlX0, Sender: wire.LauncherSender},
		Counters: &proc.ctl, OnInvalid: proc.logInvalid, Verify: proc.verify}
	sub, err := proc.conn.SubscribeCtl(proc.subj.ChallengerX0(), o, func(subject string, m *wire.Message) {
		x0, err := proc.openX0(m, r)
		if err != nil {
			proc.invalid(&proc.ctl, subject, err)
			return
		}
		select {
		case proc.x0s <- x0Msg{ep: m.Episode, x0: x0}:
		default:
			proc.invalid(&proc.ctl, subject, &wire.InvalidError{Reason: wire.ReasonAhead, Detail: "too many x0 messages queued"})
		}
	})
	if err != nil {
		return err
	}
	proc.ctlSubs = append(proc.ctlSubs, sub)
	return nil
}

// openX0 opens this process's box in the challenger's x0 message (contract.OpenX0) and
// returns the explicit x(0) its cores begin from: the plant's whole x(0); for an agent host a
// vector of every agent's, its own x_i(0) in place and NaN for the others (it never learns
// them, and a core that read one would refuse it as not finite). A box it cannot open - no
// curve key, not sealed to it by the launcher, altered, of another episode - is an error
// (wire.ReasonSealed); so are values the runner r refuses (wire.ReasonDim).
func (proc *process) openX0(m *wire.Message, r runner) ([]float64, error) {
	if proc.cfg.Secrets.X0Seed == "" || proc.cfg.Secrets.X0Sender == "" {
		return nil, &wire.InvalidError{Reason: wire.ReasonSealed, Detail: fmt.Sprintf("sealed x0: no curve key ($%s, $%s or --credentials) to open it with", bus.EnvX0Seed, bus.EnvX0Sender)}
	}
	self := endpoint.Endpoint{Role: proc.cfg.Role, ID: proc.cfg.ID}
	own, err := contract.OpenX0(m, self, bus.CurveKey{Seed: proc.cfg.Secrets.X0Seed}, proc.cfg.Secrets.X0Sender)
	if err != nil {
		return nil, err
	}
	if proc.cfg.Role != endpoint.Agent {
		if err := r.checkX0(own); err != nil || len(own) == 0 {
			return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("explicit x0: %v", err)}
		}
		return own, nil
	}
	if want := proc.cfg.LastAgent - proc.cfg.ID + 1; len(own) != want || !finite(own) {
		return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("sealed x0 of agents %d..%d: %d values, want %d finite ones", proc.cfg.ID, proc.cfg.LastAgent, len(own), want)}
	}
	x0 := make([]float64, proc.plan.Graph.N)
	for i := range x0 {
		x0[i] = math.NaN()
	}
	copy(x0[proc.cfg.ID:], own)
	return x0, nil
}

// logInvalid logs (the first 20, then every 1000th) a message the bus dropped and counted
// (the OnInvalid of the data inbox and of the ctl subscriptions: counting it again here would
// count every invalid message twice).
func (proc *process) logInvalid(subject string, err error) {
	k := proc.invalidLogged.Add(1)
	if k <= 20 || k%1000 == 0 {
		proc.log.Warn().Str("subject", subject).Str("reason", wire.ReasonOf(err).String()).Int64("invalid_total", k).
			Err(err).Msg("dropped invalid message")
	}
}

// awaitX0 returns the private x(0) of episode ep (older ones are stale and dropped), waiting
// at most contract.FlushWait(--timeout): a private episode without its x(0) is an error, never a
// silent default.
func (proc *process) awaitX0(ep int) ([]float64, error) {
	wait := contract.FlushWait(proc.cfg.Timeout)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case m := <-proc.x0s:
			if m.ep == ep {
				return m.x0, nil
			}
		case <-proc.stopCh:
			return nil, errStopped
		case <-deadline.C:
			return nil, fmt.Errorf("episode %d announced a private x0 that did not arrive within %v", ep, wait)
		}
	}
}

// subscribeCtl handles ctl.episode and ctl.stop: they are validated (bad ones counted and
// dropped) and turned into the episodes channel and the stop signal.
func (proc *process) subscribeCtl(r runner) error {
	o := bus.CtlOptions{Expect: wire.Expect{Run: proc.cfg.Run, Episode: wire.AnyEpisode}, Counters: &proc.ctl, OnInvalid: proc.logInvalid, Verify: proc.verify}
	ep, err := proc.conn.SubscribeCtl(proc.subj.CtlEpisode(), o, func(subject string, m *wire.Message) {
		st, err := parseEpisodeStart(m, r, proc.takesX0())
		if err != nil {
			proc.invalid(&proc.ctl, subject, err)
			return
		}
		if st.faults != nil && m.Step > 0 { // for a step of the episode in progress
			proc.noteMid(m, *st.faults)
			return
		}
		if int64(m.Episode) <= proc.lastEp.Load() {
			proc.invalid(&proc.ctl, subject, &wire.InvalidError{Reason: wire.ReasonEpisode,
				Detail: fmt.Sprintf("%s for episode %d after episode %d: episodes must increase", m.Kind, m.Episode, proc.lastEp.Load())})
			return
		}
		if st.faults != nil { // in the queue before its episode, which it does not start
			select {
			case proc.episodes <- st:
			default:
				proc.invalid(&proc.ctl, subject, &wire.InvalidError{Reason: wire.ReasonAhead, Detail: "too many episodes queued"})
			}
			return
		}
		select {
		case proc.episodes <- st:
			proc.lastEp.Store(int64(st.ep + max(st.count, 1) - 1))
		default:
			proc.invalid(&proc.ctl, subject, &wire.InvalidError{Reason: wire.ReasonAhead, Detail: "too many episodes queued"})
		}
	})
	if err != nil {
		return err
	}
	o.Expect.Kind = wire.CtlStop
	st, err := proc.conn.SubscribeCtl(proc.subj.CtlStop(), o, func(_ string, m *wire.Message) {
		proc.stop("ctl.stop from "+m.Sender, true)
	})
	if err != nil {
		return err
	}
	proc.ctlSubs = append(proc.ctlSubs, ep, st)
	return nil
}

// parseEpisodeStart reads a ctl.episode (one episode, its x(0) on the message in hand-driven
// runs) or a ctl.episodes (a group: first and count); private says the x(0)s come on the
// challenger's private subject (for a process that takes them).
func parseEpisodeStart(m *wire.Message, r runner, takesX0 bool) (episodeStart, error) {
	st := episodeStart{ep: m.Episode, sent: time.Unix(0, m.SentUnixNano)}
	switch m.Kind {
	case wire.CtlEpisode, wire.CtlEpisodeX0:
		st.private = m.Kind == wire.CtlEpisodeX0 && takesX0
		st.x0 = contract.X0(m) // hand-driven runs may still put x(0) on ctl.episode
		if st.x0 != nil {
			if err := r.checkX0(st.x0); err != nil {
				return st, &wire.InvalidError{Reason: wire.ReasonDim, Detail: err.Error()}
			}
		}
	case wire.CtlFaults:
		gen, digest, err := contract.ParseFaults(m)
		if err != nil {
			return st, err
		}
		st.faults = &liveFaults{gen: gen, digest: digest}
	case wire.CtlEpisodes, wire.CtlEpisodesX0:
		first, count, err := contract.ParseEpisodes(m)
		if err != nil {
			return st, err
		}
		st.ep, st.count = first, count
		st.private = m.Kind == wire.CtlEpisodesX0 && takesX0
	default:
		return st, &wire.InvalidError{Reason: wire.ReasonKind, Detail: fmt.Sprintf("kind %q on ctl.episode", m.Kind)}
	}
	return st, nil
}

// grid returns the origin of a realtime episode's tick grid.
func gridOrigin(st episodeStart) time.Time {
	return st.sent.Add(contract.GridLead)
}

// finish writes the result file, publishes it on ctl.result and drains the connection.
func (proc *process) finish(r runner, runErr error) error {
	why, byCtl := proc.stopped()
	if err := r.finish(proc); err != nil && runErr == nil {
		runErr = err
	}
	switch {
	case runErr != nil:
		proc.res.Status, proc.res.Error = contract.StatusFailed, runErr.Error()
	case why != "" && !byCtl:
		proc.res.Status, proc.res.Error = contract.StatusInterrupted, why
		runErr = errors.New("interrupted: " + why)
	default:
		proc.res.Status = contract.StatusOK
	}
	proc.res.BusySeconds = proc.busy.Seconds()
	if proc.busy > 0 {
		proc.res.StepsPerSec = float64(proc.res.Steps) / proc.busy.Seconds()
	}
	proc.res.PeakRSSBytes, proc.res.PeakRSSSource = rss.Peak()
	proc.res.Invalid = proc.data.Snapshot()
	proc.res.CtlInvalid = proc.ctl.Snapshot()
	proc.res.Timing = proc.clock.Stats()
	if proc.conn != nil {
		proc.res.Conn = proc.conn.Stats()
		proc.res.SlowConsumerDropped = proc.inboxDropped()
		if d := proc.res.SlowConsumerDropped; d > 0 {
			proc.log.Warn().Int("dropped", d).Msg("slow consumer: the NATS client dropped messages")
		}
	}
	proc.resMu.Lock()
	data, err := json.MarshalIndent(&proc.res, "", "  ")
	proc.resMu.Unlock()
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(proc.cfg.Out, contract.ResultFile(proc.cfg.Name())), append(data, '\n'), 0o644)
	}
	if err != nil && runErr == nil {
		runErr = fmt.Errorf("result file: %w", err)
	}
	if proc.conn != nil {
		if data != nil {
			_ = proc.conn.PublishRaw(proc.subj.CtlResult(proc.cfg.Role, proc.cfg.ID), data)
		}
		proc.draining.Store(true)
		if err := proc.conn.Drain(5 * time.Second); err != nil {
			proc.log.Warn().Err(err).Msg("drain")
		}
	}
	ev := proc.log.Info()
	if runErr != nil {
		ev = proc.log.Error().Err(runErr)
	}
	ev.Str("status", proc.res.Status).Int("episodes", proc.res.Episodes).Int("steps", proc.res.Steps).
		Uint64("invalid", proc.res.Invalid.Dropped).Msg("exit")
	return runErr
}

func (proc *process) inboxDropped() int {
	if proc.in == nil {
		return 0
	}
	return proc.in.Dropped()
}

// createFile creates (truncates) one of the process's files - or, resuming after a crash,
// opens it as it is: the checkpoint says where to cut it.
func (proc *process) createFile(name string) (*os.File, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if proc.cfg.Resume {
		flags = os.O_RDWR | os.O_CREATE
	}
	// A file holding secrets (launch.SecretOutputs: the trace) takes the privacy of the folder
	// the launcher made for the processes (0700 unless --share-outputs): 0600 there, else 0644.
	mode := launch.OutputMode(filepath.Join("procs", name), atomicfile.Shared(proc.cfg.Out))
	f, err := os.OpenFile(filepath.Join(proc.cfg.Out, name), flags, mode)
	if err == nil && proc.cfg.Resume {
		if err = f.Chmod(mode); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, err
}

// openTrace creates the process's trace file.
func (proc *process) openTrace() (*os.File, error) {
	name := contract.TraceFile(proc.cfg.Name())
	f, err := proc.createFile(name)
	if err != nil {
		return nil, fmt.Errorf("trace file: %w", err)
	}
	proc.res.TraceFile = name
	return f, nil
}
