package auditcmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

type wireConfig struct {
	point, points int
	game          *audit.Game
	seed          uint64
	trials        int
	log           zerolog.Logger
	progress      func(done, total int)
	// inflight is the most trials kept in flight at once (--inflight; launch.NextGroup).
	inflight int
	// note, if set, receives the line the outputs carry on the episodes in flight.
	note func(string)
	// chunk, if set, receives the trials scored as the eavesdropper's trace grows (--ui).
	chunk func(*audit.Outcome)
	// trace is the eavesdropper's trace file (set by runWire).
	trace string
	// outcome, if set, receives what the processes were and did once they stopped: who played
	// each role (--role), the problems attributed to them, the degradation.
	outcome func(*wireRoles)
}

// runWire plays the game with the real processes over NATS (the wire engine).
//
// The launcher side (this process) is the challenger: it spawns the role processes of the point
// (internal/launch.StartSession: plant, cloud and eavesdropper, or every agent and the
// eavesdropper; the plant and agents get the run seed, the eavesdropper does not), and for trial
// e = 0 .. 2N-1 draws the secret bit audit.Bit(seed, e) and starts episode e with the chosen x(0)
// (Session.Episode), which travels on the private subject dpsim-challenger.<run>.x0 that only the
// plant and the agents subscribe to. The plant (agents) reseed their noise from the
// contract path of episode e, exactly as the fast engine. The eavesdropper process estimates x(0)
// from the data subjects only (it never receives the chosen x(0): that subject lies outside the dpsim.<run>.> it sniffs) and records its estimate at every step in its
// trace file; after the last episode the launcher reads the estimates of step T-1, scores them
// with the public pair and joins them with its secret bits. The trials are played in groups of
// up to --inflight episodes in flight (Session.Group, each episode's x(0) on the private line):
// the outcome does not depend on it.
func runWire(ctx context.Context, o *Options, c wireConfig) (*audit.Outcome, error) {
	g := c.game
	p := g.Plan
	var b [4]byte
	_, _ = rand.Read(b[:])
	runID := "audit" + hex.EncodeToString(b[:])
	srv, err := launch.StartServer(launch.ServerConfig{URL: bus.ResolveURL(o.NATSURL), Plans: []*plan.Plan{p}, RunIDs: []string{runID}, AgentsPerProcess: 1})
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	defer srv.Close()
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("wire engine: cannot find the dpsim binary to spawn the roles: %w", err)
		}
	}
	dir, removeDir, err := wireDir(o, c)
	if err != nil {
		return nil, err
	}
	defer removeDir()
	c.log.Info().Str("nats", srv.URL).Str("run", runID).Str("dir", dir).Msg("starting the role processes")
	start := time.Now()
	cfg := launch.SessionConfig{
		Exe: exe, ScenarioPath: o.ScenarioPath, Point: c.point, Plan: p, Seeds: sim.NewSeeds(c.seed), Runs: 2 * c.trials, Run: runID,
		// the eavesdropper's transcript: what the precision score reads (precision.go)
		Dir: dir, Mode: wire.Lockstep, Timeout: o.Timeout, LogLevel: o.LogLevel, Transcript: g.HasPrecision(), Log: c.log, Encoding: o.Encoding,
		Inflight: c.inflight, KeepSecrets: o.KeepSecrets, Programs: o.Roles, ShareOutputs: o.ShareOutputs,
	}
	srv.Configure(&cfg, 0)
	sess, err := launch.StartSession(ctx, cfg)
	if err != nil {
		if sess != nil {
			_ = sess.Stop()
		}
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	c.trace = launch.TracePath(dir, endpoint.Eavesdropper, 0, 0)
	bits, runErr := playWireEpisodes(ctx, sess, c)
	if err := sess.Stop(); err != nil && runErr == nil {
		runErr = err
	}
	// What a process did wrong is attributed to it (and to the program that played it) as
	// dpsim run does: a fatal problem fails the audit, the others and the degradation are
	// named in its outputs beside the verdict.
	po := sess.Outcome(start)
	if c.outcome != nil {
		c.outcome(newWireRoles(po))
	}
	if perr := launch.ProblemsError(po.Problems); perr != nil {
		if runErr != nil {
			runErr = fmt.Errorf("%w; %v", runErr, perr)
		} else {
			runErr = perr
		}
	}
	if c.note != nil {
		c.note(inflightNote(c.inflight, sess.Inflight))
	}
	elapsed := time.Since(start)
	if runErr != nil {
		return nil, fmt.Errorf("wire engine: %w", runErr)
	}
	out, err := scoreWire(g, c, dir, bits)
	if err != nil {
		if prog := o.Roles[eavesdropperKey]; prog != "" {
			hint := "its trace's eve_x0 of step T-1 is what the audit scores"
			if g.HasPrecision() {
				hint += ", and its transcript (--transcript=true) what the precision score reads (--precision=false: its estimates alone)"
			}
			return nil, fmt.Errorf("%w (the eavesdropper is your program, --role %s=%q: %s)", err, eavesdropperKey, prog, hint)
		}
		return nil, err
	}
	out.Elapsed = elapsed
	return out, nil
}

