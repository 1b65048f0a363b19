package report

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/metrics"
)

// markdown writes report.md.
func (r *analysis) markdown(figs []*figure.Figure) []byte {
	var b strings.Builder
	name := "dpsim run"
	if r.sc != nil {
		name = r.sc.Name
	}
	fmt.Fprintf(&b, "# %s\n\n", name)
	r.statusBanner(&b)
	r.faultsNote(&b)
	if r.sc != nil && strings.TrimSpace(r.sc.Description) != "" {
		b.WriteString(strings.TrimSpace(r.sc.Description) + "\n\n")
	}
	b.WriteString("Monte Carlo numbers are means over the runs with their 95% confidence intervals as mean [lo, hi] " +
		"(normal approximation); a check that decides on an interval of another level names it and shows it first. " +
		"Every PASS/FAIL below is computed from this run's numbers and states its comparison (\"QUANTITY = value, required OP threshold\"); " +
		"PASS means the run agrees with what the theory predicts.\n\n")
	if T := r.rep.res.Steps; T > metrics.MaxSeriesPoints {
		fmt.Fprintf(&b, "The horizon has %d steps: the per-step series (the figures and summary.json) keep at most %d evenly spaced "+
			"steps, the first and the last among them (each thinned series lists its steps in `step`); every final, "+
			"time-averaged and maximum value uses every step.\n\n", T, metrics.MaxSeriesPoints)
	}
	r.verdict(&b)
	r.setupSection(&b)
	r.securitySection(&b)
	r.privacySection(&b)
	r.resultsSection(&b)
	r.faultsSection(&b)
	r.timelineSection(&b)
	r.transportSection(&b)
	r.figuresSection(&b, figs)
	b.WriteString(r.appendix.String())
	return []byte(b.String())
}

// statusBanner opens report.md with how the run ended, when the caller stated it
// (Input.Status): the error, the episodes completed of those requested, the points run, the
// missing record pieces and the realtime misses - so that a failed or interrupted run never
// reads as a normal one.
func (r *analysis) statusBanner(b *strings.Builder) {
	in := r.in
	if in.Status == "" && in.Error == "" {
		return
	}
	items := r.statusItems()
	b.WriteString("> " + r.statusHeadline() + "\n")
	if len(items) > 0 {
		b.WriteString(">\n")
		for _, it := range items {
			b.WriteString("> - " + it + "\n")
		}
	}
	b.WriteString("\n")
}

// statusHeadline is the banner's first line: the status and what it means for the numbers below.
func (r *analysis) statusHeadline() string {
	in := r.in
	switch {
	case in.Status == "":
		return "**Status: not stated** - the run reported an error:"
	case r.failedAfter:
		return fmt.Sprintf("**Status: %s** - every requested episode completed, but the run %s afterwards; the numbers below are complete:", in.Status, failedWord(in.Status))
	case in.Status == "ok" && !r.partial:
		return "**Status: ok** - every requested episode completed."
	case in.Status == "ok":
		return "**Status: ok, but incomplete** - the results below cover less than was asked for."
	case in.Status == "degraded" && !r.partial:
		return "**Status: degraded** - every requested episode completed, but some steps went on without all their messages (the missing-input rules applied):"
	case in.Status == "intervened" && !r.partial:
		return fmt.Sprintf("**Status: intervened** - every requested episode completed, but %d live intervention(s) through the live view changed the run's faults while it went: the numbers below are not the scenario's own (faults.applied.yaml replays this run):", len(in.Interventions))
	case in.Status == "intervened":
		return fmt.Sprintf("**Status: intervened, and incomplete** - %d live intervention(s) through the live view changed the run's faults while it went, and the results below cover less than was asked for:", len(in.Interventions))
	default:
		return fmt.Sprintf("**Status: %s** - the run did not finish; every number below covers only the episodes completed before it stopped.", in.Status)
	}
}

