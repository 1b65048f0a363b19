// Command outsidecloud is a cloud controller written the way an outside implementer would
// write one: from the protocol (go doc github.com/dpsim/dpsim/internal/launch,
// pkg/contract, pkg/wire/message.go), talking to NATS with github.com/nats-io/nats.go
// directly, with none of dpsim's role or bus connection code. Only the controller's
// arithmetic (pkg/sim.Controller, eq. (24)) and the plan file reader (pkg/plan) are
// borrowed, so that a working run gives the Go cloud's numbers.
//
// It is a test program (testdata: not built by go build ./...): the launcher's tests start
// it in place of `dpsim cloud`, with the same arguments, and break it on purpose with
// -break MODE (or $OUTSIDE_BREAK) to check that the launcher names the role and the reason
// and never ends ok with numbers computed from messages that were dropped:
//
//	notrace    writes no trace file (ctl.done still says where the next episode begins: 0)
//	noresult   writes no result file and publishes no ctl.result (exits 0 after ctl.stop)
//	nolinks    the result has no "links" (the per-link counters)
//	nokind     the data messages (u) carry no "kind" field
//	wrongstep  every u carries step+1
//	nan        the u values are NaN, written as the literal NaN (as Python's json.dumps does:
//	           not JSON)
//	inf        the u values are 1e999, which parses as +Inf (valid JSON, not finite)
//	digest     ctl.ready carries a wrong plan digest
//	forbidden  u is published on the plant's yhat subject, which the cloud may not publish on
//	dropall    every u names another run: its receivers drop all of them (as "run")
//	noheader   ignores the Dpsim-Episodes header: a ctl.episodes of several episodes is played
//	           as its first episode alone, and a yhat carrying several episodes' values is
//	           dropped as of the wrong dimension (dpsim run --inflight K > 1)
//	wrongpid   ctl.ready and ctl.done carry the pid of no process
//	badresult  the result (file and ctl.result) says version 2
//	failstart  exits 1 at once, after a Node.js-like stack trace whose last line is its version
//	late       every u(t) is published one step late: after yhat(t+1) came (the last at the
//	           episode's end)
//
// The trace always records what the controller computed: a broken wire is the point.
//
// Supported: lockstep, --encoding json, one episode at a time (a ctl.episode of kind
// "episodes" with a count above 1 - dpsim run --inflight K > 1 - is refused with an error),
// scenarios without link faults or crashes, no signing.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
)

var breakModes = map[string]bool{
	"": true, "notrace": true, "noresult": true, "nolinks": true, "nokind": true, "wrongstep": true,
	"nan": true, "inf": true, "digest": true, "forbidden": true, "dropall": true, "noheader": true, "wrongpid": true,
	"badresult": true, "failstart": true, "late": true,
}

