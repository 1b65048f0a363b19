package farm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/record"
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
	// Dir receives the credential files of the workers started elsewhere (Dir/workers/w1.creds
	// .. wN.creds, N = WorkerCreds: one per worker, each its own account; with an external
	// server, Dir/worker.creds: its URL's account, everyone's); "" a temporary directory,
	// removed by Close. The spawned workers' files are in a private directory Close removes.
	Dir         string
	WorkerCreds int // <= 0: DefaultWorkerCreds; use NoWorkerCreds for none
	// VerifyShare is the share of the chunks whose result is played a second time, by another
	// worker (or the coordinator) and compared bit for bit before it counts; which ones is drawn
	// by the coordinator with crypto/rand when the first answer arrives, so a worker cannot know
	// (0: DefaultVerifyShare; < 0: none; 1: all).
	VerifyShare float64
	// ChunkTimeout is how long a worker may hold a chunk (heartbeats or not) before it is
	// re-issued to another (<= 0: derived from the chunk times observed, see chunkBound).
	ChunkTimeout time.Duration
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
	// ChunkEpisodes is the episodes of a run chunk (kinds.Run; <= 0: DefaultChunkEpisodes).
	ChunkEpisodes int
	// Durable, when set, is the directory of the durable farm's journal (JournalDir under the
	// command's --out; see durable.go): the embedded server keeps its JetStream store there,
	// every accepted chunk result is journaled before it counts, and a coordinator started again
	// on it plays only the chunks not journaled. Not with an external server (URL).
	Durable string
	// AckWait is how long a worker of a durable farm may keep a chunk of the work queue without
	// a heartbeat (InProgress) before the queue delivers it to another (<= 0: Silence), and
	// MaxDeliver how many deliveries a chunk gets before the coordinator plays it (<= 0:
	// DefaultMaxDeliver). See queue.go.
	AckWait    time.Duration
	MaxDeliver int
	Log        zerolog.Logger
}

// DefaultSilence is Config.Silence's default: many heartbeats (DefaultBeat) long.
const DefaultSilence = 3 * time.Second

// DefaultChunkEpisodes is Config.ChunkEpisodes's default.
const DefaultChunkEpisodes = 16

// CredentialsFile is the workers' shared credentials file under Config.Dir with an external
// server (whose URL's account is everyone's).
const CredentialsFile = "worker.creds"

// DefaultVerifyShare is Config.VerifyShare's default: one chunk in ten is played twice. It costs
// a tenth more computation and catches a worker that forges k chunks with probability
// 1 - 0.9^k (65% for 10, 99.5% for 50); caught, all its chunks are played again.
const DefaultVerifyShare = 0.1

// NoWorkerCreds is Config.WorkerCreds for no credential files (spawned workers only).
const NoWorkerCreds = -1

// coordinatorName names the coordinator where a chunk's result is attributed (it plays a chunk
// itself to break a tie, retry a failed one or check one no other worker can).
const coordinatorName = "coordinator"

// Coordinator hands a command's episodes to workers (see the package doc). Play (the kinds'
// Run and Audit) may be called one after the other (a sweep's points); Close ends the session.
type Coordinator struct {
	cfg  Config
	log  zerolog.Logger
	srv  *server
	conn *bus.Conn
	subs []*bus.Subscription
	// WorkerCommand is the command to run on another host to join (no secret in it).
	WorkerCommand string
	credentials   string // the first worker's file (the command's)
	creds         *credentials
	spawnCreds    []string // the file of each spawned worker
	workerURL     string
	tmpDir        string
	privDir       string // the spawned workers' credentials

	events          chan func(*scheduler)
	closing, closed chan struct{}
	ended           atomic.Bool
	closeOnce       sync.Once
	looping         bool // the scheduler's loop runs (Close waits for it)

	mu      sync.Mutex
	jobs    map[string]*Job      // served on SubjectJob until retired
	banned  map[string]bool      // quarantined workers: served nothing
	beats   map[string]time.Time // each worker's last heartbeat
	over    map[string]bool      // workers told the coordinator is over
	session string
	nextJob int

	rep   collector
	dur   *durable // the journal (Config.Durable), nil without
	wq    *queue   // the work queues of a durable farm (queue.go), nil without
	procs *spawned
	local chan struct{} // a token while the coordinator plays a chunk itself (one at a time)
	// drawn, when set (tests), hears each draw of whether a chunk's first answer is checked.
	drawn func(job string, chunk int, checked bool)
}

