package auditrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/record"
)

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
// the files holding secrets (the plant's or agents' plan files with the seed: record.SecretFiles)
// unless --keep-secrets.
func wireDir(o *Options, c wireConfig) (dir string, remove func(), err error) {
	if o.Out != "" {
		dir := filepath.Join(o.Out, "procs"+Suffix(c.points, c.point))
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
	lo, end := c.span()
	for e := lo; e < end; {
		g := launch.NextGroup(&c.game.Plan.Scenario.Faults, e, end, c.inflight)
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
		if c.progress != nil && ((e-g.Count)/64 != e/64 || e == end) {
			c.progress(e, total)
		}
		if tail != nil {
			if err := tail.poll(bits, c.chunk, e == end); err != nil { // the live view only: the result reads the whole trace
				c.log.Debug().Err(err).Msg("live view: reading the eavesdropper's estimates")
			}
		}
		if c.enough != nil && e < end && c.enough() {
			return bits[:e], nil // a clean stop between groups: every episode begun has ended
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