type config struct {
	natsURL, run, planPath, out, mode, encoding, logLevel, credentials string
	point, id, parentPID                                               int
	timeout, idleTimeout, period                                       time.Duration
	faultSeed, keepEpisodes, signKeys, tlsCA, tlsCert, tlsKey          string
	brk                                                                string
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "outsidecloud: "+format+"\n", args...)
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("outsidecloud", flag.ContinueOnError)
	c := &config{}
	fs.StringVar(&c.natsURL, "nats-url", os.Getenv("NATS_URL"), "NATS server URL")
	fs.StringVar(&c.run, "run", "", "run id")
	fs.StringVar(&c.planPath, "plan", "", "plan file")
	fs.IntVar(&c.point, "point", 0, "sweep point")
	fs.StringVar(&c.out, "out", ".", "output directory")
	fs.StringVar(&c.mode, "mode", "lockstep", "time mode (lockstep only)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "longest wait for a step's yhat")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "longest wait for the next ctl.episode")
	fs.DurationVar(&c.period, "period", 0, "realtime period (unsupported)")
	fs.StringVar(&c.logLevel, "log-level", "info", "ignored")
	fs.StringVar(&c.encoding, "encoding", "json", "wire encoding (json only)")
	fs.IntVar(&c.parentPID, "parent-pid", 0, "exit when the parent is no longer this pid")
	fs.StringVar(&c.faultSeed, "fault-seed", "", "ignored: no link faults supported")
	fs.StringVar(&c.keepEpisodes, "keep-episodes", "", "ignored: every episode is kept")
	fs.StringVar(&c.signKeys, "sign-keys", "", "unsupported")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA file of a TLS server")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "client certificate (mutual TLS)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "client key (mutual TLS)")
	fs.IntVar(&c.id, "id", 0, "loop id")
	fs.StringVar(&c.credentials, "credentials", "", "credentials file (DPSIM_NATS_USER=..., DPSIM_NATS_PASSWORD=...)")
	fs.StringVar(&c.brk, "break", os.Getenv("OUTSIDE_BREAK"), "break the protocol on purpose: notrace, noresult, nolinks, nokind, wrongstep, nan, inf, digest, forbidden, dropall, noheader, wrongpid, badresult, failstart, late")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !breakModes[c.brk]:
		return nil, fmt.Errorf("-break %q: unknown mode", c.brk)
	case c.run == "" || c.planPath == "" || c.natsURL == "":
		return nil, errors.New("--run, --plan and --nats-url are required")
	case c.mode != "lockstep":
		return nil, fmt.Errorf("--mode %s: only lockstep is supported", c.mode)
	case c.encoding != "json":
		return nil, fmt.Errorf("--encoding %s: only json is supported", c.encoding)
	case c.signKeys != "":
		return nil, errors.New("--sign-keys: signing is not supported")
	}
	return c, nil
}

// credentials reads the --credentials file, else the environment the launcher hands its children.
func (c *config) userPassword() (user, password string, err error) {
	user, password = os.Getenv("DPSIM_NATS_USER"), os.Getenv("DPSIM_NATS_PASSWORD")
	if c.credentials == "" {
		return user, password, nil
	}
	data, err := os.ReadFile(c.credentials)
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "DPSIM_NATS_USER":
			user = v
		case "DPSIM_NATS_PASSWORD":
			password = v
		}
	}
	return user, password, nil
}

// readPlan reads the plan file (waiting for it a while: an attached process may start first)
// and its digest: the first 48 bits of the SHA-256 of its bytes (plan.FileDigest).
func readPlan(path string) (*plan.Plan, uint64, error) {
	deadline := time.Now().Add(20 * time.Second)
	data, err := os.ReadFile(path)
	for errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, 0, err
	}
	p, err := plan.ParseFile(data)
	if err != nil {
		return nil, 0, err
	}
	return p, plan.FileDigest(data), nil
}

// msg is the bus message schema, version 1 (pkg/wire/message.go).
type msg struct {
	V    int       `json:"v"`
	Run  string    `json:"run"`
	Ep   int       `json:"ep"`
	Step int       `json:"step"`
	From string    `json:"from"`
	Sent int64     `json:"sent"`
	Kind string    `json:"kind"`
	Vals []float64 `json:"vals"`
}

// counters is the JSON of a result's invalid / ctl_invalid.
type counters struct {
	Received uint64            `json:"received"`
	Accepted uint64            `json:"accepted"`
	Dropped  uint64            `json:"dropped"`
	ByReason map[string]uint64 `json:"dropped_by_reason,omitempty"`
}

func (c *counters) drop(reason string) {
	if c.ByReason == nil {
		c.ByReason = map[string]uint64{}
	}
	c.ByReason[reason]++
	c.Dropped++
}

func (c *counters) final() counters {
	out := *c
	if out.Received > out.Dropped {
		out.Accepted = out.Received - out.Dropped
	}
	return out
}

type link struct {
	Link        string `json:"link"`
	Sent        uint64 `json:"sent"`
	Dropped     uint64 `json:"dropped"`
	Duplicated  uint64 `json:"duplicated"`
	Delayed     uint64 `json:"delayed"`
	Reordered   uint64 `json:"reordered"`
	Expired     uint64 `json:"expired"`
	Delivered   uint64 `json:"delivered"`
	Late        uint64 `json:"late"`
	DupReceived uint64 `json:"dup_received"`
	Gaps        uint64 `json:"gaps"`
}

