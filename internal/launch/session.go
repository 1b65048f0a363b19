package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Timeouts of the launcher's own waits (the children bound every step with --timeout).
const (
	DefaultStartTimeout = 60 * time.Second // every process subscribed and ready
	// DefaultStopTimeout is how long every process has to write its files (fsynced), publish
	// its result and exit after ctl.stop: beside two full test suites three processes of a
	// finished run had not exited 18 s after it (15 s, SIGTERM, 3 s: SIGKILL lost their
	// results and failed the run). A process that ended well exits in milliseconds; only a
	// stuck one costs the wait.
	DefaultStopTimeout = 45 * time.Second
	killGrace          = 3 * time.Second // after SIGTERM, before SIGKILL
)

// SessionConfig describes the processes of one scenario point. Server.Configure sets the fields
// that say how they connect (URL, Server, Cluster, Users, Launcher, TLS, ConnectRetry).
type SessionConfig struct {
	Exe          string // the dpsim binary (os.Executable()); children run `Exe <role> ...`
	ScenarioPath string
	Point        int
	Plan         *plan.Plan
	// Seeds are the run's (sim.NewSeeds, derived once by the command): the plant and the
	// agents get Run, every process Fault.
	Seeds sim.Seeds
	// Runs is the number of episodes the run plays at this point (dpsim run --runs, the
	// audit's trials): the plan files say it (0: the scenario's).
	Runs         int
	URL          string // NATS server
	Run          string // run id (a subject token)
	Dir          string // the processes' --out directory (created)
	Mode         wire.Mode
	Period       time.Duration
	Timeout      time.Duration // per-step wait of the children
	StartTimeout time.Duration // default DefaultStartTimeout
	StopTimeout  time.Duration // default DefaultStopTimeout
	// AgentsPerProcess hosts that many consensus agents per process (default 1: one each).
	AgentsPerProcess int
	Encoding         string // json (default) or binary
	LogLevel         string // the children's --log-level (their logs go to <Dir>/<name>.log)
	Transcript       bool   // the eavesdropper writes its transcript
	// GOMAXPROCS is the children's GOMAXPROCS (0: inherit the environment / Go's default).
	// One OS thread per role process avoids cross-thread wake-ups on every message: on 2
	// cores it makes the lockstep loop ~1.2-1.7x faster.
	GOMAXPROCS int
	// KeepEpisodes bounds the processes' disk (--keep-episodes): their traces keep the
	// records of these episodes, and each later one replaces the previous; the episodes must
	// then be collected one by one (Collector.Poll after each). The zero value keeps all.
	KeepEpisodes trace.Episodes
	// Attach drives processes started by someone else (by hand, or role loops in this
	// process): nothing is spawned; StartSession waits for the ready of every planned role.
	Attach bool
	// Announce, in attach mode, receives the command of each process to start (nil: only
	// the file <Dir>/attach/commands.sh has them).
	Announce io.Writer
	Log      zerolog.Logger
	// Server is the embedded NATS server (nil: an external one); the scenario's
	// faults.server_restarts need it. Timeline, if set, receives the faults as they happen;
	// PointIndex is the point's index on it.
	Server *bus.Embedded
	// Cluster is the embedded cluster Server belongs to (nil: one server); a server restart
	// names its member.
	Cluster    *bus.Cluster
	Timeline   *Timeline
	PointIndex int
	// Users are the credentials of the processes by sender name ("plant.0"; an agent host
	// under its first agent) and Launcher the launcher's, on a server with permissions
	// (nil: none). A child gets its own through its environment, never its argv.
	Users    map[string]bus.User
	Launcher *bus.User
	// TLS is what the launcher and the children connect with (zero: plain TCP).
	TLS bus.TLSFiles
	// ConnectRetry is how long the launcher retries a server it cannot reach (0: one try).
	ConnectRetry time.Duration
	// Sign gives every process a signing key (its seed through its environment) and the file
	// of all public keys: data messages are signed and verified (dpsim run --sign).
	Sign bool
	// Programs are the users' programs that play roles in place of dpsim's (--role).
	Programs Programs
	// KeepSecrets keeps the attach credentials files when the session ends (--keep-secrets;
	// RemoveSecrets removes the other secret files when the run ends).
	KeepSecrets bool
	// ShareOutputs makes Dir (and procs/ above a pNN) 0755 instead of 0700: the processes
	// write their files holding secrets (SecretOutputs) with the privacy of their folder.
	ShareOutputs bool
	// Inflight is the most episodes a group keeps in flight at once (Session.Group, PlayPoint
	// groups by NextGroup; 0: 1, one episode at a time). The processes learn it from each
	// ctl.episodes: they need no flag.
	Inflight int
	// Roles, if set, are the only roles whose processes the session plans, spawns and waits
	// for; the others' messages come from elsewhere (dpsim replay --check: a recording's
	// traffic played to a fresh eavesdropper). Nil: every process the plan needs.
	Roles []endpoint.Role
}