// statusItems lists under the banner the error, what was degraded, the problems, interventions
// and notes, each point's shortfalls, the points run and the realtime misses.
func (r *analysis) statusItems() []string {
	in := r.in
	var items []string
	if in.Error != "" {
		items = append(items, "error: "+oneLine(in.Error))
	}
	for _, d := range in.Degraded {
		items = append(items, oneLine(d))
	}
	for _, pb := range in.Problems {
		items = append(items, "problem: "+oneLine(pb))
	}
	for _, iv := range in.Interventions {
		items = append(items, "intervention: "+oneLine(iv))
	}
	for _, n := range in.Notes {
		items = append(items, oneLine(n))
	}
	for _, p := range r.points {
		items = append(items, r.pointStatusItems(p)...)
	}
	if r.sweep {
		done := 0
		for _, p := range r.points {
			if pt := in.Points[p.idx]; pt.Requested == 0 || p.res.Runs >= pt.Requested {
				done++
			}
		}
		items = append(items, fmt.Sprintf("sweep points complete: %d of %d", done, max(in.PlannedPoints, len(r.points))))
	} else if in.PlannedPoints > len(r.points) {
		items = append(items, fmt.Sprintf("points run: %d of %d", len(r.points), in.PlannedPoints))
	}
	if (in.Missed > 0 || in.LateMessages > 0) && len(in.Degraded) == 0 {
		items = append(items, fmt.Sprintf("%d step(s) went on without all their messages at the deadline (the missing-input rules applied), %d message(s) arrived after their step", in.Missed, in.LateMessages))
	}
	if r.partial {
		items = append(items, "the verdict below is partial: it covers the completed episodes only")
	}
	return items
}

// pointStatusItems lists a point's episodes completed, incomplete episodes, missing record pieces
// and its own error, prefixed by its label in a sweep.
func (r *analysis) pointStatusItems(p *pointInfo) []string {
	in := r.in
	var items []string
	pt := in.Points[p.idx]
	where := ""
	if r.sweep {
		where = p.label + ": "
	}
	if pt.Requested > 0 && (p.res.Runs < pt.Requested || !r.sweep) {
		items = append(items, fmt.Sprintf("%sepisodes completed: %d of %d requested", where, p.res.Runs, pt.Requested))
	}
	if n := len(p.res.IncompleteEpisodes); n > 0 {
		items = append(items, fmt.Sprintf("%s%d incomplete episode(s) not aggregated: %s", where, n, intList(p.res.IncompleteEpisodes, 10)))
	}
	if pt.Missing > 0 {
		s := fmt.Sprintf("%smissing record pieces: %d", where, pt.Missing)
		if len(pt.MissingFirst) > 0 {
			s += " (first: " + strings.Join(pt.MissingFirst, "; ") + ")"
		}
		items = append(items, s)
	}
	if pt.Error != "" && !strings.Contains(in.Error, pt.Error) {
		items = append(items, where+"error: "+oneLine(pt.Error))
	}
	return items
}

// failedWord is the verb of a status for the banner ("failed", "was interrupted").
func failedWord(status string) string {
	if status == "interrupted" {
		return "was interrupted"
	}
	return status
}