type timing struct {
	Mode          string  `json:"mode"`
	Steps         int     `json:"steps"`
	ElapsedNS     int64   `json:"elapsed_ns"`
	StepsPerSec   float64 `json:"steps_per_sec"`
	Missed        int     `json:"missed"`
	StepTimeoutNS int64   `json:"step_timeout_ns"`
}

// result is the process result (contract.ProcessResult's JSON, the fields this program knows).
type result struct {
	V             int      `json:"v"`
	Run           string   `json:"run"`
	Role          string   `json:"role"`
	ID            int      `json:"id"`
	Name          string   `json:"name"`
	PID           int      `json:"pid"`
	Point         int      `json:"point"`
	Status        string   `json:"status"`
	Error         string   `json:"error,omitempty"`
	Episodes      int      `json:"episodes"`
	Steps         int      `json:"steps"`
	BusySeconds   float64  `json:"busy_seconds"`
	StepsPerSec   float64  `json:"steps_per_sec"`
	Invalid       counters `json:"invalid"`
	CtlInvalid    counters `json:"ctl_invalid"`
	Timing        timing   `json:"timing"`
	PeakRSSBytes  int64    `json:"peak_rss_bytes"`
	PeakRSSSource string   `json:"peak_rss_source,omitempty"`
	TraceFile     string   `json:"trace_file,omitempty"`
	Records       int      `json:"records"`
	Unexpected    uint64   `json:"unexpected"`
	Stale         uint64   `json:"stale"`
	Links         []link   `json:"links,omitempty"`
}

// record is the cloud's part of a trace line (pkg/trace ControlRecord): u(t) and the xhat(t)
// it was computed from.
type record struct {
	Episode int       `json:"episode"`
	Step    int       `json:"step"`
	U       []float64 `json:"u,omitempty"`
	Xhat    []float64 `json:"xhat,omitempty"`
}

var errStopped = errors.New("stopped")

type cloud struct {
	cfg    *config
	brk    string
	p      *plan.Plan
	digest uint64
	ctl    *sim.Controller
	nc     *nats.Conn
	in     chan *nats.Msg
	stop   chan string // why the process stops other than by ctl.stop
	name   string      // cloud-<id>
	self   string      // cloud.<id>
	plant  string      // plant.<id>
	subj   struct{ yhat, u, forbidden, episode, stopS, ready, done, result string }

	trace     *os.File
	tw        *bufio.Writer
	traceNext int64

	pid     int // the pid its ctl messages carry (its own, but for -break wrongpid)
	lastEp  int
	ready   []byte
	pending map[[2]int][]float64 // yhat of a later step or episode that came early: (ep, step)
	data    counters
	ctlC    counters
	res     result
	missed  int
	stopped bool // ctl.stop came
	linkU   uint64
	linkY   link
}