// eavesdropperKey is the sender of the eavesdropper whose estimates the wire engine scores.
var eavesdropperKey = endpoint.Endpoint{Role: endpoint.Eavesdropper, ID: 0}.String()

// wireRoles is what the wire engine's processes were and did at a point: who played each role
// (dpsim's own process or a user's program, --role), the problems the launcher attributed to
// them (launch.Problem) and what went wrong without failing the game (launch.Degradation).
type wireRoles struct {
	procs    []audit.RoleProcess
	problems []audit.RoleProblem
	degraded []string
}

// newWireRoles gathers the wire roles of a stopped session's outcome.
func newWireRoles(po *launch.PointOutcome) *wireRoles {
	r := &wireRoles{}
	for _, pr := range po.Procs {
		rp := audit.RoleProcess{Process: pr.Name, Sender: endpoint.Endpoint{Role: pr.Role, ID: pr.ID}.String(), Program: pr.Program, PID: pr.PID}
		if res := pr.Result; res != nil {
			rp.Steps, rp.Missed, rp.Invalid = res.Steps, res.Timing.Missed, res.Invalid.Dropped
		}
		r.procs = append(r.procs, rp)
	}
	for _, p := range po.Problems {
		r.problems = append(r.problems, audit.RoleProblem(p))
	}
	d := po.Degradation(false) // the audit plays in lockstep
	r.degraded = d.Reasons()
	return r
}

// apply records r in the point's report (nothing when r is nil: the fast engine).
func (r *wireRoles) apply(rep *audit.GameReport) {
	if r == nil {
		return
	}
	rep.Processes, rep.Problems, rep.Degraded = r.procs, r.problems, r.degraded
}

// print writes every problem on w, whatever the log level: a role broke the contract.
func (r *wireRoles) print(w io.Writer) {
	if w == nil {
		return
	}
	for _, p := range r.problems {
		fmt.Fprintf(w, "dpsim audit: problem: %s\n", p)
	}
}