// connectRetry connects the launcher, retrying an unreachable server for cfg.ConnectRetry
// (an external server that is still starting: docker-compose, a job scheduler).
func connectRetry(ctx context.Context, cfg SessionConfig, auth []bus.Option) (*bus.Conn, error) {
	c, err := bus.ConnectRetry(ctx, cfg.URL, "dpsim-launcher-"+cfg.Run, cfg.ConnectRetry, func(attempt int, err error) {
		cfg.Log.Warn().Err(err).Int("attempt", attempt).Msg("NATS server not reachable yet; retrying")
	}, auth...)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %v", ErrInterrupted, err)
	}
	return c, err
}

// Session is the running processes of one scenario point: spawn and wait for ready
// (StartSession), run episodes (Episode), stop and collect (Stop).
type Session struct {
	cfg   SessionConfig
	conn  *bus.Conn
	subj  wire.Subjects
	procs []*Proc
	byKey map[string]*Proc // "<role>.<id>"
	exits chan *Proc       // every child that exited (procs.go)

	ctl    ctlState      // the ctl protocol: subscriptions, events, who claims each sender (ctl.go)
	keys   signingKeys   // --sign (keys.go)
	x0     x0Keys        // the curve keys that seal the challenger's x(0) (keys.go)
	plans  planFiles     // the processes' plan files (plans.go)
	faults processFaults // crashes, server restarts, proxies (faults.go)
	FaultCounts

	Episodes  int           // episodes completed by every process
	EpisodeNS time.Duration // wall time inside episodes (from ctl.episode to the last done)
	Inflight  record.InflightCounts
	stopped   bool
	lateness  *latenessTap // realtime steps' lateness for the live view (nil: not measured)
	// lastCtl is each sender's last ctl event; onStall receives the stalls of the waits
	// (PlayOptions.Stall; nil: not watched).
	lastCtl map[string]ctlSeen
	onStall func(*Stall)

	// launchTag marks this session's children (EnvLaunch); groups names the child of every
	// process group it started, restarted ones included; leftovers is what the sweep ended.
	launchTag string
	groups    map[int]string
	leftovers []record.Leftover
}

// Procs returns the children.
func (s *Session) Procs() []*Proc { return s.procs }

// Subjects returns the run's subjects.
func (s *Session) Subjects() wire.Subjects { return s.subj }

// StartSession connects to the server, spawns every role of the point as its own OS process
// and waits until all of them are ready. On error the processes started are stopped.
func StartSession(ctx context.Context, cfg SessionConfig) (*Session, error) {
	setSessionDefaults(&cfg)
	s, err := connectSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.startProxies(); err != nil {
		_ = s.shutdown()
		return nil, err
	}
	if err := s.watchServer(); err != nil {
		_ = s.shutdown()
		return nil, err
	}
	if err := s.startProcs(); err != nil {
		_ = s.shutdown()
		return nil, err
	}
	cfg.Log.Debug().Int("processes", len(s.procs)).Str("run", cfg.Run).Msg("spawned")
	return s, s.waitReady(ctx)
}

// setSessionDefaults fills in the defaults of the fields of cfg left zero: the start and stop
// timeouts, the json encoding and the info log level.
func setSessionDefaults(cfg *SessionConfig) {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.Encoding == "" {
		cfg.Encoding = "json"
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "info"
	}
}

