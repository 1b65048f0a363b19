package run

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cmd/role"
	"github.com/dpsim/dpsim/internal/proxy"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Timeouts of the launcher's own waits (the children bound every step with --timeout).
const (
	DefaultStartTimeout = 60 * time.Second // every process subscribed and ready
	DefaultStopTimeout  = 15 * time.Second // every process flushed and exited after ctl.stop
	killGrace           = 3 * time.Second  // after SIGTERM, before SIGKILL
)

// SessionConfig describes the processes of one scenario point.
type SessionConfig struct {
	Exe          string // the dpsim binary (os.Executable()); children run `Exe <role> ...`
	ScenarioPath string
	Point        int
	Plan         *plan.Plan
	Seed         uint64
	URL          string // NATS server
	Run          string // run id (a subject token)
	Dir          string // the processes' --out directory (created)
	Mode         bus.Mode
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
	// BoundTraces starts the processes with --keep-episodes KeepEpisodes: their traces keep
	// the first KeepEpisodes episodes, and each later one replaces the previous; the
	// episodes must then be collected one by one (Collector.Poll after each).
	BoundTraces  bool
	KeepEpisodes int
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
	Timeline   *timeline
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
}

// ProcessKeys returns the sender names ("plant.0", "agent.3") of the processes a plan needs
// with perProc agents per process.
func ProcessKeys(p *plan.Plan, perProc int) []string {
	var out []string
	for _, pr := range plannedProcs(p, perProc) {
		out = append(out, bus.SenderName(pr.Role, pr.ID))
	}
	return out
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

// RunUsers returns the users of a run's processes (by sender name) and of its launcher, each
// with its role's subject permissions (bus.Subjects.RolePermissions).
func RunUsers(p *plan.Plan, run string, perProc int) (map[string]bus.User, bus.User, error) {
	subj, err := bus.NewSubjects(run)
	if err != nil {
		return nil, bus.User{}, err
	}
	users := map[string]bus.User{}
	for _, pr := range plannedProcs(p, perProc) {
		pub, sub := subj.RolePermissions(pr.Role, pr.ID, pr.LastAgent)
		u, err := bus.NewUser(bus.UserName(run, pr.Role, pr.ID), pub, sub)
		if err != nil {
			return nil, bus.User{}, err
		}
		users[bus.SenderName(pr.Role, pr.ID)] = u
	}
	pub, sub := subj.LauncherPermissions()
	l, err := bus.NewUser(run+"-launcher", pub, sub)
	return users, l, err
}

// Proc is one child process.
type Proc struct {
	Role      bus.Role
	ID        int
	LastAgent int
	Name      string
	LogPath   string

	cmd     *exec.Cmd
	pid     int // attach mode: the pid its ready carried
	logFile *os.File
	exited  chan struct{}
	state   *os.ProcessState
	waitErr error
	result  *role.ProcessResult
}

// PID returns the child's process id (attach mode: the pid its ctl.ready announced).
func (p *Proc) PID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return p.pid
	}
	return p.cmd.Process.Pid
}

// running reports whether the child was started and has not exited yet.
func (p *Proc) running() bool {
	if p.exited == nil || p.cmd == nil || p.cmd.Process == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitState returns the child's exit state once it exited (nil while it runs).
func (p *Proc) exitState() *os.ProcessState {
	if p.exited == nil {
		return nil
	}
	select {
	case <-p.exited:
		return p.state
	default:
		return nil
	}
}

// failure describes how the child ended, or "" when it exited 0. Call it only after the
// child exited (or to describe one still running).
func (p *Proc) failure() string {
	if p.cmd == nil && p.waitErr == nil {
		return "" // attached: not our child; its result says how it ended
	}
	if p.running() {
		return "still running"
	}
	if p.state == nil {
		if p.waitErr != nil {
			return p.waitErr.Error()
		}
		return "still running"
	}
	if p.state.Success() {
		return ""
	}
	msg := p.state.String() // "exit status 1", "signal: killed"
	if tail := lastLogError(p.LogPath); tail != "" {
		msg += ": " + tail
	}
	return msg
}

type ctlEvent struct {
	word   string
	sender string
	ep     int
	vals   []float64
	result *role.ProcessResult
}

// Session is the running processes of one scenario point: spawn and wait for ready
// (StartSession), run episodes (Episode), stop and collect (Stop).
type Session struct {
	cfg    SessionConfig
	conn   *bus.Conn
	subj   bus.Subjects
	procs  []*Proc
	byKey  map[string]*Proc // "<role>.<id>"
	events chan ctlEvent
	exits  chan *Proc
	ctl    bus.Counters
	subs   []*bus.Subscription

	mu      sync.Mutex
	results map[string]*role.ProcessResult
	// pids is the process accepted for each sender: the child spawned for it, or in attach
	// mode the first pid that announced itself. A ready or done from another pid is a second
	// process claiming the sender (a stray on the same run id): conflict, and the run fails.
	pids     map[string]int
	conflict error

	Episodes  int           // episodes completed by every process
	EpisodeNS time.Duration // wall time inside episodes (from ctl.episode to the last done)
	stopped   bool

	// A server restart in progress or done: restartDone is closed when the server is back;
	// pendingReady are the processes not heard from (ctl.ready) since it went down - an
	// episode starts only when every process is back on the bus.
	restartMu    sync.Mutex
	restartDone  chan struct{}
	restartErr   error
	pendingReady map[string]bool
	// ServerRestarts counts the restarts of the embedded server done in this session;
	// Crashes the processes killed by the scenario (faults.crashes), Restarts those started
	// again from their checkpoint.
	ServerRestarts int
	Crashes        int
	Restarts       int
	crashed        map[string]bool // "<sender>/<episode>": the scheduled crash happened
	// proxies are the toxiproxies in front of the server (faults.proxies), by sender.
	proxies map[string]*proxy.Proxy
	// seeds are the processes' signing seeds (--sign), keysFile the public keys.
	seeds    map[string]string
	keysFile string
	// planDigests is the digest of each process's plan file (plan.FileDigest), by sender.
	planDigests map[string]uint64
	signSeed    string // the launcher's own (ctl.episode, ctl.stop, the challenger's x0)
}

// makeKeys gives every process a signing key and writes the public keys beside their files.
func (s *Session) makeKeys() error {
	s.seeds = map[string]string{}
	pub := map[string]string{}
	for _, p := range s.procs {
		k, err := bus.NewSigningKey()
		if err != nil {
			return err
		}
		key := bus.SenderName(p.Role, p.ID)
		s.seeds[key] = k.Seed
		if p.Role == bus.RoleAgent { // a host signs for every agent it hosts, and for its block
			for i := p.ID; i <= p.LastAgent; i++ {
				pub[bus.SenderName(bus.RoleAgent, i)] = k.Public
			}
			pub[bus.SenderName(bus.RoleHost, p.ID)] = k.Public
		} else {
			pub[key] = k.Public
		}
	}
	l, err := bus.NewSigningKey()
	if err != nil {
		return err
	}
	s.signSeed, pub[bus.LauncherSender] = l.Seed, l.Public
	data, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return err
	}
	s.keysFile = filepath.Join(s.cfg.Dir, "public-keys.json")
	return atomicfile.WriteFile(s.keysFile, data, 0o644)
}

