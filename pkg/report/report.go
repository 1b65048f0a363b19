package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// FileName is the name of the human report Write creates in the output directory.
const FileName = "report.md"

// Input is everything a finished run hands to the report. Only Points (with Results) is
// required; every other field is printed when set.
type Input struct {
	// Secret says which outputs (paths in the output directory) hold the run's secrets: Write
	// writes them 0600 (the figures' data folder 0700) unless ShareOutputs; nil: none.
	Secret       func(rel string) bool
	ShareOutputs bool
	// Scenario is the scenario file as loaded, possibly with a sweep (nil: Points[0].Scenario).
	Scenario *scenario.Scenario
	// Points are the resolved points in scenario.Expand order (one for a scenario without a sweep).
	Points []Point
	// Seed is the run seed; SeedDrawn says it was drawn at start (not fixed in the file or flag).
	Seed      uint64
	SeedDrawn bool
	// Engine is "nats" or "fast"; Mode "lockstep" or "realtime"; NATSURL the server used.
	Engine  string
	Mode    string
	NATSURL string
	// Processes are the OS processes of a NATS run.
	Processes []Process
	// Timing is an optional JSON-serialisable value (e.g. realtime overrun/jitter statistics),
	// printed as a key/value table in field order.
	Timing any
	// Invalid are optional invalid-message counters (e.g. per process or per reason): messages
	// that were wrong (forged, corrupt, malformed), never those merely late for their episode.
	Invalid map[string]any
	// Stale counts, per process, the messages that arrived for an episode the receiver had
	// already finished (late deliveries of a previous episode: a timing effect, not an attack).
	Stale map[string]uint64
	// Security says how the traffic was secured (nil: not a NATS run).
	Security *Security
	// Elapsed is the run's wall-clock duration (the only time printed).
	Elapsed time.Duration
	// Extra are optional named numbers printed at the end of the results.
	Extra map[string]float64

	// Status is how the run ended: "ok", "degraded", "intervened" (complete, but its faults
	// were changed while it went: Interventions), "interrupted" or "failed" ("" = not stated). When it
	// is set report.md opens with a status banner; a run that did not end "ok" (or with fewer
	// episodes or points than requested, or missing record pieces) gets a verdict marked
	// partial. Error says why it did not end ok.
	Status string
	Error  string
	// Degraded names what made a completed run "degraded" (steps that went on without all
	// their messages at a deadline), with the counts.
	Degraded []string
	// Interventions are the live changes of the run's faults applied while it went (dpsim run
	// --ui), one sentence each (what, where it took effect, who asked): the banner lists them
	// whatever the status.
	Interventions []string
	// Problems are what the role processes did wrong, each with the process that did it
	// (dpsim run's summary.json problems: fatal or not), one sentence each: the banner lists them.
	Problems []string
	// Notes are what happened around the results without changing them (processes the stop
	// had to kill, metrics that overflowed), one sentence each: the banner lists them.
	Notes []string
	// PlannedPoints is the number of points the run was to cover (0: len(Points)); a sweep
	// stopped early hands over fewer Points.
	PlannedPoints int
	// Missed counts the realtime steps whose messages missed their deadline (summed over the
	// processes), LateMessages the messages delivered after their step.
	Missed       int
	LateMessages uint64
	// Timeline lists the faults as they happened (crashes, restarts, server outages,
	// connection events, partitions), in time order.
	Timeline []TimelineEvent
}

// TimelineEvent is one entry of a run's fault timeline (pkg/record).
type TimelineEvent = record.TimelineEvent

// Point is one scenario point of the run.
type Point struct {
	Scenario *scenario.Scenario // the expanded point (nil: Plan.Scenario)
	Plan     *plan.Plan         // the resolved plan (nil: the calibration is not printed)
	Results  *metrics.Results   // the aggregated metrics (required)
	// Requested is the number of episodes asked for (0: not stated); Results.Runs completed.
	Requested int
	// Missing counts the record pieces no process supplied; MissingFirst names the first few.
	Missing      int
	MissingFirst []string
	// Error is what stopped this point ("": nothing).
	Error string
}

// Process is one OS process of a NATS run.
type Process struct {
	Role         string // plant, cloud, agent, eavesdropper, ...
	ID           int
	PID          int
	PeakRSSBytes int64 // peak resident set size; <= 0 when unknown
	// Point labels the sweep point the process served ("" without a sweep): a column of
	// the Processes table when set.
	Point string
}

// FigureNames lists every figure Write may create (record.FigureNames).
func FigureNames() []string { return record.FigureNames() }

