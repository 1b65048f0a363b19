package auditrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// WirePlayer plays with the real role processes over NATS (the wire engine, runWire). It keeps,
// for the point being played, the notes of its game (the trials in flight) and what its
// processes were and did (wireRoles), and adds them to the point's report (Annotate).
type WirePlayer struct {
	o      *Options
	points int
	seed   uint64
	log    zerolog.Logger
	stderr io.Writer  // where the problems the launcher attributes are printed (nil: nowhere)
	notes  []string   // the engine's notes on the point being played
	roles  *wireRoles // the processes, problems and degradation of the point being played
}

// NewWirePlayer returns the wire player of a; the problems its processes cause are printed on
// stderr, whatever the log level.
func NewWirePlayer(a *Audit, stderr io.Writer) *WirePlayer {
	return &WirePlayer{o: a.Opts, points: len(a.Points), seed: a.Seed, log: a.Log, stderr: stderr}
}

// Play plays point k's game over NATS (runWire).
func (w *WirePlayer) Play(ctx context.Context, k int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error) {
	return runWire(ctx, w.o, wireConfig{point: k, points: w.points, game: g, seed: w.seed, trials: trials, log: w.log, progress: feed.Progress,
		inflight: w.o.Inflight, note: func(s string) { w.notes = append(w.notes, s) }, chunk: feed.Chunk, enough: feed.Enough,
		outcome: func(r *wireRoles) { w.roles = r; r.print(w.stderr) }})
}

// playRange plays episodes lo..hi-1 of point k's game over NATS (a shard's, --shard) and
// returns their scores trial after trial (audit.PlayChunk's layout), with what its processes
// were and did.
func (w *WirePlayer) playRange(ctx context.Context, k int, g *audit.Game, trials, lo, hi int) ([]float64, *ShardWire, error) {
	rec := &ShardWire{}
	out, err := runWire(ctx, w.o, wireConfig{point: k, points: w.points, game: g, seed: w.seed, trials: trials, log: w.log,
		inflight: w.o.Inflight, lo: lo, hi: hi, note: func(s string) { rec.Notes = append(rec.Notes, s) },
		outcome: func(r *wireRoles) {
			r.print(w.stderr)
			rec.Processes, rec.Problems, rec.Degraded = r.procs, r.problems, r.degraded
		}})
	if err != nil {
		return nil, nil, err
	}
	n := len(g.ScoreNames())
	scores := make([]float64, (hi-lo)*n)
	err = out.EachTrial(func(trial uint64, _ int, s []float64) error {
		copy(scores[(int(trial)-lo)*n:], s)
		return nil
	})
	return scores, rec, err
}

// Annotate adds the point's processes, problems and degradation to its report and, when it is
// complete, the engine's notes; then forgets them (the next point has its own).
func (w *WirePlayer) Annotate(rep *audit.GameReport, complete bool) {
	if complete {
		rep.Notes, w.notes = append(rep.Notes, w.notes...), nil
	}
	w.roles.apply(rep)
	w.roles = nil
}

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
	// enough, if set and true after a group, ends the game there (Feed.Enough).
	enough func() bool
	// trace is the eavesdropper's trace file (set by runWire).
	trace string
	// outcome, if set, receives what the processes were and did once they stopped: who played
	// each role (--role), the problems attributed to them, the degradation.
	outcome func(*wireRoles)
	// lo and hi, when hi > 0, are the episodes a shard plays (--shard): lo..hi-1 of the 2N.
	lo, hi int
}

// span is the episodes c plays: lo..hi-1, every one of the 2N without a shard.
func (c wireConfig) span() (lo, hi int) {
	if c.hi > 0 {
		return c.lo, c.hi
	}
	return 0, 2 * c.trials
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
	ws, err := startWire(ctx, o, c)
	if err != nil {
		return nil, err
	}
	defer ws.close()
	c.trace = launch.TracePath(ws.dir, endpoint.Eavesdropper, 0, 0)
	bits, runErr := playWireEpisodes(ctx, ws.sess, c)
	runErr = stopWire(ws, c, runErr)
	elapsed := time.Since(ws.start)
	if runErr != nil {
		return nil, fmt.Errorf("wire engine: %w", runErr)
	}
	out, err := scoreWire(c.game, c, ws.dir, bits)
	if err != nil {
		return nil, eavesdropperHint(err, o, c.game)
	}
	out.Elapsed = elapsed
	return out, nil
}