// connectSession returns the session of cfg's point, connected and subscribed to its ctl
// subjects: the processes planned (with their signing keys under --sign) and their plan files
// written, none started yet.
func connectSession(ctx context.Context, cfg SessionConfig) (*Session, error) {
	subj, err := wire.NewSubjects(cfg.Run)
	if err != nil {
		return nil, err
	}
	if err := mkdirProcs(cfg.Dir, cfg.ShareOutputs); err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, subj: subj, byKey: map[string]*Proc{}, ctl: ctlState{results: map[string]*contract.ProcessResult{}, pids: map[string]int{}}}
	for _, p := range plannedProcs(cfg.Plan, cfg.AgentsPerProcess) {
		if cfg.Roles == nil || slices.Contains(cfg.Roles, p.Role) {
			s.procs = append(s.procs, p)
		}
	}
	for _, p := range s.procs {
		s.byKey[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()] = p
	}
	if cfg.Sign {
		if err := s.makeKeys(); err != nil {
			return nil, err
		}
	}
	if err := s.makeX0Keys(); err != nil {
		return nil, err
	}
	if err := s.writePlans(); err != nil {
		return nil, err
	}
	// every process answers a group with one ctl.done per episode, at once
	s.ctl.events = make(chan ctlEvent, (4+s.maxGroup())*len(s.procs)+16)
	s.exits = make(chan *Proc, len(s.procs))
	auth := []bus.Option{bus.WithTLS(cfg.TLS), bus.WithSigner(s.keys.launcher)}
	if cfg.Launcher != nil {
		auth = append(auth, bus.WithUser(cfg.Launcher.Name, cfg.Launcher.Password))
	}
	if s.conn, err = connectRetry(ctx, cfg, auth); err != nil {
		return nil, err
	}
	if err := s.subscribe(); err != nil {
		s.conn.Close()
		return nil, err
	}
	return s, nil
}