// wireDir returns the directory of the processes' files: OUT/procs[-pK] with --out, else a
// temporary directory, removed by the function it returns. With --out that function removes
// the files holding secrets (the plant's or agents' plan files with the seed: launch.SecretFiles)
// unless --keep-secrets.
func wireDir(o *Options, c wireConfig) (dir string, remove func(), err error) {
	if o.Out != "" {
		dir := filepath.Join(o.Out, "procs"+suffix(c.points, c.point))
		return dir, func() {
			var s record.SecretFiles
			if err := launch.RemoveSecrets(&s, o.Out, dir, o.KeepSecrets); err != nil {
				c.log.Warn().Err(err).Msg("removing the files holding secrets")
			}
			c.log.Debug().Bool("kept", s.Kept).Int("removed", s.Removed).Strs("files", s.Files).Msg("files holding secrets")
		}, nil
	}
	tmp, err := os.MkdirTemp("", "dpsim-audit-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// playWireEpisodes plays the 2N trials in groups of up to c.inflight (launch.NextGroup):
// episode e starts with the x(0) of the secret bit audit.Bit(seed, e). It returns the bits
// drawn and the first group's error, if any.
func playWireEpisodes(ctx context.Context, sess *launch.Session, c wireConfig) ([]int8, error) {
	total := 2 * c.trials
	bits := make([]int8, total)
	x0s := make([][]float64, 0, max(c.inflight, 1))
	var tail *estimateTail
	if c.chunk != nil {
		tail = newEstimateTail(c.trace, c.game, total)
	}
	for e := 0; e < total; {
		g := launch.NextGroup(&c.game.Plan.Scenario.Faults, e, total, c.inflight)
		x0s = x0s[:0]
		for ep := g.First; ep <= g.Last(); ep++ {
			bit := audit.Bit(c.seed, uint64(ep))
			bits[ep] = int8(bit)
			x0s = append(x0s, c.game.X0(bit))
		}
		if err := sess.Group(ctx, g, x0s); err != nil {
			return bits, err
		}
		e += g.Count
		if c.progress != nil && ((e-g.Count)/64 != e/64 || e == total) {
			c.progress(e, total)
		}
		if tail != nil {
			if err := tail.poll(bits, c.chunk, e == total); err != nil { // the live view only: the result reads the whole trace
				c.log.Debug().Err(err).Msg("live view: reading the eavesdropper's estimates")
			}
		}
	}
	return bits, nil
}

// inflightNote is the outputs' line on the trials in flight: asked k, how they were grouped.
func inflightNote(k int, c record.InflightCounts) string {
	s := fmt.Sprintf("wire engine: up to %d trials in flight at once over the processes (--inflight); %d group(s), the largest %d", k, c.Groups, c.Largest)
	if n := c.Alone.Total(); n > 0 {
		s += fmt.Sprintf("; %d trial(s) alone (a process crash, server restart or proxy reset scheduled in them: %d, %d, %d)",
			n, c.Alone.Crash, c.Alone.ServerRestart, c.Alone.Proxy)
	}
	return s
}

// scoreWire reads the eavesdropper's final estimate of every episode from its trace in dir (and,
// for the precision score, the evidence of its transcript: readPrecision), scores it with the
// public pair and joins it with the episode's secret bit.
func scoreWire(g *audit.Game, c wireConfig, dir string, bits []int8) (*audit.Outcome, error) {
	total := len(bits)
	est, err := readEstimates(dir, g.Plan.Steps, total, g.EstimateDim())
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	ev, err := readPrecision(g, filepath.Join(dir, contract.TranscriptFile(contract.ProcName(endpoint.Eavesdropper, 0, 0))), total)
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	out := g.NewOutcome(audit.EngineWire, c.seed, c.trials)
	sc := g.Scorer()
	scores := make([]float64, len(g.ScoreNames()))
	for e := 0; e < total; e++ {
		var pe audit.PrecisionEvidence
		if ev != nil {
			pe = ev[e]
		}
		sc.ScoresEvidence(est[e], pe, scores)
		out.Add(uint64(e), int(bits[e]), scores)
	}
	return out, nil
}

// readEstimates streams the eavesdropper process's trace file (pkg/sim trace format, one JSON
// record per step) and keeps its final estimate - the record of step T-1 - of every episode
// 0..total-1: memory O(episodes), whatever T.
func readEstimates(dir string, steps, total, dim int) ([][]float64, error) {
	path := launch.TracePath(dir, endpoint.Eavesdropper, 0, 0)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the eavesdropper's estimates: %w", err)
	}
	defer f.Close()
	est := make([][]float64, total)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), trace.MaxLine)
	// the fields every eavesdropper record has (trace.ControlRecord and trace.ConsensusRecord)
	var rec struct {
		Episode int       `json:"episode"`
		Step    int       `json:"step"`
		EveX0   []float64 `json:"eve_x0"`
	}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec.EveX0 = nil
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if rec.Step != steps-1 {
			continue
		}
		switch {
		case rec.Episode < 0 || rec.Episode >= total:
			return nil, fmt.Errorf("%s:%d: episode %d out of range 0..%d", path, line, rec.Episode, total-1)
		case len(rec.EveX0) != dim:
			return nil, fmt.Errorf("%s:%d: episode %d: final estimate has %d values, want %d", path, line, rec.Episode, len(rec.EveX0), dim)
		}
		est[rec.Episode] = rec.EveX0
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	var missing []int
	for e, x := range est {
		if x == nil {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no final estimate for %d episode(s), first %d", path, len(missing), missing[0])
	}
	return est, nil
}
