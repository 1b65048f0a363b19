package auditcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
)

const uiHelp = "serve a live view of the audit while it plays: --ui alone serves on 127.0.0.1 at a free port, --ui=HOST:PORT there (an empty host is 127.0.0.1; an address other than loopback, e.g. 0.0.0.0, needs --ui-public). The URL is printed on stderr at the start, with a random token (http://HOST:PORT/?token=...) that every request needs: the page keeps it as a cookie, other clients send it as ?token= or Authorization: Bearer (so does a Prometheus scraper of /metrics); a page of another site cannot read the view (its Host and Origin are checked). The page (/) shows the progress, eps_lb_cp, eps_lb_gdp and eps_lb_fdp against the trials so far (recomputed by the audit's own analysis, at most a few times a second; the last point is the result's), the claim's eps, the empirical trade-off curve against the claim's, and the verdict at the end; /api/state is its JSON, /events its Server-Sent Events, /metrics Prometheus metrics. Fast engine (in-process) and wire; with --dispatch only the progress and the final bounds. It stops when the audit ends (see --ui-hold)"

const uiPublicHelp = "with --ui=HOST:PORT: allow an address other than loopback (0.0.0.0, ::, a LAN address or name): the live view then serves the network, over plain HTTP - whoever can reach it and learns the URL with its token sees the audit as it goes (a warning is printed)"

// checkUI checks the live view's flags.
func (o *Options) checkUI() error {
	switch {
	case o.UIHold < 0:
		return cli.UsageError("--ui-hold %v: must be >= 0", o.UIHold)
	case o.UIHold > 0 && o.UI == "":
		return cli.UsageError("--ui-hold keeps the live view up after the audit: give --ui")
	case o.UI != "" && o.OneRun:
		return cli.UsageError("--ui shows an audit of many trials: --one-run plays one episode")
	case o.UIPublic && o.UI == "":
		return cli.UsageError("--ui-public allows a live view on the network: give --ui=HOST:PORT")
	}
	if o.UI != "" {
		if _, err := live.PublicAddr(o.UI, "--ui-public", o.UIPublic); err != nil {
			return cli.UsageError("--ui %s: %v", o.UI, err)
		}
	}
	return nil
}

// reportOptions are the options of every analysis of a point: the audit's result and the live
// view's bounds of the trials so far are the same function of the trials.
func (a *auditRun) reportOptions() audit.ReportOptions {
	return audit.ReportOptions{Confidence: a.pointConf, Selection: a.o.Selection}
}

// startUI starts the live view of --ui (nothing without it) and says its URL on stderr.
func (a *auditRun) startUI(stderr io.Writer, start time.Time) error {
	if a.o.UI == "" {
		return nil
	}
	info := live.AuditInfo{Scenario: a.name, Kind: string(a.points[0].Kind), Engine: a.o.Engine, Dispatch: a.farm != nil,
		Confidence: a.conf, Selection: string(a.o.Selection), Live: a.farm == nil}
	for k, g := range a.games {
		pi, err := live.NewAuditPoint(a.points[k].Name, g, a.trials, a.reportOptions())
		if err != nil {
			return pointErr(len(a.points), k, a.points[k], err)
		}
		info.Points = append(info.Points, pi)
	}
	hub := live.NewAuditHub(info, start)
	warn, err := live.PublicAddr(a.o.UI, "--ui-public", a.o.UIPublic)
	if err != nil {
		return cli.UsageError("--ui %s: %v", a.o.UI, err)
	}
	srv, err := live.ServeAudit(a.o.UI, hub)
	if err != nil {
		return cli.UsageError("--ui %s: %v", a.o.UI, err)
	}
	a.hub, a.ui = hub, srv
	if warn != "" {
		fmt.Fprintf(stderr, "dpsim audit: %s\n", warn)
	}
	// The token goes to the terminal only (never a file).
	fmt.Fprintf(stderr, "dpsim audit: live view %s (until the audit ends; metrics %smetrics with the token)\n", srv.TokenURL(), srv.URL())
	return nil
}

// stopUI ends the live view when the audit ended with err (violations: the points whose
// verdict is violation): after --ui-hold (or Ctrl-C).
func (a *auditRun) stopUI(ctx context.Context, stderr io.Writer, err error, played bool, violations []string) {
	if a.hub == nil {
		return
	}
	status := "ok"
	switch {
	case err != nil && errors.Is(err, ErrViolation):
	case err != nil && ctx.Err() != nil:
		status = "interrupted"
	case err != nil:
		status = "failed"
	}
	msg, verdict := "", ""
	if status != "ok" {
		msg = err.Error()
	} else if played {
		verdict = audit.Consistent
		if len(violations) > 0 {
			verdict = audit.Violation
		}
	}
	a.hub.Finish(status, msg, verdict)
	if a.o.UIHold > 0 && ctx.Err() == nil {
		fmt.Fprintf(stderr, "dpsim audit: live view %s stays up for %v (--ui-hold; Ctrl-C ends it)\n", a.ui.TokenURL(), a.o.UIHold)
		select {
		case <-ctx.Done():
		case <-time.After(a.o.UIHold):
		}
	}
	_ = a.ui.Close()
}

// chunkHook is the live view's feed of a point's trials (nil without --ui: the engines then do
// no extra work).
func (a *auditRun) chunkHook() func(*audit.Outcome) {
	if a.hub == nil {
		return nil
	}
	return a.hub.Chunk
}

// estimateTail reads the eavesdropper's final estimates (its records of step T-1) as its trace
// file grows, scores them and hands them to the live view: the wire engine's feed of --ui.
// Every process has written a group's records once its ctl.done for the group came, so a poll
// after a group sees them; a line not yet complete is read at the next poll. The audit's result
// does not come from here: it reads the whole file at the end (readEstimates).
type estimateTail struct {
	path   string
	off    int64
	steps  int
	g      *audit.Game
	sc     *audit.Scorer
	scores []float64
	part   *audit.Outcome
	seen   []bool
	last   time.Time
}

func newEstimateTail(path string, g *audit.Game, total int) *estimateTail {
	return &estimateTail{path: path, steps: g.Plan.Steps, g: g, sc: g.Scorer(), scores: make([]float64, len(g.ScoreNames())),
		part: g.NewOutcome(audit.EngineWire, 0, 0), seen: make([]bool, total)}
}

// poll reads what the trace gained (at most every live.AuditInterval/2 unless final) and hands
// the trials it completes, with their secret bits, to chunk.
func (t *estimateTail) poll(bits []int8, chunk func(*audit.Outcome), final bool) error {
	if !final && time.Since(t.last) < live.AuditInterval/2 {
		return nil
	}
	t.last = time.Now()
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1] // whole lines only
	t.off += int64(len(b))
	var rec struct {
		Episode int       `json:"episode"`
		Step    int       `json:"step"`
		EveX0   []float64 `json:"eve_x0"`
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b[:i]
		b = b[i+1:]
		if !bytes.Contains(line, []byte(`"eve_x0"`)) {
			continue
		}
		rec.EveX0 = nil
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%s: %w", t.path, err)
		}
		e := rec.Episode
		if rec.Step != t.steps-1 || e < 0 || e >= len(t.seen) || t.seen[e] || len(rec.EveX0) != t.g.EstimateDim() {
			continue
		}
		t.seen[e] = true
		t.sc.Scores(rec.EveX0, t.scores)
		t.part.Add(uint64(e), int(bits[e]), t.scores)
	}
	if t.part.Episodes > 0 {
		chunk(t.part)
		t.part.Reset()
	}
	return nil
}