// Start starts the coordinator's server (or connects to the external one), writes the workers'
// credentials, subscribes the protocol's subjects and spawns the local workers.
func Start(ctx context.Context, cfg Config) (*Coordinator, error) {
	if cfg.Silence <= 0 {
		cfg.Silence = DefaultSilence
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = cfg.Silence
	}
	if cfg.MaxDeliver <= 0 {
		cfg.MaxDeliver = DefaultMaxDeliver
	}
	if cfg.ChunkEpisodes <= 0 {
		cfg.ChunkEpisodes = DefaultChunkEpisodes
	}
	switch {
	case cfg.VerifyShare == 0:
		cfg.VerifyShare = DefaultVerifyShare
	case cfg.VerifyShare < 0:
		cfg.VerifyShare = 0
	case cfg.VerifyShare > 1:
		return nil, fmt.Errorf("farm: verify share %g: want 0..1", cfg.VerifyShare)
	}
	switch {
	case cfg.WorkerCreds == 0:
		cfg.WorkerCreds = DefaultWorkerCreds
	case cfg.WorkerCreds < 0:
		cfg.WorkerCreds = 0
	}
	c := &Coordinator{cfg: cfg, log: cfg.Log, events: make(chan func(*scheduler), 1024),
		closing: make(chan struct{}), closed: make(chan struct{}), jobs: map[string]*Job{}, banned: map[string]bool{}, beats: map[string]time.Time{}, over: map[string]bool{},
		local: make(chan struct{}, 1)}
	c.session = randomID()
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	var err error
	if err := c.prepareDurable(); err != nil {
		return nil, err
	}
	if c.creds, err = newCredentials(cfg.WorkerCreds, cfg.Spawn, c.dur != nil, c.keptDir()); err != nil {
		return nil, err
	}
	coord, shared, err := c.startServer()
	if err != nil {
		return nil, err
	}
	if c.conn, err = bus.Connect(c.srv.URL, "dpsim-farm-coordinator", bus.WithUser(coord.Name, coord.Password), bus.WithTLS(c.srv.TLS)); err != nil {
		return nil, err
	}
	if err := c.startDurable(ctx); err != nil {
		return nil, err
	}
	if err := c.writeCredentials(shared); err != nil {
		return nil, err
	}
	if err := c.subscribe(); err != nil {
		return nil, err
	}
	if c.wq != nil {
		if err := c.consume(); err != nil {
			return nil, err
		}
	}
	go c.loop()
	c.looping = true
	if c.procs, err = c.spawn(ctx); err != nil {
		return nil, err
	}
	c.rep.r.Server, c.rep.r.Credentials, c.rep.r.Spawned = c.workerURL, c.credentials, cfg.Spawn
	c.rep.r.CredentialsFiles, c.rep.r.VerifyShare = c.creds.pool, cfg.VerifyShare
	ok = true
	return c, nil
}

// prepareDurable opens the durable farm's directory (Config.Durable): its manifest, and the
// session its jobs are named by.
func (c *Coordinator) prepareDurable() error {
	if c.cfg.Durable == "" {
		return nil
	}
	if c.cfg.URL != "" {
		return errors.New("farm: --dispatch-durable keeps its journal in the embedded server: not with an external server (--nats-url)")
	}
	var err error
	if c.dur, err = openDurable(c.cfg.Durable, c.cfg.Scenario); err != nil {
		return err
	}
	c.session, err = c.dur.session(c.session)
	return err
}