func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		logf("%v", err)
		return 2
	}
	if cfg.brk == "failstart" { // what node prints for an uncaught error: the version comes last
		fmt.Fprintln(os.Stderr, "/opt/cloud/cloud.js:12\n    throw new Error(`cannot connect to ${url}`);\n    ^\n\nError: cannot connect to NATS: ECONNREFUSED\n    at connect (/opt/cloud/cloud.js:12:11)\n    at Object.<anonymous> (/opt/cloud/cloud.js:40:1)\n\nNode.js v20.20.2")
		return 1
	}
	p, digest, err := readPlan(cfg.planPath)
	if err != nil {
		logf("--plan: %v", err)
		return 1
	}
	if p.System == nil {
		logf("the plan is not a cloud-control one")
		return 1
	}
	if p.Scenario.Faults.Active() || len(p.Scenario.Faults.Crashes) > 0 {
		logf("scenario %s has link faults or crashes: not supported", p.Scenario.Name)
		return 1
	}
	ctl, err := sim.NewController(p)
	if err != nil {
		logf("%v", err)
		return 1
	}
	c := &cloud{cfg: cfg, brk: cfg.brk, p: p, digest: digest, ctl: ctl, lastEp: -1, pending: map[[2]int][]float64{},
		stop: make(chan string, 4), in: make(chan *nats.Msg, 1<<14)}
	c.name, c.self, c.plant = "cloud-"+strconv.Itoa(cfg.id), "cloud."+strconv.Itoa(cfg.id), "plant."+strconv.Itoa(cfg.id)
	base := "dpsim." + cfg.run + "."
	c.subj.yhat = base + c.plant + ".yhat"
	c.subj.u = base + c.self + ".u"
	c.subj.episode = base + "ctl.episode"
	c.subj.stopS = base + "ctl.stop"
	c.subj.ready = base + "ctl.ready." + c.self
	c.subj.done = base + "ctl.done." + c.self
	c.subj.result = base + "ctl.result." + c.self
	if c.brk == "forbidden" {
		c.subj.u = c.subj.yhat // the plant's subject: the server refuses it
	}
	c.pid = os.Getpid()
	if c.brk == "wrongpid" {
		c.pid = noProcess()
	}
	c.res = result{V: 1, Run: cfg.run, Role: "cloud", ID: cfg.id, Name: c.name, PID: os.Getpid(), Point: cfg.point}
	c.linkY = link{Link: c.plant + "->" + c.self}
	if c.brk != "" {
		logf("breaking the protocol on purpose: %s", c.brk)
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		logf("--out: %v", err)
		return 1
	}
	if c.brk != "notrace" {
		if c.trace, err = os.Create(filepath.Join(cfg.out, c.name+".trace.jsonl")); err != nil {
			logf("trace file: %v", err)
			return 1
		}
		c.tw = bufio.NewWriterSize(c.trace, 1<<16)
		c.res.TraceFile = c.name + ".trace.jsonl"
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() { s := <-sigs; c.stop <- "signal " + s.String() }()
	if cfg.parentPID > 0 {
		// The launcher may be the parent or, through a shell that does not exec the command
		// (sh -c 'COMMAND "$@"'), the grandparent: watch that pid and the parent itself.
		ppid := os.Getppid()
		go func() {
			for range time.Tick(200 * time.Millisecond) {
				if syscall.Kill(cfg.parentPID, 0) == syscall.ESRCH || os.Getppid() != ppid {
					c.stop <- fmt.Sprintf("parent process %d is gone", cfg.parentPID)
					return
				}
			}
		}()
	}
	if err := c.connect(); err != nil {
		logf("connect: %v", err)
		return 1
	}
	runErr := c.serve()
	return c.finish(runErr)
}

func (c *cloud) connect() error {
	user, password, err := c.cfg.userPassword()
	if err != nil {
		return fmt.Errorf("--credentials: %w", err)
	}
	opts := []nats.Option{nats.Name("outsidecloud-" + c.name), nats.MaxReconnects(40), nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { logf("nats: %v", err) })}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, password))
	}
	if c.cfg.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.cfg.tlsCA))
	}
	if c.cfg.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.cfg.tlsCert, c.cfg.tlsKey))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.nc, err = nats.Connect(c.cfg.natsURL, opts...)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	// One channel for every subscription: the messages come in the order of the connection.
	for _, s := range []string{c.subj.yhat, c.subj.episode, c.subj.stopS} {
		if _, err := c.nc.ChanSubscribe(s, c.in); err != nil {
			return err
		}
	}
	return c.nc.FlushTimeout(c.cfg.timeout + time.Second)
}