// oneLine keeps a message on one line of the banner.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (r *analysis) verdict(b *strings.Builder) {
	pass := 0
	var failing, undecided []string
	for _, c := range r.checks {
		if c.Pass {
			pass++
			continue
		}
		f := c.Name
		if c.Point != "" {
			f += " (" + c.Point + ")"
		}
		if c.Inconclusive {
			if c.NeedsRuns > 0 {
				f += fmt.Sprintf(", needs about %d runs", c.NeedsRuns)
			}
			undecided = append(undecided, f)
			continue
		}
		failing = append(failing, f)
	}
	head := "**Verdict:**"
	scope := ""
	if r.failedAfter {
		head = "**Verdict (the run " + failedWord(r.in.Status) + " after its episodes, see Status):**"
	}
	if r.partial {
		head = "**Verdict (partial: " + strings.Join(r.partialWhy, ", ") + "):**"
		scope = " on the completed episodes"
	}
	dev := r.deviationText()
	if len(r.dominated) > 0 {
		dev += "; **warning: " + r.swampWords() + "** (see Warnings)"
	}
	if r.anyFragile() {
		dev += "; **warning: the sensitivity is fragile** (see Warnings)"
	}
	if len(undecided) > 0 {
		dev = "; inconclusive at this number of runs: " + strings.Join(shortList(undecided), "; ") + dev
	}
	completed := 0
	for _, p := range r.points {
		completed += p.res.Runs
	}
	switch {
	case len(r.checks) == 0:
		fmt.Fprintf(b, "%s no computed checks apply to this run%s.\n\n", head, dev)
	case completed == 0 && len(failing) == 0:
		fmt.Fprintf(b, "%s no episode completed, so no result was checked; the %d checks that need no episode (the calibration) pass%s.\n\n", head, len(r.checks), dev)
	case completed == 0:
		fmt.Fprintf(b, "%s no episode completed, so no result was checked; of the %d checks that need no episode (the calibration), failing: %s%s.\n\n", head, len(r.checks), strings.Join(shortList(failing), ", "), dev)
	case len(failing) == 0 && len(undecided) == 0:
		fmt.Fprintf(b, "%s all %d computed checks pass%s%s.\n\n", head, len(r.checks), scope, dev)
	case len(failing) == 0:
		fmt.Fprintf(b, "%s %d of %d computed checks pass%s, none fails%s.\n\n", head, pass, len(r.checks), scope, dev)
	default:
		fmt.Fprintf(b, "%s %d of %d computed checks pass%s; failing: %s%s.\n\n", head, pass, len(r.checks), scope, strings.Join(shortList(failing), ", "), dev)
	}
}

// shortList keeps the first six of a verdict's list and says how many more there are.
func shortList(l []string) []string {
	if len(l) > 6 {
		return append(l[:6:6], fmt.Sprintf("... %d more", len(l)-6))
	}
	return l
}

// deviationText lists, for the verdict, what misses a tolerance dpsim states though the
// theory does not promise it: the velocity error at T against VelocityTol (the slowest
// closed-loop pole leaves more than that at T with the paper's gains, even without noise).
func (r *analysis) deviationText() string {
	if len(r.deviations) == 0 {
		return ""
	}
	worst := r.deviations[0]
	for _, d := range r.deviations[1:] {
		if d.v > worst.v {
			worst = d
		}
	}
	// What happened comes first (the checks' outcome, in the verdict's head); this note on a
	// target that is no check must not read like a failure.
	s := fmt.Sprintf("; not a check: the velocity error at T = %d is %s max over runs", worst.T, num(worst.v))
	if len(r.deviations) > 1 || r.sweep {
		s = fmt.Sprintf("; not a check: the velocity error at T = %d is up to %s max over runs (%d of %d points; largest at %s)",
			worst.T, num(worst.v), len(r.deviations), len(r.points), worst.point)
	}
	s += ", above the " + num(VelocityTol) + " dpsim states for an exact tracker (the theory does not promise it"
	if worst.rho > 0 {
		s += "; closed-loop pole " + numP(worst.rho, 4)
	}
	s += ")"
	return s
}

func intList(v []int, n int) string {
	parts := make([]string, 0, n+1)
	for i, x := range v {
		if i == n {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(v)))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

func (r *analysis) figuresSection(b *strings.Builder, figs []*figure.Figure) {
	if len(figs) == 0 && len(r.skipped) == 0 {
		return
	}
	b.WriteString("## Figures\n\n")
	if len(r.skipped) > 0 {
		b.WriteString("Not drawn for lack of data:\n\n")
		for _, s := range r.skipped {
			b.WriteString("- " + strings.TrimPrefix(s, "report: ") + "\n")
		}
		b.WriteString("\n")
	}
	for i, f := range figs {
		fmt.Fprintf(b, "### Figure %d: %s\n\n", i+1, f.Name)
		b.WriteString(f.Caption + "\n\n")
		fmt.Fprintf(b, "![%s](%s.png)\n\n", f.Name, f.Name)
		fmt.Fprintf(b, "Vector version: [%s.svg](%s.svg)\n\n", f.Name, f.Name)
	}
}