// startDurable opens the durable farm's journal and work queues on the coordinator's connection.
func (c *Coordinator) startDurable(ctx context.Context) error {
	if c.dur == nil {
		return nil
	}
	if err := c.dur.open(c.conn); err != nil {
		return err
	}
	c.rep.r.Journal = c.cfg.Durable
	qctx, cancel := context.WithTimeout(ctx, journalTimeout)
	defer cancel()
	var err error
	c.wq, err = openQueue(qctx, c.conn, c.cfg.Durable, c.cfg.AckWait, c.cfg.MaxDeliver)
	return err
}

// startServer starts the embedded server with an account for the coordinator and one for each
// worker (the pool's and the spawned ones'), each allowed only its side of the protocol, or
// prepares the external server's: its URL's account is everyone's (shared, not nil).
func (c *Coordinator) startServer() (coord bus.User, shared *bus.User, err error) {
	pub, sub := []string{inboxes}, []string{subjectPrefix + ">"}
	if c.dur != nil { // the journal and the work queues: JetStream's API, their subjects, their replies and advisories
		pub = append(pub, bus.JournalAPI, journalPrefix+">", queueSubject, "$JS.ACK."+answerStream+"."+answerConsumer+".>")
		sub = append(sub, inboxes, bus.MaxDeliveries(queueStream, queueConsumer))
	}
	if coord, err = bus.NewUser("dpsim-farm-coordinator", pub, sub); err != nil {
		return
	}
	sc := bus.EmbeddedOptions{Users: append([]bus.User{coord}, c.creds.users...)}
	if c.dur != nil {
		sc.JetStream, sc.StoreDir = true, c.dur.dir
	}
	if c.cfg.Listen != "" {
		host, port, err := net.SplitHostPort(c.cfg.Listen)
		if err != nil {
			return coord, nil, fmt.Errorf("farm: listen address %q: %w", c.cfg.Listen, err)
		}
		sc.Host = host
		if _, err := fmt.Sscan(port, &sc.Port); err != nil {
			return coord, nil, fmt.Errorf("farm: listen address %q: port: %w", c.cfg.Listen, err)
		}
		if !isLoopback(host) {
			c.log.Warn().Str("listen", c.cfg.Listen).Msg("workers connect over plain TCP: their credentials and jobs (scenario, seed) cross the network in clear; use a trusted network")
		}
	}
	if c.srv, err = startServer(c.cfg.URL, sc); err != nil {
		return coord, nil, err
	}
	c.workerURL = advertised(c.srv.URL, sc.Host)
	if c.cfg.URL != "" { // an external server: its URL's account is everyone's
		clean, user, pass := bus.SplitURL(c.cfg.URL)
		c.srv.URL, c.workerURL = clean, clean
		coord = bus.User{Name: user, Password: pass}
		return coord, &coord, nil
	}
	return coord, nil, nil
}

// writeCredentials writes the workers' credential files (the pool's under Dir/workers, the
// spawned workers' in a private directory; with an external server, its shared account in
// Dir/worker.creds) and composes the command that joins from another host.
func (c *Coordinator) writeCredentials(shared *bus.User) error {
	dir := c.cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "dpsim-farm-")
		if err != nil {
			return err
		}
		c.tmpDir, dir = tmp, tmp
	}
	priv, err := os.MkdirTemp("", "dpsim-farm-local-")
	if err != nil {
		return err
	}
	c.privDir = priv
	if shared != nil {
		c.credentials = filepath.Join(dir, CredentialsFile)
		if err := bus.WriteCredentials(c.credentials, bus.Credentials{User: shared.Name, Password: shared.Password}); err != nil {
			return fmt.Errorf("farm: workers' credentials: %w", err)
		}
		c.creds.pool = []string{c.credentials}
		for range c.cfg.Spawn {
			c.spawnCreds = append(c.spawnCreds, c.credentials)
		}
		c.WorkerCommand = fmt.Sprintf("dpsim worker --server %s --creds %s", c.workerURL, c.credentials)
		return nil
	}
	if err := c.creds.write(dir, priv); err != nil {
		return err
	}
	removeStale(dir, c.creds.pool)
	c.spawnCreds = c.creds.local
	c.WorkerCommand = "(none: no credential files were written, --worker-creds 0; only the spawned workers play)"
	if len(c.creds.pool) > 0 {
		c.credentials = c.creds.pool[0]
		c.WorkerCommand = fmt.Sprintf("dpsim worker --server %s --creds %s", c.workerURL, c.credentials)
		if n := len(c.creds.pool); n > 1 {
			c.WorkerCommand += fmt.Sprintf("   (one file per worker: w2.creds .. w%d.creds beside it for the next ones)", n)
		}
	}
	return nil
}

