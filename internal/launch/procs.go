package launch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Proc is one child process.
type Proc struct {
	Role      endpoint.Role
	ID        int
	LastAgent int
	Name      string
	LogPath   string
	// Program is the user's command that plays this role (--role; "": dpsim's own).
	Program string

	cmd     *exec.Cmd
	pid     int // attach mode: the pid its ready carried
	logFile *os.File
	exited  chan struct{}
	state   *os.ProcessState
	waitErr error
	result  *contract.ProcessResult
	// resultErr is why its result file was refused (nil: none, or none refused)
	resultErr error
	// traceNext is where its next episode's records begin in its trace file: the TraceNext of
	// its last ctl.done (0 before the first).
	traceNext atomic.Int64
}

// PID returns the child's process id (attach mode, and a user's program: the pid its
// ctl.ready announced).
func (p *Proc) PID() int {
	if p.cmd == nil || p.cmd.Process == nil || p.pid != 0 { // p.pid: attached, or a --role program under sh
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

// ExitState returns the child's exit state once it exited (nil while it runs).
func (p *Proc) ExitState() *os.ProcessState {
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

// Failure describes how the child ended, or "" when it exited 0. Call it only after the
// child exited (or to describe one still running).
func (p *Proc) Failure() string {
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
	if p.LogPath != "" {
		msg += " (its log: " + p.LogPath + ")"
	}
	return msg
}

// who names p in an error: its name and pid, and the user's program that plays it (--role),
// which is what a user reading the error must fix.
func (p *Proc) who() string {
	if p.Program == "" {
		return fmt.Sprintf("%s (pid %d)", p.Name, p.PID())
	}
	return fmt.Sprintf("%s (pid %d; --role %s=%q)", p.Name, p.PID(), endpoint.Endpoint{Role: p.Role, ID: p.ID}, p.Program)
}

// plannedProcs lists the processes a plan needs.
func plannedProcs(p *plan.Plan, perProc int) []*Proc {
	var out []*Proc
	add := func(r endpoint.Role, id, last int) {
		out = append(out, &Proc{Role: r, ID: id, LastAgent: last, Name: contract.ProcName(r, id, last)})
	}
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		add(endpoint.Plant, 0, 0)
		add(endpoint.Cloud, 0, 0)
	case scenario.Consensus:
		if perProc < 1 {
			perProc = 1
		}
		for i := 0; i < p.Graph.N; i += perProc {
			add(endpoint.Agent, i, min(i+perProc, p.Graph.N)-1)
		}
	}
	add(endpoint.Eavesdropper, 0, 0)
	return out
}

// ProcessKeys returns the sender names ("plant.0", "agent.3") of the processes a plan needs
// with perProc agents per process.
func ProcessKeys(p *plan.Plan, perProc int) []string {
	var out []string
	for _, pr := range plannedProcs(p, perProc) {
		out = append(out, endpoint.Endpoint{Role: pr.Role, ID: pr.ID}.String())
	}
	return out
}

func (s *Session) args(p *Proc) []string {
	c := s.cfg
	url := c.URL
	for i, q := range s.procs { // spread over a cluster: process i prefers server i
		if q == p {
			url = bus.RotateURLs(c.URL, i)
		}
	}
	if px := s.faults.proxies[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]; px != nil {
		url = px.URL() // faults.proxies: this process reaches the server through toxiproxy
	}
	a := []string{p.Role.String(),
		"--nats-url", url, "--run", c.Run, "--plan", s.planPath(p), "--point", strconv.Itoa(c.Point),
		"--out", c.Dir, "--mode", c.Mode.String(), "--timeout", c.Timeout.String(),
		"--idle-timeout", (c.StartTimeout + c.Timeout + time.Minute).String(),
		"--log-level", c.LogLevel, "--encoding", c.Encoding, "--parent-pid", strconv.Itoa(os.Getpid())}
	if c.Period > 0 {
		a = append(a, "--period", c.Period.String())
	}
	if !c.KeepEpisodes.All() {
		a = append(a, "--keep-episodes", c.KeepEpisodes.String())
	}
	if s.keys.file != "" {
		a = append(a, "--sign-keys", s.keys.file)
	}
	for _, f := range []struct{ flag, path string }{{"--tls-ca", c.TLS.CA}, {"--tls-cert", c.TLS.Cert}, {"--tls-key", c.TLS.Key}} {
		if f.path != "" { // file names, not secrets
			a = append(a, f.flag, f.path)
		}
	}
	// Every process draws its own messages' faults from the same fault seed; a hash of the run
	// seed, so the cloud and the eavesdropper learn nothing of the noise from it.
	a = append(a, "--fault-seed", strconv.FormatUint(c.Seeds.Fault, 10))
	// The noise seed of the plant and the agents is in their plan files (writePlans), never
	// here: a command line is readable by every user of the machine (/proc/PID/cmdline).
	switch p.Role {
	case endpoint.Plant:
		a = append(a, "--id", strconv.Itoa(p.ID))
	case endpoint.Agent:
		a = append(a, "--agents", fmt.Sprintf("%d..%d", p.ID, p.LastAgent))
	case endpoint.Cloud:
		a = append(a, "--id", strconv.Itoa(p.ID))
	case endpoint.Eavesdropper: // no seed: the eavesdropper never learns the noise
		a = append(a, "--id", strconv.Itoa(p.ID), "--transcript="+strconv.FormatBool(c.Transcript))
	}
	if (p.Role == endpoint.Agent || p.Role == endpoint.Eavesdropper) && sim.NewBlocks(c.Plan, c.AgentsPerProcess).Batched() {
		a = append(a, "--batch", strconv.Itoa(c.AgentsPerProcess)) // one message per host per step
	}
	return a
}

func (s *Session) spawn(p *Proc) error { return s.spawnWith(p, false) }

// spawnWith starts p's process; resume restarts it after a crash (its log goes on, and it
// continues from its checkpoint).
func (s *Session) spawnWith(p *Proc, resume bool) error {
	p.LogPath = filepath.Join(s.cfg.Dir, contract.LogFile(p.Name))
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
	p.cmd = s.cfg.Programs.command(s.cfg.Exe, endpoint.Endpoint{Role: p.Role, ID: p.ID}.String(), args)
	p.Program = s.cfg.Programs[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = os.Environ()
	if s.cfg.GOMAXPROCS > 0 {
		p.cmd.Env = append(p.cmd.Env, "GOMAXPROCS="+strconv.Itoa(s.cfg.GOMAXPROCS))
	}
	if u, ok := s.cfg.Users[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]; ok {
		p.cmd.Env = append(p.cmd.Env, u.Env()...) // the credentials: never in argv
	}
	if seed, ok := s.keys.seeds[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]; ok {
		p.cmd.Env = append(p.cmd.Env, bus.EnvSignSeed+"="+seed) // the signing seed: never in argv
	}
	p.cmd.Env = append(p.cmd.Env, s.x0Env(p)...) // the curve seed that opens its x(0): never in argv
	s.ctl.mu.Lock()
	if s.launchTag == "" {
		s.launchTag, s.groups = newLaunchTag(), map[int]string{}
	}
	s.ctl.mu.Unlock()
	p.cmd.Env = append(p.cmd.Env, EnvLaunch+"="+s.launchTag+"/"+p.Name) // finds what it leaves behind (sweep)
	setProcAttr(p.cmd)
	p.exited = make(chan struct{})
	// Hold the lock over the start: a ready of this child is checked against its pid only
	// once the pid is recorded.
	s.ctl.mu.Lock()
	err = p.cmd.Start()
	if err == nil {
		s.ctl.pids[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()] = p.cmd.Process.Pid
		s.groups[p.cmd.Process.Pid] = p.Name // setProcAttr: the child leads its own group
	}
	s.ctl.mu.Unlock()
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
	plain := "" // the last plain line: what the program said last
	for i := len(lines) - 1; i >= 0; i-- {
		l := string(bytes.TrimSpace(lines[i]))
		if l == "" {
			continue
		}
		json := strings.HasPrefix(l, "{")
		switch {
		case json && strings.Contains(l, `"level":"error"`), !json && errorWords.MatchString(l):
			return clip(l)
		case !json && plain == "":
			plain = l
		}
	}
	return clip(plain)
}

// errorWords finds a plain log line that says what went wrong, in the words programs print
// ("Error: ...", "panic:", "Traceback", "fatal", "exception"): a program's last line may be
// something else (Node.js prints its version after the stack trace).
var errorWords = regexp.MustCompile(`(?i)(error|panic|fatal|exception|traceback|failed)`)

// clip shortens a log line for an error message.
func clip(l string) string {
	if len(l) > 400 {
		l = l[:400] + "..."
	}
	return l
}