// startProcs spawns every role process, or in attach mode announces the commands that start
// them elsewhere.
func (s *Session) startProcs() error {
	cfg := s.cfg
	if cfg.Attach {
		if err := CheckAttachable(cfg.Plan.Scenario); err != nil {
			return err
		}
		if err := s.announceAttach(); err != nil {
			return fmt.Errorf("attach: %w", err)
		}
	}
	for _, p := range s.procs {
		if cfg.Attach {
			break
		}
		if err := s.spawn(p); err != nil {
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	return nil
}

// Attached reports whether the session drives processes started by someone else (attach mode).
func (s *Session) Attached() bool { return s.cfg.Attach }

// ErrInterrupted is wrapped by the errors of waits that the context ended (Ctrl-C).
var ErrInterrupted = errors.New("interrupted")

// Episode starts episode ep (x0 nil: the scenario's initial state; else the explicit x(0):
// nx values for cloud control, N for consensus - the auditor's challenger) and waits until
// every process reported it done. A child that exits, the context ending or the episode
// exceeding its time bound end the wait with an error naming the cause. It is Group of one
// episode.
func (s *Session) Episode(ctx context.Context, ep int, x0 []float64) error {
	var x0s [][]float64
	if x0 != nil {
		x0s = [][]float64{x0}
	}
	return s.Group(ctx, Group{First: ep, Count: 1}, x0s)
}

// maxGroup is the most episodes a group may hold: SessionConfig.Inflight, at least 1.
func (s *Session) maxGroup() int {
	return min(max(s.cfg.Inflight, 1), contract.MaxInflight)
}

// Group plays the episodes of g at once over the processes (episodes in flight: one
// ctl.episodes; a group of one is the single ctl.episode) and waits until every process
// reported each of them done (one ctl.done per episode, in episode order). x0s nil: every
// episode starts from the scenario's initial state; else x0s[i] is the explicit x(0) of episode
// g.First+i (see Episode), sent on the private line before the group starts. g.Count is at
// most SessionConfig.Inflight. A child that exits, the context ending or the group exceeding
// its time bound (the sum of its episodes') end the wait with an error naming the cause; the
// group's episodes then count as not done.
func (s *Session) Group(ctx context.Context, g Group, x0s [][]float64) error {
	if err := s.checkGroup(g, x0s); err != nil {
		return err
	}
	if err := s.conflictErr(); err != nil {
		return fmt.Errorf("%v: %w", g, err)
	}
	if err := s.awaitRejoin(ctx, g.First); err != nil {
		return err
	}
	start := time.Now()
	if err := s.publishGroup(g, x0s); err != nil {
		return err
	}
	if err := s.awaitDone(ctx, g); err != nil {
		return err
	}
	if err := s.conflictErr(); err != nil {
		return fmt.Errorf("%v: %w", g, err)
	}
	s.Episodes += g.Count
	s.EpisodeNS += time.Since(start)
	countGroup(&s.Inflight, g)
	return nil
}

// checkGroup checks a group before it starts: its size against SessionConfig.Inflight, and
// one valid explicit x(0) per episode when x0s is given.
func (s *Session) checkGroup(g Group, x0s [][]float64) error {
	if g.Count < 1 || g.Count > s.maxGroup() {
		return fmt.Errorf("%v: a group of %d episodes; this session keeps 1..%d in flight (SessionConfig.Inflight)", g, g.Count, s.maxGroup())
	}
	if x0s == nil {
		return nil
	}
	if len(x0s) != g.Count {
		return fmt.Errorf("%v: %d explicit x0s for %d episodes", g, len(x0s), g.Count)
	}
	for i, x0 := range x0s {
		if x0 == nil {
			return fmt.Errorf("episode %d: no explicit x0 in a group whose x0s travel on the private line", g.First+i)
		}
		if err := s.checkX0(g.First+i, x0); err != nil {
			return err
		}
	}
	return nil
}

// checkX0 checks an explicit x(0) of episode ep: nx values for cloud control, N for
// consensus, all finite (nil: the scenario's initial state).
func (s *Session) checkX0(ep int, x0 []float64) error {
	if x0 == nil {
		return nil
	}
	want := 0
	switch s.cfg.Plan.Scenario.Kind {
	case scenario.CloudControl:
		want = s.cfg.Plan.System.Nx()
	case scenario.Consensus:
		want = s.cfg.Plan.Graph.N
	}
	if len(x0) != want {
		return fmt.Errorf("episode %d: explicit x0 has %d values, want %d", ep, len(x0), want)
	}
	for i, v := range x0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("episode %d: explicit x0[%d] = %v is not finite", ep, i, v)
		}
	}
	return nil
}

// publishGroup starts the episodes of g: ctl.episode (one episode) or ctl.episodes (a group),
// after each episode's explicit x(0) on the challenger's private line when there are some.
func (s *Session) publishGroup(g Group, x0s [][]float64) error {
	for i, x0 := range x0s {
		// The secret goes on the challenger's private line, never on dpsim.<run>.>, and sealed
		// to the processes that own it (each its own part): the line is private by convention
		// only, and a server without permissions lets anyone subscribe to it.
		m, err := contract.X0Message(s.cfg.Run, g.First+i, x0, s.x0.launcher, s.x0.to)
		if err != nil {
			return err
		}
		if err := s.conn.Publish(s.subj.ChallengerX0(), m); err != nil {
			return err
		}
	}
	m := contract.EpisodeMessage(s.cfg.Run, g.First, x0s != nil)
	if g.Count > 1 {
		m = contract.EpisodesMessage(s.cfg.Run, g.First, g.Count, x0s != nil)
	}
	if err := s.conn.Publish(s.subj.CtlEpisode(), m); err != nil {
		return err
	}
	if g.Count == 1 {
		s.lateness.episode(g.First, m.SentUnixNano)
	}
	return s.conn.Flush(s.cfg.Timeout)
}