// subscribe serves the protocol's subjects (every worker's: dpsim.farm.<verb>.*): each request
// becomes an event of the scheduler's loop with its sender taken from the subject, except the
// jobs, answered at once from the table.
func (c *Coordinator) subscribe() error {
	handlers := map[string]func(*bus.Request){
		verbNext: func(r *bus.Request) {
			if c.ended.Load() || c.isBanned(sender(r.Subject)) {
				c.told(sender(r.Subject))
				if data, err := Encode(&assignment{Over: true}); err == nil {
					_ = r.Respond(data)
				}
				return
			}
			c.do(func(s *scheduler) { s.next(r) })
		},
		verbAnswer: func(r *bus.Request) { c.do(func(s *scheduler) { s.answer(request{r}) }) },
		verbBeat: func(r *bus.Request) {
			var b beat
			c.heard(sender(r.Subject))
			if Decode(r.Data, &b) == nil {
				c.do(func(s *scheduler) { s.beat(sender(r.Subject), &b) })
			}
		},
		verbJob: c.serveJob,
	}
	if c.wq != nil { // the answers are stored in the answer queue: consume takes them
		delete(handlers, verbAnswer)
	}
	for verb, h := range handlers {
		sub, err := c.conn.Serve(Subject(verb, "*"), "", h)
		if err != nil {
			return err
		}
		c.subs = append(c.subs, sub)
	}
	return c.conn.Flush(5 * time.Second)
}

// serveJob answers a worker's request for a job's description (a quarantined worker gets none).
func (c *Coordinator) serveJob(r *bus.Request) {
	c.mu.Lock()
	j := c.jobs[string(r.Data)]
	if c.banned[sender(r.Subject)] {
		j = nil
	}
	c.mu.Unlock()
	if j == nil {
		_ = r.Respond(nil) // the job is over: the worker's answer would be a duplicate anyway
		return
	}
	if data, err := Encode(j); err == nil {
		_ = r.Respond(data)
	}
}

// heard records a heartbeat of worker id.
func (c *Coordinator) heard(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats[id] = time.Now()
}

// told records that worker id was told the coordinator is over.
func (c *Coordinator) told(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.over[id] = true
}

// farewell lets the workers of a durable farm started elsewhere hear that the coordinator is
// over before its server goes: they pull from the work queue and ask the coordinator only
// when no chunk came for pullWait, so Close waits - at most that long and a silence - until
// every one heard of within a silence asked (then it exits 0 instead of losing its server).
// The spawned workers are stopped anyway.
func (c *Coordinator) farewell() {
	if c.wq == nil {
		return
	}
	for deadline := time.Now().Add(pullWait + c.cfg.Silence); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.allTold() {
			return
		}
	}
}

func (c *Coordinator) allTold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.beats {
		if !strings.HasPrefix(id, "local-") && !c.banned[id] && !c.over[id] && time.Since(t) < c.cfg.Silence {
			return false
		}
	}
	return true
}

// isBanned reports whether worker id was quarantined.
func (c *Coordinator) isBanned(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.banned[id]
}