// MergePlanWarnings appends to warnings (the scenario's) those of plan p: its Warnings (what
// its dynamics checks found: an unstable loop, weight sums >= 1 with the rate alpha) not
// already there, then its graph warnings (MergeGraphWarnings). Every point of a sweep plans
// its own dynamics, so a warning they share is stated once.
func MergePlanWarnings(warnings []string, p *plan.Plan) []string {
	out := slices.Clone(warnings)
	for _, w := range p.Warnings {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return MergeGraphWarnings(out, p.GraphWarnings)
}

// MergeGraphWarnings appends to the scenario's warnings the graph warnings of a plan
// (plan.GraphWarnings) that the scenario did not already state. The plan's Warnings and
// dynamics.Graph.Validate both check the edge-weight sums and word the same finding
// differently, so a plan's graph warnings are dropped when the warnings already have one
// about the graph ("graph: ...").
func MergeGraphWarnings(scenarioWarnings, graphWarnings []string) []string {
	for _, w := range scenarioWarnings {
		if strings.HasPrefix(w, "graph:") {
			return scenarioWarnings
		}
	}
	out := slices.Clone(scenarioWarnings)
	for _, w := range graphWarnings {
		if !strings.HasPrefix(w, "graph:") {
			w = "graph: " + w
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Check is one computed statement of the report: Text states what was compared with which
// numbers, Pass whether the run agrees with what the theory predicts. Pass is "Value Op
// Threshold", and Text states that comparison ("QUANTITY = V, required OP T"): both are
// rendered from the check's rule (checks.go), never written apart.
type Check struct {
	Point string `json:"point,omitempty"` // the point label ("" for statements about the whole run)
	Name  string `json:"name"`            // short stable identifier, e.g. "prop1-bound"
	Pass  bool   `json:"pass"`
	// Inconclusive: the check neither passes nor fails at this number of runs (the interval
	// straddles the threshold; Pass is false); NeedsRuns estimates how many runs would decide
	// it (0: no estimate).
	Inconclusive bool   `json:"inconclusive,omitempty"`
	NeedsRuns    int    `json:"needs_runs,omitempty"`
	Text         string `json:"text"`
	// Quantity names the number compared; Op is "<=", "<", ">=" or "="; Level is the
	// confidence level of the interval Value is a limit of (0: not an interval limit).
	Quantity  string  `json:"quantity"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Level     float64 `json:"level,omitempty"`

	subject string // what the rule's words are about (a state component), for sweep summaries
}

// String prints the check as report.md does: "PASS: text: yes".
func (c Check) String() string {
	switch {
	case c.Pass:
		return "PASS: " + c.Text + ": yes"
	case c.Inconclusive:
		return "INCONCLUSIVE: " + c.Text + ": " + c.undecided()
	}
	return "FAIL: " + c.Text + ": no"
}

// undecided words an inconclusive check's outcome.
func (c Check) undecided() string {
	if c.NeedsRuns > 0 {
		return fmt.Sprintf("inconclusive at this number of runs (needs about %d)", c.NeedsRuns)
	}
	return "inconclusive at this number of runs"
}

// Report is the built report: the Markdown text, the figures and the checks it states.
type Report struct {
	Markdown []byte
	Figures  []*figure.Figure
	Checks   []Check
	// Warnings are report.md's Warnings section, one sentence each (for the terminal).
	Warnings []string
}

// Build computes the report without any I/O. It is deterministic: the same Input gives the
// same Markdown byte for byte.
func Build(in Input) (rep *Report, err error) {
	defer func() {
		// Inputs are validated in analyse; this only turns an unforeseen inconsistency into an error.
		if rec := recover(); rec != nil {
			rep, err = nil, fmt.Errorf("report: inconsistent input: %v", rec)
		}
	}()
	r, err := analyse(in)
	if err != nil {
		return nil, err
	}
	figs, err := r.figures()
	if err != nil {
		return nil, err
	}
	md := r.markdown(figs)
	return &Report{Markdown: md, Figures: figs, Checks: r.checks, Warnings: r.warnings()}, nil
}

// Write builds the report and writes, into dir (created if needed), every figure as
// NAME.png and NAME.svg, its data as FigureDataDir/NAME.json (FigureDataFile) and then
// report.md.
func Write(dir string, in Input) error {
	_, err := WriteReport(dir, in, true)
	return err
}

// WriteReport builds the report and writes it into dir: report.md, and with figures every
// figure and its data (Write); it returns what it built (its Warnings for the terminal).
func WriteReport(dir string, in Input, figures bool) (*Report, error) {
	if dir == "" {
		return nil, errors.New("report: no output directory")
	}
	rep, err := Build(in)
	if err != nil {
		return nil, err
	}
	if !figures {
		return rep, writeMarkdownFile(dir, rep.Markdown, in)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	for _, f := range rep.Figures {
		if _, err := f.WriteFilesMode(dir, func(name string) os.FileMode { return in.mode(name) }); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	if err := writeFigureData(dir, rep.Figures, in); err != nil {
		return nil, err
	}
	return rep, writeMarkdownFile(dir, rep.Markdown, in)
}

// mode is the mode of output rel (a path in the output directory): see Input.Secret.
func (in Input) mode(rel string) os.FileMode {
	return atomicfile.Mode(in.Secret != nil && in.Secret(rel), in.ShareOutputs)
}

// writeMarkdownFile writes md as dir/report.md, atomically.
func writeMarkdownFile(dir string, md []byte, in Input) error {
	path := filepath.Join(dir, FileName)
	if err := atomicfile.WriteFile(path, md, in.mode(FileName)); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}

// WriteMarkdown builds the report and writes only report.md into dir (atomically), leaving the
// figures of an earlier Write in place: for a caller that learns after Write how the run ended
// (e.g. writing summary.json failed) and must re-render the status and error at the top.
func WriteMarkdown(dir string, in Input) error {
	_, err := WriteReport(dir, in, false)
	return err
}