// awaitResults waits, in attach mode, until every process that announced itself sent its
// ctl.result after ctl.stop (bounded by d): the launcher cannot wait for the exit of a
// process it did not start, and stopping the server earlier would lose what is in flight.
func (s *Session) awaitResults(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		var missing []string
		s.mu.Lock()
		for key := range s.pids {
			if s.results[key] == nil {
				missing = append(missing, key)
			}
		}
		s.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.cfg.Log.Warn().Strs("procs", missing).Dur("waited", d).Msg("attach: no ctl.result after ctl.stop")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Procs returns the children.
func (s *Session) Procs() []*Proc { return s.procs }

// Subjects returns the run's subjects.
func (s *Session) Subjects() bus.Subjects { return s.subj }

// plannedProcs lists the processes a plan needs.
func plannedProcs(p *plan.Plan, perProc int) []*Proc {
	var out []*Proc
	add := func(r bus.Role, id, last int) {
		out = append(out, &Proc{Role: r, ID: id, LastAgent: last, Name: role.ProcName(r, id, last)})
	}
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		add(bus.RolePlant, 0, 0)
		add(bus.RoleCloud, 0, 0)
	case scenario.Consensus:
		if perProc < 1 {
			perProc = 1
		}
		for i := 0; i < p.Graph.N; i += perProc {
			add(bus.RoleAgent, i, min(i+perProc, p.Graph.N)-1)
		}
	}
	add(bus.RoleEavesdropper, 0, 0)
	return out
}

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
	subj, err := bus.NewSubjects(cfg.Run)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, subj: subj, byKey: map[string]*Proc{}, results: map[string]*role.ProcessResult{}, pids: map[string]int{}}
	s.procs = plannedProcs(cfg.Plan, cfg.AgentsPerProcess)
	for _, p := range s.procs {
		s.byKey[bus.SenderName(p.Role, p.ID)] = p
	}
	if cfg.Sign {
		if err := s.makeKeys(); err != nil {
			return nil, err
		}
	}
	if err := s.writePlans(); err != nil {
		return nil, err
	}
	s.events = make(chan ctlEvent, 4*len(s.procs)+16)
	s.exits = make(chan *Proc, len(s.procs))
	auth := []bus.Option{bus.WithTLS(cfg.TLS), bus.WithSigner(s.signSeed)}
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

// startProxies starts the toxiproxy of every faults.proxies entry (none in attach mode, whose
// processes connect on their own).
func (s *Session) startProxies() error {
	cfg := s.cfg
	for _, x := range cfg.Plan.Scenario.Faults.Proxies {
		if cfg.Attach {
			break
		}
		// in front of the first server of a list: the process reaches the bus through the
		// proxy only
		first, _, _ := strings.Cut(cfg.URL, ",")
		px, err := proxy.Start(cfg.Run+"-"+x.Proc, first, x)
		if err != nil {
			return err
		}
		if s.proxies == nil {
			s.proxies = map[string]*proxy.Proxy{}
		}
		s.proxies[x.Proc] = px
		cfg.Log.Info().Str("proc", x.Proc).Str("proxy", px.URL()).Dur("latency", x.Latency).Dur("jitter", x.Jitter).
			Int64("bandwidth_kBps", x.Bandwidth).Msg("faults: toxiproxy in front of the server")
	}
	return nil
}