// ban stops serving worker id and revokes its account at the embedded server (its connection is
// closed, and it cannot come back); with an external server its messages are ignored only.
func (c *Coordinator) ban(id string) {
	c.mu.Lock()
	c.banned[id] = true
	c.mu.Unlock()
	if c.srv == nil || c.srv.Embedded == nil || c.cfg.URL != "" {
		return
	}
	go func() {
		if err := c.srv.Embedded.RemoveUser(WorkerUserPrefix + id); err != nil {
			c.log.Warn().Err(err).Str("worker", id).Msg("could not revoke a quarantined worker's account (its messages are ignored)")
		}
	}()
}

// do hands f to the scheduler's loop (dropped once the coordinator is closed).
func (c *Coordinator) do(f func(*scheduler)) {
	select {
	case c.events <- f:
	case <-c.closed:
	}
}

// newJob returns a job of kind for point, with its id; play serves it to the workers once it is
// complete (a worker that fetched it earlier would see it half filled in).
func (c *Coordinator) newJob(kind string, point int) *Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextJob++
	return &Job{ID: fmt.Sprintf("%s-%d", c.session, c.nextJob), Kind: kind, Scenario: c.cfg.Scenario, Source: c.cfg.Source, Point: point, seq: c.nextJob}
}

// serve serves job j to the workers until it is retired.
func (c *Coordinator) serve(j *Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs[j.ID] = j
}

// retire stops serving a finished job's description.
func (c *Coordinator) retire(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.jobs, id)
}

// play serves job j and runs the chunks of w through the workers (Play).
func (c *Coordinator) play(ctx context.Context, j *Job, w Work) ([]*answer, error) {
	js := newJobState(j, w)
	if c.dur != nil {
		if err := c.resume(js, w); err != nil {
			return nil, err
		}
	}
	c.serve(j)
	c.do(func(s *scheduler) { s.submit(js) })
	select {
	case <-js.finish:
	case <-ctx.Done():
		c.do(func(s *scheduler) { s.fail(js, context.Cause(ctx)) })
		select {
		case <-js.finish:
		case <-c.closed:
			return nil, fmt.Errorf("farm: the coordinator closed during job %s", j.ID)
		}
	case <-c.closed:
		return nil, fmt.Errorf("farm: the coordinator closed during job %s", j.ID)
	}
	return js.results, js.err
}

// ChunkEpisodes is the episodes of a run chunk (Config.ChunkEpisodes, defaulted).
func (c *Coordinator) ChunkEpisodes() int { return c.cfg.ChunkEpisodes }

// Report returns what the dispatch did so far.
func (c *Coordinator) Report() *record.Dispatch { return c.rep.snapshot() }

// Close tells the workers the session is over, stops the spawned ones, the connection and the
// embedded server, and removes the temporary credentials.
func (c *Coordinator) Close() {
	c.closeOnce.Do(func() {
		c.ended.Store(true)
		c.farewell()
		if c.looping {
			close(c.closing)
			<-c.closed
		}
		if c.wq != nil && c.wq.stop != nil {
			c.wq.stop()
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
		if c.privDir != "" {
			_ = os.RemoveAll(c.privDir)
		}
	})
}

// server is where the coordinator and its workers meet: the embedded server, or the external
// one (Embedded nil).
type server struct {
	URL      string        // what the workers connect to (without credentials)
	Embedded *bus.Embedded // nil with an external server
	TLS      bus.TLSFiles  // what the coordinator connects with (zero: plain TCP)
}

// startServer starts the embedded server with opts (its accounts only; plain TCP), or prepares
// the connection to the external server url (its accounts are its own: opts unused).
func startServer(url string, opts bus.EmbeddedOptions) (*server, error) {
	if url != "" {
		clean, _, _ := bus.SplitURL(url)
		return &server{URL: clean}, nil
	}
	e, err := bus.StartEmbedded(opts)
	if err != nil {
		return nil, err
	}
	return &server{URL: e.URL(), Embedded: e}, nil
}

// Close stops the embedded server (nothing for an external one).
func (s *server) Close() {
	if s.Embedded != nil {
		s.Embedded.Shutdown()
	}
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
