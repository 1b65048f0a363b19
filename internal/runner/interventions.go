package runner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// AppliedFaultsFile is the faults section of a run with its live interventions (--ui): the
// scenario's faults plus every change applied, with the (episode, step) it took effect at.
// Running the scenario with it as its faults section replays the run.
const AppliedFaultsFile = "faults.applied.yaml"

// interventionsRefused says why this run cannot take live interventions ("": it can).
func (l *launcher) interventionsRefused() string {
	o := l.o
	switch {
	case len(l.points) > 1:
		return "this run is a sweep of several points: interventions change the faults of a single point's run"
	case o.Engine != "nats":
		return "--engine " + o.Engine + ": interventions need the NATS engine, where the launcher starts each episode"
	case o.Attach:
		return "--attach: the processes were started elsewhere and may not read the launcher's files"
	case len(o.Roles) > 0:
		return "--role: users' programs do not implement ctl.faults (docs/protocol.md)"
	case o.Resume != "":
		return "--resume: a resumed run starts again from the scenario's faults; live changes are not carried across a resume"
	case o.AgentsPerProcess > 1:
		return fmt.Sprintf("--agents-per-process %d: a change acts per agent; run one agent per process", o.AgentsPerProcess)
	}
	return ""
}

// startInterventions serves the interventions API on the live view and writes the applied
// faults file as it starts (the scenario's own faults).
func (l *launcher) startInterventions() error {
	// Episodes in flight take changes too: a change waits for the next group (launch
	// Interventions.startGroup), so --ui leaves --inflight as it is and the run plays as without it.
	refuse := l.interventionsRefused()
	cfg := launch.InterventionsConfig{Scenario: l.points[0], Runs: l.runs, Refuse: refuse,
		Timeline: l.tl, OnApply: func(_ []record.Intervention, faults scenario.FaultsSpec) {
			if err := l.hub.LinkFaults(0, faults); err != nil { // the live links follow the changes
				l.log.Warn().Err(err).Msg("live view: links no longer replayed")
			}
			if err := l.writeAppliedFaults(); err != nil {
				l.log.Warn().Err(err).Msg("interventions")
			}
		}}
	if l.o.Mode == wire.Realtime {
		cfg.Period = l.o.Period // link rules and partitions change in the episode in progress
	}
	l.iv = launch.NewInterventions(cfg)
	l.ui.HandleInterventions(intervener{l.iv})
	if refuse != "" {
		return nil
	}
	l.sum.Interventions = &record.InterventionsSummary{File: AppliedFaultsFile, List: []record.Intervention{}}
	return l.writeAppliedFaults()
}

// appliedMu orders the writes of faults.applied.yaml (a realtime change writes it from the
// API's goroutine).
var appliedMu sync.Mutex

// writeAppliedFaults writes faults.applied.yaml (atomically) with the faults as they are now.
func (l *launcher) writeAppliedFaults() error {
	appliedMu.Lock()
	defer appliedMu.Unlock()
	b, err := scenario.MarshalFaults(l.iv.Faults())
	if err != nil {
		return err
	}
	head := "# The faults of this run with its live interventions (dpsim run --ui): the scenario's own and every\n" +
		"# change applied, with its lifetime. Run the scenario with this faults section to replay the run.\n"
	if err := atomicfile.WriteFile(filepath.Join(l.o.Out, AppliedFaultsFile), append([]byte(head), b...), 0o644); err != nil {
		return fmt.Errorf("%s: %w", AppliedFaultsFile, err)
	}
	return nil
}

// finishInterventions puts the final list in summary.json and writes the file once more.
func (l *launcher) finishInterventions() {
	if l.iv == nil || l.sum.Interventions == nil {
		return
	}
	s := l.sum.Interventions
	s.List = l.iv.List()
	s.Applied, s.Pending = 0, 0
	for _, c := range s.List {
		if c.Applied {
			s.Applied++
		} else {
			s.Pending++
		}
	}
	if err := l.writeAppliedFaults(); err != nil {
		l.sum.Warnings = append(l.sum.Warnings, err.Error())
	}
}

// intervened says whether a live change of the faults was applied.
func (l *launcher) intervened() bool {
	return l.sum.Interventions != nil && l.sum.Interventions.Applied > 0
}

// interventionLines are the applied changes as sentences for the status banners (report.md,
// the terminal): what, where it took effect, when and by whom it was asked for. The client's
// words (its User-Agent, Origin, body) are quoted.
func (l *launcher) interventionLines() []string {
	if l.sum.Interventions == nil {
		return nil
	}
	var out []string
	for _, c := range l.sum.Interventions.List {
		if !c.Applied {
			continue
		}
		what := c.Op + " " + c.Target + " " + quoteWord(c.Name)
		if c.Rule != "" && c.Rule != c.Name {
			what += " (" + quoteWord(c.Rule) + ")"
		}
		if len(c.Body) > 0 {
			if b, err := json.Marshal(c.Body); err == nil {
				what += " " + quoteWord(string(b))
			}
		}
		origin := c.Origin
		if origin == "" {
			origin = "none"
		}
		out = append(out, fmt.Sprintf("%s from episode %d step %d, asked at %s by %s (Origin %s, User-Agent %s)",
			what, c.Episode, c.Step, c.At.Format(time.RFC3339), quoteWord(c.RemoteAddr), quoteWord(origin), quoteWord(c.UserAgent)))
	}
	return out
}

// quoteWord makes a client's word safe on a terminal and in Markdown: quoted (control
// characters escaped) when it has anything but letters, digits and .:/-_ , no backticks.
func quoteWord(s string) string {
	s = strings.ReplaceAll(s, "`", "'")
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".:/-_[]", r)) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// intervener is launch.Interventions as the live view's API drives it.
type intervener struct{ iv *launch.Interventions }

func (v intervener) State() any { return v.iv.State() }

func (v intervener) Do(op, target, name string, body map[string]any, by live.Requester) (any, error) {
	return v.iv.Do(record.Requester{RemoteAddr: by.RemoteAddr, UserAgent: by.UserAgent, Origin: by.Origin}, op, target, name, body)
}
