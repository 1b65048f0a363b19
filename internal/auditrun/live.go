package auditrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
)

// UI is the live view of --ui (internal/live.AuditHub on the live view's server): the loop's
// observers feed its hub the progress and the trials as they are scored, and it recomputes the
// bounds from them with the audit's own analysis (ReportOptions). A nil *UI is no live view.
type UI struct {
	hub  *live.AuditHub
	srv  *live.Server
	hold time.Duration
}

// StartUI starts the live view of --ui (nil without it) and says its URL on stderr; dispatch
// says the trials are played by the farm (the view then shows only the progress and the final
// bounds).
func StartUI(a *Audit, dispatch bool, stderr io.Writer, start time.Time) (*UI, error) {
	o := a.Opts
	if o.UI == "" {
		return nil, nil
	}
	info := live.AuditInfo{Scenario: a.Name, Kind: string(a.Points[0].Kind), Engine: o.Engine, Dispatch: dispatch,
		Confidence: a.Conf, Selection: string(o.Selection), Live: !dispatch}
	for k, g := range a.Games {
		pi, err := live.NewAuditPoint(a.Points[k].Name, g, a.Trials, a.ReportOptions())
		if err != nil {
			return nil, PointErr(len(a.Points), k, a.Points[k], err)
		}
		info.Points = append(info.Points, pi)
	}
	hub := live.NewAuditHub(info, start)
	warn, err := live.PublicAddr(o.UI, "--ui-public", o.UIPublic)
	if err != nil {
		return nil, cli.UsageError("--ui %s: %v", o.UI, err)
	}
	srv, err := live.ServeAudit(o.UI, hub)
	if err != nil {
		return nil, cli.UsageError("--ui %s: %v", o.UI, err)
	}
	if warn != "" {
		fmt.Fprintf(stderr, "dpsim audit: %s\n", warn)
	}
	// The token goes to the terminal only (never a file).
	fmt.Fprintf(stderr, "dpsim audit: live view %s (until the audit ends; metrics %smetrics with the token)\n", srv.TokenURL(), srv.URL())
	return &UI{hub: hub, srv: srv, hold: o.UIHold}, nil
}

// Observe adds the live view's observers to obs (nothing for a nil u): the point begun, its
// progress, its trials as they are scored, its analysed report.
func (u *UI) Observe(obs Observer) Observer {
	if u == nil {
		return obs
	}
	progress := obs.Progress
	obs.Begin = u.hub.BeginPoint
	obs.Progress = func(k, done, total int) {
		if progress != nil {
			progress(k, done, total)
		}
		u.hub.Progress(done)
	}
	obs.Chunk = u.hub.Chunk
	obs.Evidence = u.hub.Evidence
	obs.Analysed = u.hub.PointDone
	return obs
}

// Stop ends the live view when the audit ended with err (played: every point was; violations:
// the points whose verdict is violation): after --ui-hold (or Ctrl-C).
func (u *UI) Stop(ctx context.Context, stderr io.Writer, err error, played bool, violations []string) {
	if u == nil {
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
	u.hub.Finish(status, msg, verdict)
	if u.hold > 0 && ctx.Err() == nil {
		fmt.Fprintf(stderr, "dpsim audit: live view %s stays up for %v (--ui-hold; Ctrl-C ends it)\n", u.srv.TokenURL(), u.hold)
		select {
		case <-ctx.Done():
		case <-time.After(u.hold):
		}
	}
	_ = u.srv.Close()
}