// serve announces ready (repeated every 500 ms until the first episode), then plays the
// episodes ctl.episode starts until ctl.stop.
func (c *cloud) serve() error {
	digest := c.digest
	if c.brk == "digest" {
		digest ^= 0x5a5a5a // another plan file's
	}
	c.ready = c.encode("ready", 0, 0, []float64{float64(c.pid), float64(digest)}, true)
	if err := c.nc.Publish(c.subj.ready, c.ready); err != nil {
		return err
	}
	logf("ready: run %s, %d steps, plan digest %012x", c.cfg.run, c.p.Steps, digest)
	again := time.NewTicker(500 * time.Millisecond)
	defer again.Stop()
	idle := time.NewTimer(c.cfg.idleTimeout)
	defer idle.Stop()
	for {
		select {
		case <-again.C:
			if c.res.Episodes == 0 {
				_ = c.nc.Publish(c.subj.ready, c.ready)
			}
		case why := <-c.stop:
			return errors.New("interrupted: " + why)
		case <-idle.C:
			return fmt.Errorf("no ctl.episode or ctl.stop for %v (--idle-timeout)", c.cfg.idleTimeout)
		case m := <-c.in:
			ep, start, err := c.handle(m, -1, -1)
			if err != nil {
				return err
			}
			if c.stopped {
				return nil
			}
			if start {
				if err := c.episode(ep); errors.Is(err, errStopped) {
					return nil
				} else if err != nil {
					return err
				}
				idle.Reset(c.cfg.idleTimeout)
			}
		}
	}
}