// startProcs spawns every role process, or in attach mode announces the commands that start
// them elsewhere.
func (s *Session) startProcs() error {
	cfg := s.cfg
	if cfg.Attach {
		if err := checkAttachable(cfg.Plan.Scenario); err != nil {
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

// waitReady waits until every process announced itself ready (ctl.ready). A conflict, a process
// that exits, an interrupt or --start-timeout stops the session and returns the error.
func (s *Session) waitReady(ctx context.Context) error {
	waiting := map[string]bool{}
	for k := range s.byKey {
		waiting[k] = true
	}
	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	for len(waiting) > 0 {
		select {
		case ev := <-s.events:
			if err := s.conflictErr(); err != nil {
				_ = s.shutdown()
				return err
			}
			if ev.word == role.KindReady {
				delete(waiting, ev.sender)
			}
		case p := <-s.exits:
			_ = s.shutdown()
			return fmt.Errorf("%s (pid %d) exited before it was ready: %s", p.Name, p.PID(), p.failure())
		case <-ctx.Done():
			_ = s.shutdown()
			return fmt.Errorf("interrupted while starting the processes: %w", context.Cause(ctx))
		case <-timer.C:
			_ = s.shutdown()
			return fmt.Errorf("processes not ready within %v: %s", s.cfg.StartTimeout, keys(waiting))
		}
	}
	return nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}

// subscribe handles ready, done and result messages; invalid ones are counted and dropped.
func (s *Session) subscribe() error {
	results, err := s.conn.SubscribeDocuments(s.subj.AllCtlWord(role.KindResult), &s.ctl, func(_ string, data []byte) {
		r, err := role.DecodeResult(data, s.cfg.Run)
		if err != nil {
			s.ctl.DropErr(err)
			return
		}
		key := r.Role + "." + strconv.Itoa(r.ID)
		if s.byKey[key] == nil || !s.owns(key, r.PID) {
			s.ctl.Drop(bus.ReasonSender)
			return
		}
		s.mu.Lock()
		s.results[key] = r
		s.mu.Unlock()
	})
	if err != nil {
		return err
	}
	s.subs = append(s.subs, results)
	for _, w := range []string{role.KindReady, role.KindDone} {
		word := w
		o := bus.CtlOptions{Expect: bus.Expect{Run: s.cfg.Run, Episode: bus.AnyEpisode, Kind: word}, Counters: &s.ctl}
		sub, err := s.conn.SubscribeCtl(s.subj.AllCtlWord(word), o, func(subject string, m *bus.Message) {
			if s.byKey[m.Sender] == nil || !strings.HasSuffix(subject, "."+m.Sender) {
				s.ctl.Drop(bus.ReasonSender)
				return
			}
			pid, err := bus.CtlPID(m) // ready carries [pid], done [steps, missed, pid]
			if err != nil {
				s.ctl.DropErr(err)
				return
			}
			ev := word
			if word == role.KindReady && !s.checkPlan(m) {
				s.ctl.Drop(bus.ReasonSender)
				ev = kindConflict
			} else if !s.claim(m.Sender, pid, word) {
				s.ctl.Drop(bus.ReasonSender)
				ev = kindConflict // wake the waits: they return the conflict
			}
			select {
			case s.events <- ctlEvent{word: ev, sender: m.Sender, ep: m.Episode, vals: append([]float64(nil), m.Values...)}:
			default:
				s.ctl.Drop(bus.ReasonAhead)
			}
		})
		if err != nil {
			return err
		}
		s.subs = append(s.subs, sub)
	}
	return s.conn.Flush(5 * time.Second)
}

// kindConflict is the event word of a ready or done from a second process claiming a sender.
const kindConflict = "conflict"

// claim checks that a ready or done of sender comes from the process accepted for it: the
// child spawned for it, or in attach mode the first pid heard. It records the first
// conflict and returns false for a message of another process.
func (s *Session) claim(sender string, pid int, word string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	own, known := s.pids[sender]
	switch {
	case known && own == pid:
		return true
	case !known && s.cfg.Attach && pid > 0:
		s.pids[sender] = pid
		if p := s.byKey[sender]; p != nil {
			p.pid = pid
		}
		return true
	}
	if s.conflict == nil {
		switch {
		case known && s.cfg.Attach:
			s.conflict = fmt.Errorf("run %s: two processes claim %s: pid %d and pid %d (ctl.%s): another process uses this run id; stop it, or pick another run id",
				s.cfg.Run, sender, own, pid, word)
		case known:
			s.conflict = fmt.Errorf("run %s: %s is claimed by pid %d, which this launcher did not start (its own %s is pid %d; ctl.%s): another process uses this run id; stop it, or pick another --run-id",
				s.cfg.Run, sender, pid, s.byKey[sender].Name, own, word)
		default:
			s.conflict = fmt.Errorf("run %s: %s is claimed by pid %d, which this launcher did not start (ctl.%s before its own process started): another process uses this run id; stop it, or pick another --run-id",
				s.cfg.Run, sender, pid, word)
		}
	}
	return false
}

// owns reports whether pid is the process accepted for sender (a result of another is dropped).
func (s *Session) owns(sender string, pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	own, known := s.pids[sender]
	return known && own == pid
}

// conflictErr returns the first conflict (nil: none).
func (s *Session) conflictErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflict
}

// planPath is process p's plan file.
func (s *Session) planPath(p *Proc) string { return filepath.Join(s.cfg.Dir, role.PlanFile(p.Name)) }

// writePlans ships each process its slice of the plan, computed once here: a plan file with
// the resolved design (no process repeats the sensitivity enumeration, the Sigma design or the
// graph's spectrum) and only the private values that process owns - the plant its x(0), an
// agent host its agents' x_i(0), the cloud and the eavesdropper none (nor the seed). Owner-only
// permissions: the file holds private initial states.
func (s *Session) writePlans() error {
	for _, p := range s.procs {
		keep := plan.KeepNothing
		switch p.Role {
		case bus.RolePlant:
			keep = plan.Keep{Seed: true, PlantX0: true, Last: -1}
		case bus.RoleAgent:
			keep = plan.Keep{Seed: true, First: p.ID, Last: p.LastAgent}
		}
		var buf bytes.Buffer
		if err := s.cfg.Plan.WriteFile(&buf, keep); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if err := atomicfile.WriteFile(s.planPath(p), buf.Bytes(), 0o600); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if s.planDigests == nil {
			s.planDigests = map[string]uint64{}
		}
		s.planDigests[bus.SenderName(p.Role, p.ID)] = plan.FileDigest(buf.Bytes())
	}
	return nil
}

// checkPlan records a conflict when a process's ctl.ready names a plan file other than the one
// written for it (a stale file of an earlier run, read by a process started before this
// launcher wrote its own) and returns false; a process that resolved the scenario itself
// (digest 0) is accepted.
func (s *Session) checkPlan(m *bus.Message) bool {
	got, want := bus.CtlPlan(m), s.planDigests[m.Sender]
	if got == 0 || got == want {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conflict == nil {
		s.conflict = fmt.Errorf("run %s: %s runs another plan file than the one this launcher wrote (%s; digest %012x, want %012x): "+
			"it read a stale file of an earlier run; start it again now that the file is written", s.cfg.Run, m.Sender,
			s.planPath(s.byKey[m.Sender]), got, want)
	}
	return false
}

func (s *Session) args(p *Proc) []string {
	c := s.cfg
	url := c.URL
	for i, q := range s.procs { // spread over a cluster: process i prefers server i
		if q == p {
			url = bus.RotateURLs(c.URL, i)
		}
	}
	if px := s.proxies[bus.SenderName(p.Role, p.ID)]; px != nil {
		url = px.URL() // faults.proxies: this process reaches the server through toxiproxy
	}
	a := []string{string(p.Role),
		"--nats-url", url, "--run", c.Run, "--plan", s.planPath(p), "--point", strconv.Itoa(c.Point),
		"--out", c.Dir, "--mode", c.Mode.String(), "--timeout", c.Timeout.String(),
		"--idle-timeout", (c.StartTimeout + c.Timeout + time.Minute).String(),
		"--log-level", c.LogLevel, "--encoding", c.Encoding, "--parent-pid", strconv.Itoa(os.Getpid())}
	if c.Period > 0 {
		a = append(a, "--period", c.Period.String())
	}
	if c.BoundTraces {
		a = append(a, "--keep-episodes", strconv.Itoa(c.KeepEpisodes))
	}
	if s.keysFile != "" {
		a = append(a, "--sign-keys", s.keysFile)
	}
	for _, f := range []struct{ flag, path string }{{"--tls-ca", c.TLS.CA}, {"--tls-cert", c.TLS.Cert}, {"--tls-key", c.TLS.Key}} {
		if f.path != "" { // file names, not secrets
			a = append(a, f.flag, f.path)
		}
	}
	// Every process draws its own messages' faults from the same fault seed; a hash of the run
	// seed, so the cloud and the eavesdropper learn nothing of the noise from it.
	a = append(a, "--fault-seed", strconv.FormatUint(fault.SeedOf(c.Seed), 10))
	switch p.Role {
	case bus.RolePlant:
		a = append(a, "--seed", strconv.FormatUint(c.Seed, 10), "--id", strconv.Itoa(p.ID))
	case bus.RoleAgent:
		a = append(a, "--seed", strconv.FormatUint(c.Seed, 10), "--agents", fmt.Sprintf("%d..%d", p.ID, p.LastAgent))
	case bus.RoleCloud:
		a = append(a, "--id", strconv.Itoa(p.ID))
	case bus.RoleEavesdropper: // no seed: the eavesdropper never learns the noise
		a = append(a, "--id", strconv.Itoa(p.ID), "--transcript="+strconv.FormatBool(c.Transcript))
	}
	if (p.Role == bus.RoleAgent || p.Role == bus.RoleEavesdropper) && sim.NewHosts(c.Plan, c.AgentsPerProcess).Batched() {
		a = append(a, "--batch", strconv.Itoa(c.AgentsPerProcess)) // one message per host per step
	}
	return a
}

func (s *Session) spawn(p *Proc) error { return s.spawnWith(p, false) }

// spawnWith starts p's process; resume restarts it after a crash (its log goes on, and it
// continues from its checkpoint).
func (s *Session) spawnWith(p *Proc, resume bool) error {
	p.LogPath = filepath.Join(s.cfg.Dir, p.Name+".log")
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if resume {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(p.LogPath, flags, 0o644)
	if err != nil {
		return err
	}
	p.logFile = f
	args := s.args(p)
	if resume {
		args = append(args, "--resume")
	}
	p.cmd = exec.Command(s.cfg.Exe, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = os.Environ()
	if s.cfg.GOMAXPROCS > 0 {
		p.cmd.Env = append(p.cmd.Env, "GOMAXPROCS="+strconv.Itoa(s.cfg.GOMAXPROCS))
	}
	if u, ok := s.cfg.Users[bus.SenderName(p.Role, p.ID)]; ok {
		p.cmd.Env = append(p.cmd.Env, u.Env()...) // the credentials: never in argv
	}
	if seed, ok := s.seeds[bus.SenderName(p.Role, p.ID)]; ok {
		p.cmd.Env = append(p.cmd.Env, bus.EnvSignSeed+"="+seed) // the signing seed: never in argv
	}
	setProcAttr(p.cmd)
	p.exited = make(chan struct{})
	// Hold the lock over the start: a ready of this child is checked against its pid only
	// once the pid is recorded.
	s.mu.Lock()
	err = p.cmd.Start()
	if err == nil {
		s.pids[bus.SenderName(p.Role, p.ID)] = p.cmd.Process.Pid
	}
	s.mu.Unlock()
	if err != nil {
		f.Close()
		close(p.exited)
		p.waitErr = err
		return err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		p.logFile.Close()
		close(p.exited)
		s.exits <- p
	}()
	return nil
}

// ErrInterrupted is wrapped by the errors of waits that the context ended (Ctrl-C).
var ErrInterrupted = errors.New("interrupted")

// Episode starts episode ep (x0 nil: the scenario's initial state; else the explicit x(0):
// nx values for cloud control, N for consensus - the auditor's challenger) and waits until
// every process reported it done. A child that exits, the context ending or the episode
// exceeding its time bound end the wait with an error naming the cause.
func (s *Session) Episode(ctx context.Context, ep int, x0 []float64) error {
	if x0 != nil {
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
	}
	if err := s.conflictErr(); err != nil {
		return fmt.Errorf("episode %d: %w", ep, err)
	}
	if err := s.awaitRejoin(ctx, ep); err != nil {
		return err
	}
	start := time.Now()
	if x0 != nil {
		// The secret goes on the challenger's private line, never on dpsim.<run>.>.
		if err := s.conn.Publish(s.subj.ChallengerX0(), bus.X0Message(s.cfg.Run, ep, x0)); err != nil {
			return err
		}
	}
	if err := s.conn.Publish(s.subj.CtlEpisode(), bus.EpisodeMessage(s.cfg.Run, ep, x0 != nil)); err != nil {
		return err
	}
	if err := s.conn.Flush(s.cfg.Timeout); err != nil {
		return err
	}
	waiting := make(map[string]bool, len(s.byKey))
	for k := range s.byKey {
		waiting[k] = true
	}
	// Every child bounds each step by --timeout and exits when it fails; this bound only
	// catches a child that stalls without exiting.
	steps := time.Duration(s.cfg.Plan.Steps)
	bound := 2*s.cfg.Timeout + role.GridLead + steps*(s.cfg.Period+100*time.Millisecond)
	for _, r := range s.cfg.Plan.Scenario.Faults.ServerRestarts {
		if r.Episode == ep { // down, then every message lost in the gap costs a timeout
			bound += r.Down + 10*s.cfg.Timeout + 10*time.Second
		}
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for len(waiting) > 0 {
		select {
		case ev := <-s.events:
			s.noteEvent(ev)
			if err := s.conflictErr(); err != nil {
				return fmt.Errorf("episode %d: %w", ep, err)
			}
			if ev.word == role.KindDone && ev.ep == ep {
				delete(waiting, ev.sender)
			}
		case p := <-s.exits:
			if c := s.scheduledCrash(p, ep); c != nil {
				if err := s.restartCrashed(p, c, ep); err != nil {
					return fmt.Errorf("episode %d: %w", ep, err)
				}
				continue
			}
			s.exits <- p // keep it for Stop's accounting
			s.cfg.Timeline.add(time.Now(), TimelineEvent{Point: s.cfg.PointIndex, Episode: ep, Step: -1, Proc: p.Name, Event: EvExited,
				Detail: fmt.Sprintf("pid %d: %s; the episodes finished before are kept", p.PID(), p.failure())})
			if f := p.failure(); f != "" {
				return fmt.Errorf("episode %d: process %s (pid %d) failed: %s", ep, p.Name, p.PID(), f)
			}
			return fmt.Errorf("episode %d: process %s (pid %d) exited early", ep, p.Name, p.PID())
		case <-ctx.Done():
			return fmt.Errorf("episode %d: %w (%v)", ep, ErrInterrupted, context.Cause(ctx))
		case <-timer.C:
			return fmt.Errorf("episode %d: no ctl.done from %s within %v", ep, keys(waiting), bound)
		}
	}
	if err := s.conflictErr(); err != nil {
		return fmt.Errorf("episode %d: %w", ep, err)
	}
	s.Episodes++
	s.EpisodeNS += time.Since(start)
	return nil
}

// scheduledCrash returns the scenario's crash of p in episode ep when p's exit is that crash
// (killed by SIGKILL, the first time), else nil.
func (s *Session) scheduledCrash(p *Proc, ep int) *scenario.Crash {
	c := s.cfg.Plan.Scenario.Faults.CrashOf(bus.SenderName(p.Role, p.ID), ep)
	if c == nil || p.state == nil || !killed(p.state) {
		return nil
	}
	key := fmt.Sprintf("%s/%d", c.Proc, ep)
	if s.crashed[key] {
		return nil
	}
	if s.crashed == nil {
		s.crashed = map[string]bool{}
	}
	s.crashed[key] = true
	return c
}

// restartCrashed starts a process killed by a crash of the scenario again, with --resume: it
// continues from its checkpoint and is back at the crash's restart step.
func (s *Session) restartCrashed(p *Proc, c *scenario.Crash, ep int) error {
	s.Crashes++
	tl, pt := s.cfg.Timeline, s.cfg.PointIndex
	tl.add(time.Now(), TimelineEvent{Point: pt, Episode: ep, Step: c.Step, Proc: p.Name, Event: EvKilled,
		Detail: fmt.Sprintf("SIGKILL (pid %d, faults.crashes); checkpoint at step %d", p.PID(), c.Step)})
	s.cfg.Log.Warn().Str("proc", p.Name).Int("episode", ep).Int("step", c.Step).Msg("faults: process killed; restarting it from its checkpoint")
	if err := s.spawnWith(p, true); err != nil {
		return fmt.Errorf("restart %s after its crash: %w", p.Name, err)
	}
	s.Restarts++
	tl.add(time.Now(), TimelineEvent{Point: pt, Episode: ep, Step: c.Restart, Proc: p.Name, Event: EvRestarted,
		Detail: fmt.Sprintf("pid %d resumes from its checkpoint, back at step %d (noise: %s)", p.PID(), c.Restart, c.Noise)})
	return nil
}

// noteEvent keeps track of the processes heard from since a server restart.
func (s *Session) noteEvent(ev ctlEvent) {
	if ev.word != role.KindReady {
		return
	}
	s.restartMu.Lock()
	delete(s.pendingReady, ev.sender)
	s.restartMu.Unlock()
}

// awaitRejoin waits, before episode ep starts, until a server restart is over and every
// process announced itself again (what is published while a subscriber is away is lost: an
// episode started earlier would go unheard).
func (s *Session) awaitRejoin(ctx context.Context, ep int) error {
	s.restartMu.Lock()
	done := s.restartDone
	s.restartMu.Unlock()
	if done == nil {
		return nil
	}
	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("episode %d: %w (%v)", ep, ErrInterrupted, context.Cause(ctx))
	case <-timer.C:
		return fmt.Errorf("episode %d: the NATS server restart did not finish within %v", ep, s.cfg.StartTimeout)
	}
	s.restartMu.Lock()
	err := s.restartErr
	s.restartMu.Unlock()
	if err != nil {
		return fmt.Errorf("episode %d: %w", ep, err)
	}
	for {
		s.restartMu.Lock()
		var left []string
		for k := range s.pendingReady {
			left = append(left, k)
		}
		s.restartMu.Unlock()
		if len(left) == 0 {
			return nil
		}
		select {
		case ev := <-s.events:
			s.noteEvent(ev)
		case p := <-s.exits:
			s.exits <- p
			return fmt.Errorf("episode %d: process %s (pid %d) exited after the NATS server restart: %s", ep, p.Name, p.PID(), p.failure())
		case <-ctx.Done():
			return fmt.Errorf("episode %d: %w (%v)", ep, ErrInterrupted, context.Cause(ctx))
		case <-timer.C:
			return fmt.Errorf("episode %d: after the NATS server restart, not back on the bus within %v: %s", ep, s.cfg.StartTimeout, strings.Join(left, ", "))
		}
	}
}

// trigger is a fault the launcher fires when it sees a step on the bus.
type trigger struct {
	at    scenario.StepPoint
	fired bool
	fire  func(step int)
}

// watchServer arms the scenario's server restarts and proxy resets: the launcher listens to
// one data stream (the plant's yhat, or agent 0's y) and fires each when it sees its step.
func (s *Session) watchServer() error {
	f := &s.cfg.Plan.Scenario.Faults
	var ts []*trigger
	for _, r := range f.ServerRestarts {
		if s.cfg.Server == nil {
			return errors.New("faults.server_restarts: the run uses an external NATS server (--nats-url); only the embedded server can be restarted")
		}
		if n := 1; r.Server > 0 {
			if s.cfg.Cluster != nil {
				n = len(s.cfg.Cluster.Members)
			}
			if r.Server >= n {
				return fmt.Errorf("faults.server_restarts: server %d, but the run has %d embedded server(s) (dpsim run --cluster N)", r.Server, n)
			}
		}
		r := r
		ts = append(ts, &trigger{at: scenario.StepPoint{Episode: r.Episode, Step: r.Step}, fire: func(step int) { s.restartServer(r, step) }})
	}
	for _, x := range f.Proxies {
		px := s.proxies[x.Proc]
		if px == nil {
			continue
		}
		for _, at := range x.Resets {
			proc, at := x.Proc, at
			ts = append(ts, &trigger{at: at, fire: func(step int) {
				err := px.Reset()
				detail := "toxiproxy closed the connection; the client reconnects"
				if err != nil {
					detail = err.Error()
				}
				s.cfg.Log.Warn().Str("proc", proc).Int("episode", at.Episode).Int("step", step).Msg("faults: connection reset")
				s.cfg.Timeline.add(time.Now(), TimelineEvent{Point: s.cfg.PointIndex, Episode: at.Episode, Step: step, Proc: role.ProcName(procRole(proc)), Event: EvReset, Detail: detail})
			}})
		}
	}
	if len(ts) == 0 {
		return nil
	}
	subject := s.subj.AgentY(0)
	if s.cfg.Plan.Scenario.Kind == scenario.CloudControl {
		subject = s.subj.PlantYhat(0)
	}
	sub, err := s.conn.SubscribeDocuments(subject, nil, func(_ string, data []byte) {
		var m bus.Message
		if bus.Decode(data, &m) != nil || m.Run != s.cfg.Run {
			return
		}
		for _, t := range ts {
			if !t.fired && m.Episode == t.at.Episode && m.Step >= t.at.Step {
				t.fired = true
				t.fire(m.Step)
			}
		}
	})
	if err != nil {
		return err
	}
	s.subs = append(s.subs, sub)
	return nil
}

// procRole splits an endpoint "<role>.<id>" into what role.ProcName takes.
func procRole(e string) (bus.Role, int, int) {
	r, id, _ := strings.Cut(e, ".")
	k, _ := strconv.Atoi(id)
	return bus.Role(r), k, k
}

// restartServer stops the embedded server, keeps it down, starts it again, and puts both on
// the timeline; the next episode waits until every process is back.
func (s *Session) restartServer(r scenario.ServerRestart, step int) {
	s.restartMu.Lock()
	prev := s.restartDone
	done := make(chan struct{})
	s.restartDone = done
	s.pendingReady = map[string]bool{}
	for k := range s.byKey {
		s.pendingReady[k] = true
	}
	member := s.cfg.Server
	if s.cfg.Cluster != nil {
		// a cluster member: only its clients lose the bus (and come back through another)
		member = s.cfg.Cluster.Members[r.Server]
		on := member.ClientNames()
		for k, p := range s.byKey {
			if !on["dpsim-"+p.Name] {
				delete(s.pendingReady, k)
			}
		}
	}
	s.ServerRestarts++
	s.restartMu.Unlock()
	tl, pt := s.cfg.Timeline, s.cfg.PointIndex
	go func() {
		if prev != nil {
			<-prev
		}
		what := "the NATS server"
		if s.cfg.Cluster != nil {
			what = fmt.Sprintf("cluster member %d", r.Server)
		}
		s.cfg.Log.Warn().Int("episode", r.Episode).Int("step", step).Dur("down", r.Down).Str("server", what).Msg("faults: stopping the NATS server")
		tl.add(time.Now(), TimelineEvent{Point: pt, Episode: r.Episode, Step: step, Event: EvServerStopped, Detail: fmt.Sprintf("%s down for %v", what, r.Down)})
		err := member.Restart(r.Down)
		if err != nil {
			tl.add(time.Now(), TimelineEvent{Point: pt, Episode: r.Episode, Step: -1, Event: EvServerFailed, Detail: err.Error()})
		} else {
			tl.add(time.Now(), TimelineEvent{Point: pt, Episode: r.Episode, Step: -1, Event: EvServerStarted, Detail: "same port"})
			s.cfg.Log.Warn().Msg("faults: the NATS server is back")
		}
		s.restartMu.Lock()
		if err != nil && s.restartErr == nil {
			s.restartErr = err
		}
		s.restartMu.Unlock()
		close(done)
	}()
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
	s.restartMu.Lock()
	restart := s.restartDone
	s.restartMu.Unlock()
	if restart != nil { // a ctl.stop sent while the server is down would be lost
		select {
		case <-restart:
		case <-time.After(s.cfg.StartTimeout):
		}
	}
	s.publishStop()
	// A process still starting (not subscribed yet: the session failed before every process
	// was ready) would miss a single ctl.stop and wait out the stop bound, then be killed and
	// look failed: ctl.stop is repeated until every process exited.
	wait := func(d time.Duration) bool {
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
	if s.cfg.Attach {
		s.awaitResults(s.cfg.StopTimeout)
	}
	if !wait(s.cfg.StopTimeout) {
		for _, p := range s.procs {
			if p.running() {
				s.cfg.Log.Warn().Str("proc", p.Name).Msg("no exit after ctl.stop: SIGTERM")
				_ = terminate(p.cmd.Process)
			}
		}
		if !wait(killGrace) {
			for _, p := range s.procs {
				if p.running() {
					s.cfg.Log.Warn().Str("proc", p.Name).Msg("no exit after SIGTERM: SIGKILL")
					_ = p.cmd.Process.Kill()
				}
			}
			wait(killGrace)
		}
	}
	for _, px := range s.proxies {
		px.Close()
	}
	if s.cfg.Attach {
		if err := removeAttach(s.cfg.Dir, true); err != nil {
			s.cfg.Log.Warn().Err(err).Msg("attach: removing the credentials files")
		}
	}
	// Late ctl.result messages: give the subscription a moment, then close.
	if s.conn != nil {
		_ = s.conn.Flush(time.Second)
		for _, sub := range s.subs {
			_ = sub.Unsubscribe()
		}
		s.conn.Close()
	}
	var first error
	for _, p := range s.procs {
		if p.exited == nil {
			continue
		}
		select {
		case <-p.exited:
			if f := p.failure(); f != "" && first == nil {
				first = fmt.Errorf("process %s (pid %d) failed: %s", p.Name, p.PID(), f)
			}
		default:
			if first == nil {
				first = fmt.Errorf("process %s (pid %d) did not exit", p.Name, p.PID())
			}
		}
	}
	return first
}

// stopRepeat is how often shutdown repeats ctl.stop while processes have not exited.
const stopRepeat = 100 * time.Millisecond

// publishStop sends ctl.stop (nothing when the connection is gone).
func (s *Session) publishStop() {
	if s.conn != nil && !s.conn.IsClosed() {
		_ = s.conn.Publish(s.subj.CtlStop(), bus.StopMessage(s.cfg.Run))
		_ = s.conn.Flush(2 * time.Second)
	}
}

// Result returns the process's result: its ctl.result message, else its result file.
func (s *Session) Result(p *Proc) *role.ProcessResult {
	if p.result != nil {
		return p.result
	}
	s.mu.Lock()
	r := s.results[bus.SenderName(p.Role, p.ID)]
	s.mu.Unlock()
	if r == nil {
		r, _ = role.ReadResultFile(filepath.Join(s.cfg.Dir, role.ResultFile(p.Name)), s.cfg.Run)
	}
	p.result = r
	return r
}

// CtlInvalid returns the launcher's counts of coordination messages.
func (s *Session) CtlInvalid() bus.CountersSnapshot { return s.ctl.Snapshot() }

// MaxMissingListed bounds Collected.Missing; MissingCount has the total.
const MaxMissingListed = 100

// Collected is what the processes of a point recorded, merged into the sim records.
type Collected struct {
	// Control / Consensus are the merged records (CollectOptions.Keep only).
	Control   []sim.ControlRecord
	Consensus []sim.ConsensusRecord
	// Missing lists the first MaxMissingListed record pieces no process supplied;
	// MissingCount counts all of them.
	Missing      []sim.Missing
	MissingCount int
	// Episodes is the number of episodes found in the traces; TracedEpisodes and
	// TraceRecords count what was written to CollectOptions.Trace.
	Episodes       int
	TracedEpisodes int
	TraceRecords   int
	Results        *sim.Results
}

// CollectOptions say where the merged records go.
type CollectOptions struct {
	// Trace receives the merged records (the pkg/sim trace format, JSON lines) of the
	// episodes 0..TraceEpisodes-1 (all when TraceEpisodes <= 0), as they are merged; nil:
	// none are written.
	Trace         io.Writer
	TraceEpisodes int
	// Keep also returns every merged record in Collected: memory then grows with the
	// episodes (tests and short hand-driven runs).
	Keep bool
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
// one episode at a time (sim.MergeControlStreams / MergeConsensusStreams: every process
// writes its records in episode order), so memory stays that of one episode whatever the
// number of episodes. Each complete episode is folded into the Results by the same
// Accumulator as the fast engine (sim.Accumulator.Results), in episode order, so the numbers
// are the fast engine's bit for bit; episodes with missing pieces (an interrupted run) are not
// aggregated and are listed in Results.IncompleteEpisodes. A trace file that cannot be read
// is reported in the error; what the other files hold is still merged.
//
// Polled after every episode (the launcher does), it also bounds the disk: processes started
// with KeepEpisodes cut their trace back to the end of the kept episodes when the next
// episode begins, and the collector reads each later episode from there.
type Collector struct {
	s   *Session
	o   CollectOptions
	acc *sim.Accumulator
	f   *folder
	// off is the size of each process's trace already merged; keepEnd the size after the
	// kept episodes (-1: not reached).
	off, keepEnd map[string]int64
	polls        int
	errs         []error
}

// NewCollector returns a collector of the session's traces.
func (s *Session) NewCollector(o CollectOptions) (*Collector, error) {
	acc, err := sim.NewAccumulator(s.cfg.Plan, s.cfg.Seed)
	if err != nil {
		return nil, err
	}
	c := &Collector{s: s, o: o, acc: acc, off: map[string]int64{}, keepEnd: map[string]int64{}}
	out := &Collected{}
	c.f = &folder{out: out, steps: s.cfg.Plan.Steps, unfinishedFrom: math.MaxInt, unfinished: -1,
		traced: func(ep int) bool { return o.Trace != nil && (o.TraceEpisodes <= 0 || ep < o.TraceEpisodes) },
		noteMissing: func(ms []sim.Missing) {
			out.MissingCount += len(ms)
			if room := MaxMissingListed - len(out.Missing); room > 0 {
				out.Missing = append(out.Missing, ms[:min(room, len(ms))]...)
			}
		}}
	for _, pr := range s.procs {
		c.keepEnd[pr.Name] = -1
		if s.cfg.KeepEpisodes == 0 && s.cfg.BoundTraces {
			c.keepEnd[pr.Name] = 0
		}
	}
	return c, nil
}

// Poll merges what the trace files gained since the last Poll. With bounded traces, call it
// once after every episode, before the next one starts.
func (c *Collector) Poll() error {
	c.polls++
	t := &pollFiles{dir: c.s.cfg.Dir, off: c.off, keepEnd: c.keepEnd, size: map[string]int64{}}
	defer t.close()
	var mergeErr error
	switch c.s.cfg.Plan.Scenario.Kind {
	case scenario.CloudControl:
		mergeErr = c.mergeControl(t.open)
	case scenario.Consensus:
		mergeErr = c.mergeConsensus(t.open)
	}
	c.advanceOffsets(t.size)
	errs := t.errs
	if mergeErr != nil {
		errs = append(errs, mergeErr)
	}
	err := errors.Join(errs...)
	if err != nil {
		c.errs = append(c.errs, err)
	}
	return err
}

// pollFiles are the trace files one Poll reads: each from the offset the last Poll reached.
type pollFiles struct {
	dir          string
	off, keepEnd map[string]int64 // the Collector's
	size         map[string]int64 // the size of each file read
	files        []*os.File
	errs         []error
}

// open returns the part of process pr's trace file not read yet. A file that cannot be read
// records its error and reads as empty.
func (t *pollFiles) open(pr *Proc) io.Reader {
	f, err := os.Open(filepath.Join(t.dir, role.TraceFile(pr.Name)))
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("%s: %w", pr.Name, err))
		return strings.NewReader("")
	}
	t.files = append(t.files, f)
	st, err := f.Stat()
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("%s: %w", pr.Name, err))
		return strings.NewReader("")
	}
	off := t.off[pr.Name]
	if st.Size() < off { // cut back past the kept episodes (a process's disk bound)
		off = max(t.keepEnd[pr.Name], 0)
	}
	t.size[pr.Name] = st.Size()
	return bufio.NewReaderSize(io.NewSectionReader(f, off, st.Size()-off), 1<<16)
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
	var plant, cloud, eve *sim.TraceReader[sim.ControlRecord]
	for _, pr := range s.procs {
		r := sim.NewTraceReader[sim.ControlRecord](open(pr))
		switch pr.Role {
		case bus.RolePlant:
			plant = r
		case bus.RoleCloud:
			cloud = r
		case bus.RoleEavesdropper:
			eve = r
		}
	}
	var tw *sim.TraceWriter[sim.ControlRecord]
	if c.o.Trace != nil {
		tw = sim.NewTraceWriter[sim.ControlRecord](c.o.Trace)
	}
	var keep *[]sim.ControlRecord
	if c.o.Keep {
		keep = &f.out.Control
	}
	mergeErr := sim.MergeControlStreams(p.Steps, p.Reference, plant, cloud, eve, func(recs []sim.ControlRecord, missing []sim.Missing) error {
		for i := range recs {
			var ms []sim.Missing
			if i == 0 {
				ms = missing
			}
			if err := foldRecord(f, &recs[i], ms, tw, keep, func(r *sim.ControlRecord) (*int, int, []float64) { return &r.Episode, r.Step, r.X },
				(*sim.ControlRecord).Clone, c.acc.AddControl, c.acc.Discard); err != nil {
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
	var agents []*sim.TraceReader[sim.AgentRecord]
	var names []string
	var eve *sim.TraceReader[sim.ConsensusRecord]
	for _, pr := range s.procs {
		if pr.Role == bus.RoleAgent {
			agents = append(agents, sim.NewTraceReader[sim.AgentRecord](open(pr)))
			names = append(names, pr.Name)
			continue
		}
		eve = sim.NewTraceReader[sim.ConsensusRecord](open(pr))
	}
	var tw *sim.TraceWriter[sim.ConsensusRecord]
	if c.o.Trace != nil {
		tw = sim.NewTraceWriter[sim.ConsensusRecord](c.o.Trace)
	}
	var keep *[]sim.ConsensusRecord
	if c.o.Keep {
		keep = &f.out.Consensus
	}
	mergeErr := sim.MergeConsensusStreams(p.Graph.N, p.Steps, agents, names, eve, func(r *sim.ConsensusRecord, missing []sim.Missing) error {
		return foldRecord(f, r, missing, tw, keep, func(r *sim.ConsensusRecord) (*int, int, []float64) { return &r.Episode, r.Step, r.X },
			(*sim.ConsensusRecord).Clone, c.acc.AddConsensus, c.acc.Discard)
	})
	if tw != nil {
		if err := tw.Flush(); err != nil && mergeErr == nil {
			mergeErr = err
		}
	}
	return mergeErr
}

// advanceOffsets moves each file's read offset to the size read (size), or with bounded traces
// back to the end of the kept episodes, where the process writes its next episode.
func (c *Collector) advanceOffsets(size map[string]int64) {
	s := c.s
	for name, sz := range size {
		c.off[name] = sz
		if s.cfg.BoundTraces && c.keepEnd[name] < 0 && c.polls == s.cfg.KeepEpisodes {
			c.keepEnd[name] = sz
		}
		if s.cfg.BoundTraces && c.keepEnd[name] >= 0 {
			c.off[name] = c.keepEnd[name] // the process starts its next episode there
		}
	}
}

// resumeAt continues a point from episode start: acc holds the metrics of episodes
// 0..start-1 (rebuilt by the resumed launcher) and the processes, started afresh, begin at
// episode start.
func (c *Collector) resumeAt(start int, acc *sim.Accumulator) {
	f := c.f
	c.acc, f.merged, f.folded, f.out.Episodes = acc, start, start, start
	if c.o.Trace != nil {
		f.out.TracedEpisodes = start
		if c.o.TraceEpisodes > 0 {
			f.out.TracedEpisodes = min(start, c.o.TraceEpisodes)
		}
	}
}

// metricsDigest is the digest of the metrics folded so far (the resume state's check).
func (c *Collector) metricsDigest() (string, error) { return accDigest(c.acc) }

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
		m := map[string]PartialMarker{PartialMarkerKey: {Episode: f.unfinished, Records: f.unfinishedRecords,
			Note: "the run stopped in this episode: the records above, from its step 0, are what the processes wrote of it; it is in no metric"}}
		if err := json.NewEncoder(c.o.Trace).Encode(m); err != nil {
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
	noteMissing func([]sim.Missing)
	folded      int   // complete episodes fold under consecutive numbers 0, 1, 2, ...
	merged      int   // episodes 0..merged-1 were merged (a bounded trace's last episode stays after the run: read once)
	incomplete  []int // episodes with missing pieces, not aggregated
	// The episode being merged: skip (merged before), whole (no piece missing so far).
	skip, whole bool
	// Episodes from unfinishedFrom on did not finish (Collector.Unfinished): unfinished is the
	// first of them found (-1: none) and unfinishedRecords counts their records in the trace.
	unfinishedFrom, unfinished, unfinishedRecords int
}

// foldRecord handles one merged record of either kind; the records of an episode come in step
// order 0..T. It writes a kept episode's records to the trace, keeps a copy in memory when asked
// (keep non-nil), and hands the records of an episode to the accumulator (add) under the next
// consecutive number - the fast engine's order - as they come: an episode found incomplete
// (a record without X) is discarded there (drop) and listed instead. meta gives a record's
// episode and step fields and its state X (nil when a piece is missing); the record's slices
// may be views valid during the call only.
func foldRecord[R sim.ControlRecord | sim.ConsensusRecord](f *folder, rec *R, missing []sim.Missing, tw *sim.TraceWriter[R],
	keep *[]R, meta func(*R) (ep *int, step int, x []float64), clone func(*R) R, add func(*R) error, drop func(ep int)) error {
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
				if f.unfinished < 0 {
					f.unfinished = ep
				}
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
		drop(f.folded)
	}
	if f.whole {
		r := *rec
		p, _, _ := meta(&r)
		*p = f.folded
		if err := add(&r); err != nil {
			return fmt.Errorf("episode %d: %w", ep, err)
		}
		if step == f.steps {
			f.folded++
		}
	}
	return nil
}

// lastLogError returns the message of the last error line of a child's log (zerolog JSON
// lines, or plain text), shortened, for the launcher's error message.
func lastLogError(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 64<<10 {
		data = data[len(data)-64<<10:]
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := string(bytes.TrimSpace(lines[i]))
		if l == "" {
			continue
		}
		if strings.Contains(l, `"level":"error"`) || !strings.HasPrefix(l, "{") {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			return l
		}
	}
	return ""
}

// PartialMarkerKey is the key of the line that ends a merged trace file (trace.jsonl,
// trace-pNN.jsonl) whose last records belong to an episode that did not finish (a process
// died or the run was stopped in it): {"unfinished_episode": {"episode": 5, "records": 37,
// "note": "..."}}. The records above it, back to the first of that episode, are in no metric.
// The line is not a record: a reader of records (sim.ReadTrace) stops there with an error
// rather than take a partial episode for a finished one.
const PartialMarkerKey = "unfinished_episode"

// PartialMarker is the value of the PartialMarkerKey line.
type PartialMarker struct {
	Episode int    `json:"episode"` // the unfinished episode
	Records int    `json:"records"` // its records just above this line
	Note    string `json:"note"`
}