// episodeBound is how long episode ep may take at most. Every child bounds each step by
// --timeout and exits when it fails, so an episode whose every step times out (a peer that
// sends nothing usable: each step then waits its whole --timeout) takes up to steps x
// (--timeout + the period); this bound only catches a child that stalls without exiting
// (the stall reporter names a slow one long before).
func (s *Session) episodeBound(ep int) time.Duration {
	steps := time.Duration(s.cfg.Plan.Steps)
	bound := 2*s.cfg.Timeout + contract.GridLead + steps*(s.cfg.Timeout+s.cfg.Period+100*time.Millisecond)
	for _, r := range s.cfg.Plan.Scenario.Faults.ServerRestarts {
		if r.Episode == ep { // down, then every message lost in the gap costs a timeout
			bound += r.Down + 10*s.cfg.Timeout + 10*time.Second
		}
	}
	return bound
}

// awaitDone waits until every process reported every episode of g done (its ctl.done come in
// episode order: each process's trace offset is that of its latest), restarting the processes
// the scenario crashes on the way. A conflict, a child that exits otherwise, the context ending
// or the group's bound end the wait with an error naming the cause.
func (s *Session) awaitDone(ctx context.Context, g Group) error {
	// last is each process's latest episode of g reported done; waiting those with some to go
	last := make(map[string]int, len(s.byKey))
	waiting := make(map[string]bool, len(s.byKey))
	for k := range s.byKey {
		last[k], waiting[k] = g.First-1, true
	}
	// the bound is one episode's, from the last progress: a group of K episodes in flight may
	// take K times as long, but each of its ctl.done is progress
	bound := s.episodeBound(g.First)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	watch := s.watchStall(g)
	defer watch.end()
	check := time.NewTicker(stallCheck)
	defer check.Stop()
	for len(waiting) > 0 {
		select {
		case <-check.C:
			watch.check(waiting)
		case ev := <-s.ctl.events:
			s.noteEvent(ev)
			s.seen(ev)
			if err := s.conflictErr(); err != nil {
				return fmt.Errorf("%v: %w", g, err)
			}
			if ev.word == wire.CtlDone && ev.ep > last[ev.sender] && ev.ep <= g.Last() {
				last[ev.sender] = ev.ep
				s.byKey[ev.sender].traceNext.Store(ev.done.TraceNext)
				if ev.ep == g.Last() {
					delete(waiting, ev.sender)
				}
				watch.advanced()
				bound = s.episodeBound(min(ev.ep+1, g.Last()))
				timer.Reset(bound)
			}
		case p := <-s.exits:
			if err := s.exitedIn(p, g); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("%v: %w (%v)", g, ErrInterrupted, context.Cause(ctx))
		case <-timer.C:
			err := fmt.Errorf("%v: no ctl.done from %s within %v (last seen: %s)", g, s.joinSenders(waiting), bound, s.lastSeen(waiting))
			if g.Count > 1 {
				err = fmt.Errorf("%w; the %d episodes were in flight at once (one ctl.episodes): every process answers each with its ctl.done, in order", err, g.Count)
			}
			return err
		}
	}
	return nil
}

// WaitDone waits until every process of the session reported every episode of g done, as
// Group does after it started them: for a session whose episodes someone else starts
// (SessionConfig.Roles; dpsim replay --check publishes a recording's ctl.episode).
func (s *Session) WaitDone(ctx context.Context, g Group) error { return s.awaitDone(ctx, g) }

// exitedIn handles the exit of process p during the group g: a crash the scenario schedules
// (its episode runs alone) is restarted (nil); any other exit fails the group.
func (s *Session) exitedIn(p *Proc, g Group) error {
	if g.Count == 1 {
		if c := s.scheduledCrash(p, g.First); c != nil {
			if err := s.restartCrashed(p, c, g.First); err != nil {
				return fmt.Errorf("%v: %w", g, err)
			}
			return nil
		}
	}
	s.exits <- p // keep it for Stop's accounting
	s.cfg.Timeline.Add(time.Now(), record.TimelineEvent{Point: s.cfg.PointIndex, Episode: g.First, Step: -1, Proc: p.Name, Event: EvExited,
		Detail: fmt.Sprintf("pid %d: %s; the episodes finished before are kept", p.PID(), p.Failure())})
	if f := p.Failure(); f != "" {
		return fmt.Errorf("%v: process %s failed: %s", g, p.who(), f)
	}
	return fmt.Errorf("%v: process %s exited early", g, p.who())
}