// handle files one received message: ctl.stop, a ctl.episode (start: episode ep begins; curEp
// is the episode in progress, -1: none) or a yhat (kept in pending when valid).
func (c *cloud) handle(m *nats.Msg, curEp, curStep int) (ep int, start bool, err error) {
	var v msg
	switch m.Subject {
	case c.subj.stopS, c.subj.episode:
		c.ctlC.Received++
		if json.Unmarshal(m.Data, &v) != nil {
			c.ctlC.drop("decode")
			return 0, false, nil
		}
		if v.V != 1 || v.Run != c.cfg.run || v.From != "launcher.0" {
			c.ctlC.drop("sender")
			return 0, false, nil
		}
		if m.Subject == c.subj.stopS {
			c.stopped = true
			return 0, false, nil
		}
		switch v.Kind {
		case "episode", "episode-x0":
		case "episodes", "episodes-x0":
			if c.brk == "noheader" { // the count and the header ignored: one episode
				break
			}
			if len(v.Vals) != 1 || v.Vals[0] != 1 {
				return 0, false, fmt.Errorf("ctl.%s %d with %v episodes in flight: this cloud runs one episode at a time (dpsim run --inflight 1)", v.Kind, v.Ep, v.Vals)
			}
		default:
			c.ctlC.drop("kind")
			return 0, false, nil
		}
		if v.Ep <= c.lastEp || curEp >= 0 {
			c.ctlC.drop("episode")
			return 0, false, nil
		}
		c.lastEp = v.Ep
		return v.Ep, true, nil
	case c.subj.yhat:
		c.data.Received++
		if json.Unmarshal(m.Data, &v) != nil {
			c.data.drop("decode")
			return 0, false, nil
		}
		switch {
		case v.V != 1:
			c.data.drop("version")
		case v.Run != c.cfg.run:
			c.data.drop("run")
		case v.Ep < 0:
			c.data.drop("episode")
		case v.Step < 0 || v.Step >= c.p.Steps:
			c.data.drop("step")
		case len(v.Vals) != c.p.System.Ny():
			c.data.drop("dim")
		case !finite(v.Vals):
			c.data.drop("nonfinite")
		case v.From != c.plant:
			c.data.drop("sender")
		case v.Kind != "yhat":
			c.data.drop("kind")
		case v.Ep < curEp || (v.Ep == curEp && v.Step < curStep) || (curEp < 0 && v.Ep <= c.lastEp):
			c.res.Stale++ // for an episode or step this cloud finished
		case c.pending[[2]int{v.Ep, v.Step}] != nil:
			c.data.drop("duplicate")
			c.linkY.DupReceived++
		case len(c.pending) >= 4*c.p.Steps:
			c.data.drop("ahead")
		default:
			c.pending[[2]int{v.Ep, v.Step}] = v.Vals
		}
		return 0, false, nil
	}
	c.res.Unexpected++
	return 0, false, nil
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// episode plays episode ep: for t = 0..T-1, wait (at most --timeout) for yhat(t), else
// predict it as C xhat(t) (the missing-input rule), compute u(t), trace and publish it.
func (c *cloud) episode(ep int) error {
	start := time.Now()
	defer func() { c.res.BusySeconds += time.Since(start).Seconds() }()
	for k := range c.pending { // older than this episode: never used
		if k[0] < ep {
			delete(c.pending, k)
			c.res.Stale++
		}
	}
	T, ny, nu := c.p.Steps, c.p.System.Ny(), c.p.System.Nu()
	cm := c.p.System.C
	yhat, u := make([]float64, ny), make([]float64, nu)
	var held []byte // -break late: the u of the step before
	c.ctl.Begin(ep)
	for t := 0; t < T; t++ {
		got, err := c.await(ep, t)
		if err != nil {
			return err
		}
		if got != nil {
			copy(yhat, got)
			c.linkY.Delivered++
		} else { // missing: the observer's own prediction C xhat(t)
			xh := c.ctl.Next()
			r, k := cm.Dims()
			for i := 0; i < r; i++ {
				var s float64
				for j := 0; j < k; j++ {
					s += cm.At(i, j) * xh[j]
				}
				yhat[i] = s
			}
			c.missed++
		}
		c.ctl.Step(t, yhat, u)
		if c.tw != nil {
			line, err := json.Marshal(record{Episode: ep, Step: t, U: u, Xhat: c.ctl.Xhat()})
			if err != nil {
				return fmt.Errorf("trace: %w", err)
			}
			_, _ = c.tw.Write(append(line, '\n'))
			c.res.Records++
		}
		step, vals := t, u
		switch c.brk {
		case "wrongstep":
			step = t + 1
		case "nan":
			vals = []float64{math.NaN()}
		case "inf":
			vals = []float64{math.Inf(1)}
		}
		m := c.encode("u", ep, step, vals, c.brk != "nokind")
		if c.brk == "dropall" {
			m = []byte(strings.Replace(string(m), `"run":`+strconv.Quote(c.cfg.run), `"run":"not-this-run"`, 1))
		}
		if c.brk == "late" { // held until the next step's yhat came
			m, held = held, m
		}
		if m != nil {
			if err := c.nc.Publish(c.subj.u, m); err != nil {
				return err
			}
			c.linkU++
		}
	}
	if held != nil {
		if err := c.nc.Publish(c.subj.u, held); err != nil {
			return err
		}
		c.linkU++
	}
	if c.tw != nil {
		if err := c.tw.Flush(); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		end, err := c.trace.Seek(0, 1)
		if err != nil {
			return err
		}
		c.traceNext = end
	}
	c.res.Episodes++
	c.res.Steps += T
	done := c.encode("done", ep, 0, []float64{float64(T), 0, float64(c.pid), float64(c.traceNext)}, true)
	if err := c.nc.Publish(c.subj.done, done); err != nil {
		return err
	}
	return c.nc.FlushTimeout(c.cfg.timeout + time.Second)
}

// await returns yhat(t) of episode ep, or nil when it did not come within --timeout.
func (c *cloud) await(ep, t int) ([]float64, error) {
	key := [2]int{ep, t}
	wait := c.cfg.timeout
	if c.brk == "late" {
		// the plant's wait for the held u(t-1) must end first, whatever the machine's load: a
		// cloud that timed out too would publish on time, by chance
		wait = 40 * c.cfg.timeout
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if v := c.pending[key]; v != nil {
			delete(c.pending, key)
			return v, nil
		}
		select {
		case m := <-c.in:
			if _, _, err := c.handle(m, ep, t); err != nil {
				return nil, err
			}
			if c.stopped {
				return nil, errStopped
			}
		case why := <-c.stop:
			return nil, errors.New("interrupted: " + why)
		case <-deadline.C:
			return nil, nil
		}
	}
}

// encode writes a message of the bus schema by hand; the values as the shortest decimal
// that round-trips (strconv 'g', -1), NaN as the non-JSON literal NaN and +Inf as 1e999.
func (c *cloud) encode(kind string, ep, step int, vals []float64, withKind bool) []byte {
	b := []byte(`{"v":1,"run":`)
	b = strconv.AppendQuote(b, c.cfg.run)
	b = append(b, `,"ep":`...)
	b = strconv.AppendInt(b, int64(ep), 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, `,"from":`...)
	b = strconv.AppendQuote(b, c.self)
	b = append(b, `,"sent":`...)
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	if withKind {
		b = append(b, `,"kind":`...)
		b = strconv.AppendQuote(b, kind)
	}
	b = append(b, `,"vals":[`...)
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(v):
			b = append(b, "NaN"...)
		case math.IsInf(v, 1):
			b = append(b, "1e999"...)
		case math.IsInf(v, -1):
			b = append(b, "-1e999"...)
		default:
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	}
	return append(b, "]}"...)
}

