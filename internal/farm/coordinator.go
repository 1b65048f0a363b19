package farm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
)

// Config configures a Coordinator.
type Config struct {
	// Scenario is the scenario file as the command read it, Source its path: every job carries
	// them, so a worker resolves the same points and plans.
	Scenario []byte
	Source   string
	// URL is an external NATS server (credentials in the URL are the coordinator's and the
	// workers'); "" starts the embedded server on Listen ("host:port"; "" loopback, random port).
	// The embedded server speaks plain TCP: on an address other hosts reach, the passwords and
	// the jobs (scenario, seed) cross the network in clear, so use a trusted network, or an
	// external server with TLS (workers: --tls-ca).
	URL    string
	Listen string
	// Dir receives the workers' credentials file; "" a temporary directory, removed
	// by Close.
	Dir string
	// Spawn local `dpsim worker` processes (Exe: the dpsim binary, default os.Executable()),
	// each with SpawnThreads goroutines (<= 0: GOMAXPROCS / Spawn) and SpawnEnv added to its
	// environment; their stderr goes to Stderr.
	Spawn        int
	SpawnThreads int
	SpawnEnv     []string
	Exe          string
	Stderr       io.Writer
	// Silence is how long a worker holding a chunk may stay silent before the chunk is
	// re-issued (<= 0: DefaultSilence).
	Silence time.Duration
	// ChunkEpisodes is the episodes of a Run chunk (<= 0: DefaultChunkEpisodes).
	ChunkEpisodes int
	Log           zerolog.Logger
}

// DefaultSilence is Config.Silence's default: many heartbeats (DefaultBeat) long.
const DefaultSilence = 3 * time.Second

// DefaultChunkEpisodes is Config.ChunkEpisodes's default.
const DefaultChunkEpisodes = 16

// CredentialsFile is the workers' credentials file under Config.Dir.
const CredentialsFile = "worker.creds"

// Coordinator hands a command's episodes to workers (see the package doc). Audit and Run may be
// called one after the other (a sweep's points); Close ends the session.
type Coordinator struct {
	cfg  Config
	log  zerolog.Logger
	srv  *launch.Server
	conn *bus.Conn
	subs []*bus.Subscription
	// WorkerCommand is the command to run on another host to join (no secret in it).
	WorkerCommand string
	credentials   string
	workerURL     string
	tmpDir        string

	events          chan func(*scheduler)
	closing, closed chan struct{}
	over            atomic.Bool
	closeOnce       sync.Once
	looping         bool // the scheduler's loop runs (Close waits for it)

	mu      sync.Mutex
	jobs    map[string]*Job // served on SubjectJob until retired
	session string
	nextJob int

	rep   collector
	procs *spawned
}

// Start starts the coordinator's server (or connects to the external one), writes the workers'
// credentials, subscribes the protocol's subjects and spawns the local workers.
func Start(ctx context.Context, cfg Config) (*Coordinator, error) {
	if cfg.Silence <= 0 {
		cfg.Silence = DefaultSilence
	}
	if cfg.ChunkEpisodes <= 0 {
		cfg.ChunkEpisodes = DefaultChunkEpisodes
	}
	c := &Coordinator{cfg: cfg, log: cfg.Log, events: make(chan func(*scheduler), 1024),
		closing: make(chan struct{}), closed: make(chan struct{}), jobs: map[string]*Job{}}
	c.session = randomID()
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	coord, wk, err := c.startServer()
	if err != nil {
		return nil, err
	}
	if c.conn, err = bus.Connect(c.srv.URL, "dpsim-farm-coordinator", bus.WithUser(coord.Name, coord.Password), bus.WithTLS(c.srv.TLS)); err != nil {
		return nil, err
	}
	if err := c.writeCredentials(wk); err != nil {
		return nil, err
	}
	if err := c.subscribe(); err != nil {
		return nil, err
	}
	go c.loop()
	c.looping = true
	if c.procs, err = c.spawn(ctx); err != nil {
		return nil, err
	}
	c.rep.r.Server, c.rep.r.Credentials, c.rep.r.Spawned = c.workerURL, c.credentials, cfg.Spawn
	ok = true
	return c, nil
}

// startServer starts the embedded server with an account for the coordinator and one for the
// workers, each allowed only its side of the protocol, or prepares the external server's.
func (c *Coordinator) startServer() (coord, wk bus.User, err error) {
	if coord, err = bus.NewUser("dpsim-farm-coordinator", []string{inboxes}, []string{subjectPrefix + ">"}); err != nil {
		return
	}
	if wk, err = bus.NewUser("dpsim-farm-worker", []string{SubjectNext, SubjectJob, SubjectBeat, SubjectAnswer}, []string{inboxes}); err != nil {
		return
	}
	sc := launch.ServerConfig{URL: c.cfg.URL, Users: []bus.User{coord, wk}}
	if c.cfg.Listen != "" {
		host, port, err := net.SplitHostPort(c.cfg.Listen)
		if err != nil {
			return coord, wk, fmt.Errorf("farm: listen address %q: %w", c.cfg.Listen, err)
		}
		sc.Host = host
		if _, err := fmt.Sscan(port, &sc.Port); err != nil {
			return coord, wk, fmt.Errorf("farm: listen address %q: port: %w", c.cfg.Listen, err)
		}
		if !isLoopback(host) {
			c.log.Warn().Str("listen", c.cfg.Listen).Msg("workers connect over plain TCP: their credentials and jobs (scenario, seed) cross the network in clear; use a trusted network")
		}
	}
	if c.srv, err = launch.StartServer(sc); err != nil {
		return coord, wk, err
	}
	c.workerURL = advertised(c.srv.URL, sc.Host)
	if c.cfg.URL != "" { // an external server: its URL's account is everyone's
		clean, user, pass := bus.SplitURL(c.cfg.URL)
		c.srv.URL, c.workerURL = clean, clean
		coord = bus.User{Name: user, Password: pass}
		wk = coord
	}
	return coord, wk, nil
}