// Stop sends ctl.stop, waits for every child to flush and exit (SIGTERM, then SIGKILL, for
// those that do not), and returns the first failure among them (nil when all exited 0).
func (s *Session) Stop() error {
	if s.stopped {
		return nil
	}
	return s.shutdown()
}

func (s *Session) shutdown() error {
	s.stopped = true
	s.faults.restartMu.Lock()
	restart := s.faults.restartDone
	s.faults.restartMu.Unlock()
	if restart != nil { // a ctl.stop sent while the server is down would be lost
		select {
		case <-restart:
		case <-time.After(s.cfg.StartTimeout):
		}
	}
	s.publishStop()
	if s.cfg.Attach {
		s.awaitResults(s.cfg.StopTimeout)
	}
	if !s.awaitExits(s.cfg.StopTimeout) {
		s.signalRunning("no exit after ctl.stop: SIGTERM", terminate)
		if !s.awaitExits(killGrace) {
			s.signalRunning("no exit after SIGTERM: SIGKILL", kill)
			s.awaitExits(killGrace)
		}
	}
	// What the children left behind (their own children, a setsid daemon, a program that
	// ignores SIGTERM behind a shell that exited) ends with them, and is named.
	s.leftovers = append(s.leftovers, s.sweep()...)
	for _, l := range s.leftovers {
		s.cfg.Log.Warn().Int("pid", l.PID).Str("command", l.Command).Str("of", l.Of).Str("signal", l.Signal).
			Msg("a process the run started outlived its role: killed")
	}
	for _, px := range s.faults.proxies {
		px.Close()
	}
	if s.cfg.Attach && !s.cfg.KeepSecrets {
		if err := RemoveAttach(s.cfg.Dir, true); err != nil {
			s.cfg.Log.Warn().Err(err).Msg("attach: removing the credentials files")
		}
	}
	// Late ctl.result messages: give the subscription a moment, then close.
	if s.conn != nil {
		_ = s.conn.Flush(time.Second)
		for _, sub := range s.ctl.subs {
			_ = sub.Unsubscribe()
		}
		s.conn.Close()
	}
	if err := s.firstFailure(); err != nil {
		return err
	}
	// A process this launcher did not start may have answered the last group of episodes
	// after the launcher saw its own processes' ctl.done (a short run can be one group): its
	// done has arrived by now, and the run fails as it would have at a later group.
	return s.conflictErr()
}

// awaitExits waits up to d until every child exited, and reports whether they did. A process
// still starting (not subscribed yet: the session failed before every process was ready)
// would miss a single ctl.stop and wait out the stop bound, then be killed and look failed:
// ctl.stop is repeated until every process exited.
func (s *Session) awaitExits(d time.Duration) bool {
	deadline := time.After(d)
	again := time.NewTicker(stopRepeat)
	defer again.Stop()
	for _, p := range s.procs {
		for p.exited != nil {
			select {
			case <-p.exited:
			case <-again.C:
				s.publishStop()
				continue
			case <-deadline:
				return false
			}
			break
		}
	}
	return true
}

// signalRunning logs msg for every child still running and sends it signal (terminate, or
// os.Process.Kill).
func (s *Session) signalRunning(msg string, signal func(*os.Process) error) {
	for _, p := range s.procs {
		if p.running() {
			s.cfg.Log.Warn().Str("proc", p.Name).Msg(msg)
			_ = signal(p.cmd.Process)
		}
	}
}

// firstFailure returns the first child that failed or did not exit (nil when all exited 0).
func (s *Session) firstFailure() error {
	for _, p := range s.procs {
		if p.exited == nil {
			continue
		}
		select {
		case <-p.exited:
			if f := p.Failure(); f != "" {
				return fmt.Errorf("process %s failed: %s", p.who(), f)
			}
		default:
			return fmt.Errorf("process %s did not exit", p.who())
		}
	}
	return nil
}