// wireSession is a point's wire game under way: the NATS server, the role processes' session,
// their directory and when they started.
type wireSession struct {
	srv       *launch.Server
	sess      *launch.Session
	dir       string
	removeDir func()
	start     time.Time
}

// close removes the processes' directory (or their secrets) and stops the server.
func (ws *wireSession) close() {
	ws.removeDir()
	ws.srv.Close()
}

// startWire starts the point's NATS server (embedded unless --nats-url or $NATS_URL) under a
// fresh run id, and the role processes' session on it (launch.StartSession).
func startWire(ctx context.Context, o *Options, c wireConfig) (*wireSession, error) {
	p := c.game.Plan
	var b [4]byte
	_, _ = rand.Read(b[:])
	runID := "audit" + hex.EncodeToString(b[:])
	srv, err := launch.StartServer(launch.ServerConfig{URL: bus.ResolveURL(o.NATSURL), Plans: []*plan.Plan{p}, RunIDs: []string{runID}, AgentsPerProcess: 1})
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	ws := &wireSession{srv: srv, removeDir: func() {}}
	exe, err := wireExe(o)
	if err != nil {
		ws.close()
		return nil, err
	}
	if ws.dir, ws.removeDir, err = wireDir(o, c); err != nil {
		ws.removeDir = func() {}
		ws.close()
		return nil, err
	}
	c.log.Info().Str("nats", srv.URL).Str("run", runID).Str("dir", ws.dir).Msg("starting the role processes")
	ws.start = time.Now()
	cfg := launch.SessionConfig{
		Exe: exe, ScenarioPath: o.ScenarioPath, Point: c.point, Plan: p, Seeds: sim.NewSeeds(c.seed), Runs: 2 * c.trials, Run: runID,
		// the eavesdropper's transcript: what the precision score reads (precision.go)
		Dir: ws.dir, Mode: wire.Lockstep, Timeout: o.Timeout, LogLevel: o.LogLevel, Transcript: c.game.HasPrecision(), Log: c.log, Encoding: o.Encoding,
		Inflight: c.inflight, KeepSecrets: o.KeepSecrets, Programs: o.Roles, ShareOutputs: o.ShareOutputs,
	}
	srv.Configure(&cfg, 0)
	if ws.sess, err = launch.StartSession(ctx, cfg); err != nil {
		if ws.sess != nil {
			_ = ws.sess.Stop()
		}
		ws.close()
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	return ws, nil
}

// wireExe is the dpsim binary the wire engine spawns: --exe's, else this process's.
func wireExe(o *Options) (string, error) {
	if o.Exe != "" {
		return o.Exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("wire engine: cannot find the dpsim binary to spawn the roles: %w", err)
	}
	return exe, nil
}

// stopWire stops the role processes and returns runErr joined with what makes the game fail
// among what they did wrong. What a process did wrong is attributed to it (and to the program
// that played it) as dpsim run does: a fatal problem fails the audit, the others and the
// degradation are named in its outputs beside the verdict.
func stopWire(ws *wireSession, c wireConfig, runErr error) error {
	if err := ws.sess.Stop(); err != nil && runErr == nil {
		runErr = err
	}
	po := ws.sess.Outcome(ws.start)
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
		c.note(inflightNote(c.inflight, ws.sess.Inflight))
	}
	return runErr
}

// eavesdropperHint adds to a scoring error, when the eavesdropper is the user's program (--role),
// what of its files the audit reads.
func eavesdropperHint(err error, o *Options, g *audit.Game) error {
	prog := o.Roles[eavesdropperKey]
	if prog == "" {
		return err
	}
	hint := "its trace's eve_x0 of step T-1 is what the audit scores"
	if g.HasPrecision() {
		hint += ", and its transcript (--transcript=true) what the precision score reads (--precision=false: its estimates alone)"
	}
	return fmt.Errorf("%w (the eavesdropper is your program, --role %s=%q: %s)", err, eavesdropperKey, prog, hint)
}

// eavesdropperKey is the sender of the eavesdropper whose estimates the wire engine scores.
var eavesdropperKey = endpoint.Endpoint{Role: endpoint.Eavesdropper, ID: 0}.String()