// finish closes the trace, writes the result file, publishes it on ctl.result and drains the
// connection; it returns the exit code.
func (c *cloud) finish(runErr error) int {
	code := 0
	c.res.Status = "ok"
	if runErr != nil {
		c.res.Status, c.res.Error, code = "failed", runErr.Error(), 1
		if strings.HasPrefix(runErr.Error(), "interrupted") {
			c.res.Status = "interrupted"
		}
		logf("%v", runErr)
	}
	if c.tw != nil {
		_ = c.tw.Flush()
		_ = c.trace.Sync()
		_ = c.trace.Close()
	}
	if c.res.BusySeconds > 0 {
		c.res.StepsPerSec = float64(c.res.Steps) / c.res.BusySeconds
	}
	c.res.Invalid, c.res.CtlInvalid = c.data.final(), c.ctlC.final()
	c.res.Timing = timing{Mode: "lockstep", Steps: c.res.Steps, Missed: c.missed, StepTimeoutNS: int64(c.cfg.timeout),
		ElapsedNS: int64(c.res.BusySeconds * 1e9), StepsPerSec: c.res.StepsPerSec}
	c.res.PeakRSSBytes, c.res.PeakRSSSource = peakRSS()
	if c.brk != "nolinks" {
		// the cloud's u goes to the plant and the eavesdropper; yhat comes from the plant
		c.res.Links = []link{{Link: c.self + "->eavesdropper.0", Sent: c.linkU}, {Link: c.self + "->" + c.plant, Sent: c.linkU}, c.linkY}
		sort.Slice(c.res.Links, func(i, j int) bool { return c.res.Links[i].Link < c.res.Links[j].Link })
	}
	if c.brk == "badresult" {
		c.res.V = 2
	}
	data, err := json.MarshalIndent(&c.res, "", "  ")
	if err != nil {
		logf("result: %v", err)
		return 1
	}
	data = append(data, '\n')
	if c.brk != "noresult" {
		if err := os.WriteFile(filepath.Join(c.cfg.out, c.name+".result.json"), data, 0o644); err != nil {
			logf("result file: %v", err)
			code = 1
		}
		if c.nc != nil {
			_ = c.nc.Publish(c.subj.result, data)
		}
	}
	if c.nc != nil {
		_ = c.nc.FlushTimeout(2 * time.Second)
		_ = c.nc.Drain()
		for i := 0; i < 50 && !c.nc.IsClosed(); i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	logf("exit: status %s, %d episodes, %d steps, %d dropped", c.res.Status, c.res.Episodes, c.res.Steps, c.res.Invalid.Dropped)
	return code
}

// noProcess returns a pid no process has (for -break wrongpid).
func noProcess() int {
	for pid := 4_000_000; pid > 1; pid-- {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return pid
		}
	}
	return 1 << 30
}

// peakRSS reads VmHWM of /proc/self/status (Linux; 0 elsewhere).
func peakRSS() (int64, string) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && len(f) == 2 && f[1] == "kB" {
				return n * 1024, "VmHWM"
			}
		}
	}
	return 0, ""
}