// writeCredentials writes the workers' credentials under Dir and
// composes the command that joins from another host.
func (c *Coordinator) writeCredentials(wk bus.User) error {
	dir := c.cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "dpsim-farm-")
		if err != nil {
			return err
		}
		c.tmpDir, dir = tmp, tmp
	}
	c.credentials = filepath.Join(dir, CredentialsFile)
	if err := bus.WriteCredentials(c.credentials, bus.Credentials{User: wk.Name, Password: wk.Password}); err != nil {
		return fmt.Errorf("farm: workers' credentials: %w", err)
	}
	c.WorkerCommand = fmt.Sprintf("dpsim worker --server %s --creds %s", c.workerURL, c.credentials)
	return nil
}

// subscribe serves the protocol's subjects: each request becomes an event of the scheduler's
// loop, except the jobs, answered at once from the table.
func (c *Coordinator) subscribe() error {
	handlers := map[string]func(*bus.Request){
		SubjectNext: func(r *bus.Request) {
			if c.over.Load() {
				if data, err := encode(&assignment{Over: true}); err == nil {
					_ = r.Respond(data)
				}
				return
			}
			c.do(func(s *scheduler) { s.next(r) })
		},
		SubjectAnswer: func(r *bus.Request) { c.do(func(s *scheduler) { s.answer(r) }) },
		SubjectBeat: func(r *bus.Request) {
			var b beat
			if decode(r.Data, &b) == nil {
				c.do(func(s *scheduler) { s.beat(&b) })
			}
		},
		SubjectJob: c.serveJob,
	}
	for subject, h := range handlers {
		sub, err := c.conn.Serve(subject, "", h)
		if err != nil {
			return err
		}
		c.subs = append(c.subs, sub)
	}
	return c.conn.Flush(5 * time.Second)
}

// serveJob answers a worker's request for a job's description.
func (c *Coordinator) serveJob(r *bus.Request) {
	c.mu.Lock()
	j := c.jobs[string(r.Data)]
	c.mu.Unlock()
	if j == nil {
		_ = r.Respond(nil) // the job is over: the worker's answer would be a duplicate anyway
		return
	}
	if data, err := encode(j); err == nil {
		_ = r.Respond(data)
	}
}

// do hands f to the scheduler's loop (dropped once the coordinator is closed).
func (c *Coordinator) do(f func(*scheduler)) {
	select {
	case c.events <- f:
	case <-c.closed:
	}
}

// newJob registers a job of kind for point, served to the workers until it is retired.
func (c *Coordinator) newJob(kind string, point int) *Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextJob++
	j := &Job{ID: fmt.Sprintf("%s-%d", c.session, c.nextJob), Kind: kind, Scenario: c.cfg.Scenario, Source: c.cfg.Source, Point: point}
	c.jobs[j.ID] = j
	return j
}

// retire stops serving a finished job's description.
func (c *Coordinator) retire(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.jobs, id)
}

// play runs job j's chunks through the workers until every one is folded (accept), the job
// fails or ctx ends.
func (c *Coordinator) play(ctx context.Context, j *Job, spans []span, accept func(int, *answer) error) error {
	js := newJobState(j, spans, accept)
	c.do(func(s *scheduler) { s.submit(js) })
	select {
	case <-js.finish:
	case <-ctx.Done():
		c.do(func(s *scheduler) { s.fail(js, context.Cause(ctx)) })
		select {
		case <-js.finish:
		case <-c.closed:
		}
	case <-c.closed:
		return fmt.Errorf("farm: the coordinator closed during job %s", j.ID)
	}
	return js.err
}

// Report returns what the dispatch did so far.
func (c *Coordinator) Report() *Report { return c.rep.snapshot() }

// Close tells the workers the session is over, stops the spawned ones, the connection and the
// embedded server, and removes the temporary credentials.
func (c *Coordinator) Close() {
	c.closeOnce.Do(func() {
		c.over.Store(true)
		if c.looping {
			close(c.closing)
			<-c.closed
		}
		if c.procs != nil {
			c.procs.stop(5 * time.Second)
		}
		if c.conn != nil {
			_ = c.conn.Drain(2 * time.Second)
		}
		if c.srv != nil {
			c.srv.Close()
		}
		if c.tmpDir != "" {
			_ = os.RemoveAll(c.tmpDir)
		}
	})
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isLoopback(host string) bool {
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// advertised is the URL other hosts use: the server's, with a wildcard listen address replaced
// by this host's name.
func advertised(serverURL, host string) string {
	if host != "0.0.0.0" && host != "::" {
		return serverURL
	}
	name, err := os.Hostname()
	u, perr := url.Parse(serverURL)
	if err != nil || perr != nil {
		return serverURL
	}
	u.Host = net.JoinHostPort(name, u.Port())
	return strings.TrimSuffix(u.String(), "/")
}
