package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/internal/finitejson"
	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
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

// maxInlineProcs is the largest process table report.md shows in its setup section; a larger
// one goes to the appendix.
const maxInlineProcs = 12

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

// setupSection writes the setup: the settings table, the processes and the warnings.
func (r *analysis) setupSection(b *strings.Builder) {
	b.WriteString("## Setup\n\n")
	table(b, []string{"setting", "value"}, r.settingRows())
	if len(r.in.Processes) > 0 {
		r.processTable(b)
	}
	warn := r.warnings()
	if len(warn) > 0 {
		b.WriteString("Warnings:\n\n")
		for _, w := range warn {
			b.WriteString("- " + w + "\n")
		}
		b.WriteString("\n")
	}
}

// settingRows returns the rows of the setup's settings table: the scenario, the run and how it
// was played, then the system.
func (r *analysis) settingRows() [][]string {
	in := r.in
	var rows [][]string
	add := func(k, v string) { rows = append(rows, []string{k, v}) }
	if r.sc != nil {
		src := r.sc.Name
		if r.sc.Source != "" {
			src += " (" + r.sc.Source + ")"
		}
		add("scenario", src)
	}
	add("kind", r.kind)
	add("horizon T", fmt.Sprintf("%d steps", r.rep.res.Steps))
	add("runs", r.runsText())
	if r.sweep {
		add("sweep", r.sweepText())
	}
	add("seed", r.seedText())
	if in.Engine != "" {
		e := in.Engine
		switch in.Engine {
		case "fast":
			e += " (in-process engine, no NATS; same cores and random streams)"
		case "nats":
			e += " (one OS process per role over NATS)"
		}
		add("engine", e)
	}
	if in.Mode != "" {
		m := in.Mode
		if r.sc != nil && in.Mode == string(scenario.Realtime) && r.sc.Transport.Period > 0 {
			m += fmt.Sprintf(" (period %s)", r.sc.Transport.Period)
		}
		add("mode", m)
	}
	if in.NATSURL != "" {
		add("NATS URL", in.NATSURL)
	}
	if in.Elapsed > 0 {
		add("elapsed", duration(in.Elapsed))
	}
	r.systemRows(add)
	return rows
}

// sweepText says how many points the sweep has and which values of which parameters.
func (r *analysis) sweepText() string {
	var sw []string
	if r.sc != nil {
		for _, s := range r.sc.Sweeps {
			vals := make([]string, s.Len())
			for i := range vals {
				vals[i] = s.Value(i)
			}
			sw = append(sw, string(s.Param)+" in {"+strings.Join(vals, ", ")+"}")
		}
	}
	return fmt.Sprintf("%d points: %s", len(r.points), strings.Join(sw, " x "))
}

// processTable writes the run's OS processes with their peak RSS, grouped by point (in the order
// the points first appear), then by role and id; past maxInlineProcs the table goes to the
// appendix and the setup says where.
func (r *analysis) processTable(b *strings.Builder) {
	procs := slices.Clone(r.in.Processes)
	pointOrder := map[string]int{}
	withPoint := false
	for _, p := range procs {
		if _, ok := pointOrder[p.Point]; !ok {
			pointOrder[p.Point] = len(pointOrder)
		}
		withPoint = withPoint || p.Point != ""
	}
	sort.SliceStable(procs, func(i, j int) bool {
		if a, b := pointOrder[procs[i].Point], pointOrder[procs[j].Point]; a != b {
			return a < b
		}
		if procs[i].Role != procs[j].Role {
			return procs[i].Role < procs[j].Role
		}
		return procs[i].ID < procs[j].ID
	})
	var pr [][]string
	var peak int64
	for _, p := range procs {
		row := []string{p.Role, fmt.Sprint(p.ID), fmt.Sprint(p.PID), bytesMiB(p.PeakRSSBytes)}
		if withPoint {
			row = append([]string{p.Point}, row...)
		}
		pr = append(pr, row)
		peak = max(peak, p.PeakRSSBytes)
	}
	header := []string{"role", "id", "pid", "peak RSS"}
	if withPoint {
		header = append([]string{"point"}, header...)
	}
	if len(procs) > maxInlineProcs {
		// A sweep's or a large network's table would bury the setup: it goes to the appendix.
		fmt.Fprintf(b, "Processes: %d, largest peak RSS %s (the table is in the appendix \"Processes\").\n\n", len(procs), bytesMiB(peak))
		fmt.Fprintf(&r.appendix, "## Appendix: processes\n\nEvery OS process of the run (%d; largest peak RSS %s):\n\n", len(procs), bytesMiB(peak))
		table(&r.appendix, header, pr)
	} else {
		fmt.Fprintf(b, "Processes (%d; largest peak RSS %s):\n\n", len(procs), bytesMiB(peak))
		table(b, header, pr)
	}
}

// warnings lists the run's warnings: the scenario's, the plans' graph warnings (once), the
// incomplete episodes and the noise-dominance warning.
func (r *analysis) warnings() []string {
	var warn []string
	if r.sc != nil {
		warn = append(warn, r.sc.Warnings...)
	}
	for _, p := range r.points {
		if p.plan != nil {
			warn = MergeGraphWarnings(warn, p.plan.GraphWarnings)
		}
	}
	for _, p := range r.points {
		if len(p.res.IncompleteEpisodes) > 0 {
			warn = append(warn, fmt.Sprintf("%s%d incomplete episodes were not aggregated: %s", r.prefix(p), len(p.res.IncompleteEpisodes), intList(p.res.IncompleteEpisodes, 10)))
		}
	}
	for _, p := range r.points {
		if nf := finitejson.Find(p.res); nf != nil {
			warn = append(warn, fmt.Sprintf("%sthe metrics overflowed float64 (an unstable loop, or a horizon too long for its growth): %s; "+
				"they are left out of the figures, and the checks that use them fail", r.prefix(p), nf.Brief(3)))
		}
	}
	if w := r.fragileWarning(); w != "" {
		warn = append(warn, w)
	}
	if w := r.dominanceWarning(); w != "" {
		warn = append(warn, w)
	}
	return warn
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

func (r *analysis) runsText() string {
	want := 0
	if r.sc != nil {
		want = r.sc.Runs
	}
	requested := 0
	for _, p := range r.points {
		requested = max(requested, r.in.Points[p.idx].Requested)
	}
	lo, hi := r.points[0].res.Runs, r.points[0].res.Runs
	for _, p := range r.points {
		lo, hi = min(lo, p.res.Runs), max(hi, p.res.Runs)
	}
	s := fmt.Sprint(lo)
	if lo != hi {
		s = fmt.Sprintf("%d to %d", lo, hi)
	}
	if r.sweep {
		s += " per point"
	}
	switch {
	case requested > 0 && lo < requested:
		s += fmt.Sprintf(" completed of %d requested", requested)
	case requested == 0 && want > 0 && hi != want:
		s += fmt.Sprintf(" (the scenario file asks for %d)", want)
	case requested > 0 && want > 0 && requested != want:
		s += fmt.Sprintf(" (--runs; the scenario file asks for %d)", want)
	}
	return s
}

// seedText says where the run seed came from, not its value: the seed decides every noise
// draw, so whoever knows it can subtract the noise; it is recorded in summary.json only (to
// reproduce the run), never in the report one may pass around.
func (r *analysis) seedText() string {
	seed := r.in.Seed
	if seed == 0 {
		seed = r.rep.res.Seed
	}
	switch {
	case r.in.SeedDrawn:
		return "drawn at random for this run (summary.json seed; pass it as --seed to reproduce the run)"
	case r.sc != nil && r.sc.Seed == seed:
		return "fixed in the scenario file"
	}
	return "given on the command line (summary.json seed)"
}

func (r *analysis) systemRows(add func(k, v string)) {
	p := r.rep
	sc := p.sc
	if sc == nil {
		return
	}
	switch r.kind {
	case string(scenario.CloudControl):
		if sc.Plant != nil {
			add("plant", fmt.Sprintf("A = %s, B = %s, C = %s, x(0) = %s", matString(sc.Plant.A), matString(sc.Plant.B), matString(sc.Plant.C), vecString(sc.Plant.X0)))
		}
		if p.plan != nil && p.plan.K != nil {
			add("controller", fmt.Sprintf("u = -K (xhat - x_r), K = %s; observer gain L = %s; reference %s", denseString(p.plan.K), denseString(p.plan.L), sc.Controller.Reference.Kind))
		}
		if p.plan != nil {
			what := "the plant's whole state"
			if sc.Privacy.Model != nil {
				what = "the privacy.model subsystem"
			}
			add("private model", fmt.Sprintf("A_m = %s, C_m = %s (%s)", denseString(p.plan.ModelA), denseString(p.plan.ModelC), what))
		}
	case string(scenario.Consensus):
		if sc.Network != nil {
			g := sc.Network.Name
			if g == "" {
				g = fmt.Sprintf("edge list (%d edges)", len(sc.Network.Edges))
			}
			v := fmt.Sprintf("%s, N = %d agents", g, sc.Network.N)
			if sc.Network.Weight > 0 {
				v += ", weight " + num(sc.Network.Weight)
			}
			if p.res.Consensus != nil && p.res.Consensus.Alpha > 0 {
				v += ", convergence rate alpha = " + numP(p.res.Consensus.Alpha, 4)
			}
			add("graph", v)
		}
		if len(sc.X0) > 0 {
			var s float64
			for _, x := range sc.X0 {
				s += x
			}
			add("x(0)", fmt.Sprintf("%s (average x* = %s)", vecString(sc.X0), num(s/float64(len(sc.X0)))))
		}
	}
}

func matString(m scenario.Matrix) string {
	rows := make([]string, len(m))
	for i, row := range m {
		rows[i] = vecString(row)
	}
	return "[" + strings.Join(rows, ", ") + "]"
}

func vecString(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = numP(x, 4)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// resultsSection writes the results against the paper's bounds: for one point its statements
// and checks, for a sweep the table, the checks across the sweep and every point's statements.
func (r *analysis) resultsSection(b *strings.Builder) {
	b.WriteString("## Results against the paper's bounds\n\n")
	if !r.sweep {
		r.pointResults(b)
		r.extraSection(b)
		return
	}
	r.sweepTable(b)
	// Cross-point comparisons, then each per-point check aggregated over the sweep.
	var lines []string
	for _, c := range r.checks {
		if c.Point == "" && !strings.HasPrefix(c.Name, "calibration") {
			lines = append(lines, checkLine(c))
		}
	}
	for _, a := range r.aggregateChecks() {
		lines = append(lines, r.aggregateLine(a))
	}
	if len(lines) > 0 {
		b.WriteString("Across the sweep:\n\n")
		for _, l := range lines {
			b.WriteString("- " + l + "\n")
		}
		b.WriteString("\n")
	}
	r.everyPointStatements(b)
	r.extraSection(b)
}

// pointResults writes a single point's statements and its checks (the calibration checks are in
// the privacy section).
func (r *analysis) pointResults(b *strings.Builder) {
	p := r.points[0]
	for _, s := range p.resInfo {
		b.WriteString("- " + s + "\n")
	}
	b.WriteString("\n")
	var mine []Check
	for _, c := range r.checks {
		if !strings.HasPrefix(c.Name, "calibration") {
			mine = append(mine, c)
		}
	}
	if len(mine) > 0 {
		b.WriteString("Checks:\n\n")
		for _, c := range mine {
			b.WriteString("- " + checkLine(c) + "\n")
		}
		b.WriteString("\n")
	}
}

// checkAggregate is one per-point check over the points of one series of a sweep.
type checkAggregate struct {
	name, series  string
	subject       string
	total, passed int
	failedAt      []string // axis values where it fails
	undecidedAt   []string // axis values where it is inconclusive
}

// aggregateChecks gathers the per-point checks (but calibration) by name and series, in the
// order of the series.
func (r *analysis) aggregateChecks() []*checkAggregate {
	var aggs []*checkAggregate
	for _, p := range r.points {
		for _, c := range r.checks {
			if c.Point != p.label || strings.HasPrefix(c.Name, "calibration") {
				continue
			}
			ser := r.seriesLabels[p.series]
			var a *checkAggregate
			for _, x := range aggs {
				if x.name == c.Name && x.series == ser {
					a = x
				}
			}
			if a == nil {
				a = &checkAggregate{name: c.Name, series: ser, subject: c.subject}
				aggs = append(aggs, a)
			}
			a.total++
			switch {
			case c.Pass:
				a.passed++
			case c.Inconclusive:
				a.undecidedAt = append(a.undecidedAt, p.values[r.axisParam])
			default:
				a.failedAt = append(a.failedAt, p.values[r.axisParam])
			}
		}
	}
	slices.SortStableFunc(aggs, func(x, y *checkAggregate) int {
		return slices.Index(r.seriesLabels, x.series) - slices.Index(r.seriesLabels, y.series)
	})
	return aggs
}

// aggregateLine states an aggregated check: how many points pass, and where it fails or is
// inconclusive.
func (r *analysis) aggregateLine(a *checkAggregate) string {
	d := ruleOf(a.name).summary(a.subject)
	where := "at every " + r.axisParam
	if a.series != "" {
		where += " for " + a.series
	}
	text := fmt.Sprintf("%s %s (%d of %d points)", d, where, a.passed, a.total)
	if len(a.failedAt) > 0 {
		text += "; fails at " + r.axisParam + " = " + strings.Join(a.failedAt, ", ")
	}
	if len(a.undecidedAt) > 0 {
		text += "; inconclusive at this number of runs at " + r.axisParam + " = " + strings.Join(a.undecidedAt, ", ")
	}
	return checkLine(Check{Pass: a.passed == a.total, Inconclusive: len(a.failedAt) == 0, Text: text})
}

// everyPointStatements writes, folded, every point's statements and checks.
func (r *analysis) everyPointStatements(b *strings.Builder) {
	b.WriteString("<details><summary>Every point's statements</summary>\n\n")
	for _, p := range r.points {
		fmt.Fprintf(b, "**%s**\n\n", p.label)
		for _, s := range p.resInfo {
			b.WriteString("- " + s + "\n")
		}
		for _, c := range r.checks {
			if c.Point == p.label && !strings.HasPrefix(c.Name, "calibration") {
				b.WriteString("- " + checkLine(c) + "\n")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("</details>\n\n")
}

func (r *analysis) sweepTable(b *strings.Builder) {
	var header []string
	var rows [][]string
	switch r.kind {
	case string(scenario.CloudControl):
		header = []string{"point", "noise scale"}
		for _, c := range r.comps {
			header = append(header, fmt.Sprintf("final E[(%s - %s_r)^2]", c, c))
		}
		header = append(header, "eavesdropper late/early")
		for _, p := range r.points {
			row := []string{p.label, numP(p.res.NoiseScale, 4)}
			for i := range r.comps {
				if fs := p.res.Control.FinalSqError; i == 0 && r.offsetChecked(p) && fs[0].N > 1 {
					// The interval the position-offset check decides on, named.
					h := OffsetZ * fs[0].SE
					row = append(row, fmt.Sprintf("%s [%s, %s] (%s)", num(fs[0].Mean), num(fs[0].Mean-h), num(fs[0].Mean+h), pct(OffsetLevel)))
				} else if i < len(fs) {
					row = append(row, ci(fs[i]))
				} else {
					row = append(row, "n/a")
				}
			}
			row = append(row, eveRatioText(p))
			rows = append(rows, row)
		}
	case string(scenario.Consensus):
		header = []string{"point", "sigma_i (b_i)", "final E||x(T) - 1x*||^2", "Prop. 1 bound", "upper 95% limit < bound", "sum deviation", "eavesdropper late/early"}
		for _, p := range r.points {
			c := p.res.Consensus
			rows = append(rows, []string{p.label, numP(p.res.NoiseScale, 4), ci(c.FinalSqDeviation), num(c.Prop1Bound),
				prop1Text(c.FinalSqDeviation, c.Prop1Bound), num(c.SumRelDevMax), eveRatioText(p)})
		}
	}
	table(b, header, rows)
	if r.kind == string(scenario.CloudControl) && r.anyOffsetChecked() {
		fmt.Fprintf(b, "Intervals are 95%% unless marked: the %s ones are those the position-offset check decides on.\n\n", pct(OffsetLevel))
	}
}

// anyOffsetChecked reports whether the position-offset check applies at some point.
func (r *analysis) anyOffsetChecked() bool {
	for _, p := range r.points {
		if r.offsetChecked(p) {
			return true
		}
	}
	return false
}

func eveRatioText(p *pointInfo) string {
	early, late, _, _, ok := eveTrend(eveSeries(p))
	if !ok {
		return "n/a"
	}
	return num(safeRatio(late, early))
}

func (r *analysis) extraSection(b *strings.Builder) {
	if len(r.in.Extra) == 0 {
		return
	}
	keys := make([]string, 0, len(r.in.Extra))
	for k := range r.in.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows [][]string
	for _, k := range keys {
		rows = append(rows, []string{k, num(r.in.Extra[k])})
	}
	b.WriteString("Other numbers:\n\n")
	table(b, []string{"quantity", "value"}, rows)
}

func (r *analysis) transportSection(b *strings.Builder) {
	in := r.in
	if len(in.Invalid) == 0 && len(in.Stale) == 0 && in.Timing == nil {
		return
	}
	b.WriteString("## Transport\n\n")
	r.invalidTable(b)
	staleTable(b, in.Stale)
	if in.Timing != nil {
		fl, err := flatten(in.Timing)
		if len(fl) == 1 && fl[0] == [2]string{"value", "null"} {
			fl = nil
		}
		if err != nil {
			fmt.Fprintf(b, "Timing statistics could not be printed: %v\n\n", err)
		} else if len(fl) > 0 {
			b.WriteString("Timing (as reported by the processes; overruns and late messages are not hidden):\n\n")
			var rows [][]string
			for _, kv := range fl {
				rows = append(rows, []string{kv[0], kv[1]})
			}
			table(b, []string{"statistic", "value"}, rows)
		}
	}
}

// invalidTable lists the invalid-message counters: messages that were wrong.
func (r *analysis) invalidTable(b *strings.Builder) {
	in := r.in
	if len(in.Invalid) == 0 {
		return
	}
	keys := make([]string, 0, len(in.Invalid))
	for k := range in.Invalid {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows [][]string
	for _, k := range keys {
		fl, err := flatten(in.Invalid[k])
		if err != nil {
			rows = append(rows, []string{k, "unprintable: " + err.Error()})
			continue
		}
		for _, kv := range fl {
			key := k
			if kv[0] != "value" {
				key += "." + kv[0]
			}
			rows = append(rows, []string{key, kv[1]})
		}
	}
	late := "they are counted as stale, below"
	if len(in.Stale) == 0 {
		late = "they are counted as stale; none were here"
	}
	fmt.Fprintf(b, "Invalid messages: messages that were wrong - malformed, corrupt (a wrong dimension, a non-finite value), "+
		"forged or failing signature verification - counted, logged and dropped by the receivers. "+
		"Messages that were merely late for their episode are not among them (%s).\n\n", late)
	table(b, []string{"counter", "count"}, rows)
}

// staleTable lists, per process, the messages that arrived for an episode the receiver had
// already finished.
func staleTable(b *strings.Builder, stale map[string]uint64) {
	if len(stale) == 0 {
		return
	}
	keys := make([]string, 0, len(stale))
	var total uint64
	for k, v := range stale {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k, fmt.Sprint(stale[k])})
	}
	fmt.Fprintf(b, "Stale messages (%d): messages that arrived for an episode the receiver had already finished - late deliveries of a "+
		"previous episode's last steps (a delayed link, a lagging process). Each was compared with the copy of the same sender, episode and "+
		"step that the receiver used: one that differs is a conflict (forged or corrupted; see the link counters), one that agrees is a "+
		"timing effect, counted apart from the invalid ones and dropped, as the episode it belongs to is over.\n\n", total)
	table(b, []string{"process", "stale"}, rows)
}

// securitySection says how the run's traffic was secured (Input.Security; none for the fast
// engine, which has no traffic).
func (r *analysis) securitySection(b *strings.Builder) {
	s := r.in.Security
	if s == nil {
		return
	}
	b.WriteString("## Security\n\n")
	server := s.Server
	switch s.Server {
	case "embedded":
		server += " (the launcher's own NATS server"
		if s.Cluster > 1 {
			server += fmt.Sprintf("s: a cluster of %d joined by routes", s.Cluster)
		}
		server += ")"
	case "external":
		server += " (--nats-url / NATS_URL: a server the launcher does not control)"
	}
	perm := "no: any client of the server may publish on the run's subjects"
	if s.Permissions {
		perm = "yes: a NATS user per role, allowed to publish and subscribe only on its own subjects"
	} else if s.Server == "external" {
		perm = "not known: the operator of the external server configures them, the launcher cannot see them"
	}
	signed := "no"
	if s.Signed {
		signed = "yes: every data and control message carries an ed25519 signature of its sender"
	}
	auth := "no: a message claiming to come from a process is taken at its word"
	if s.Permissions {
		auth = "by the server only: no signatures, but the per-role permissions let only a process's own NATS user publish on its " +
			"subjects, and a receiver drops a message whose sender disagrees with its subject"
	}
	if s.Authenticated {
		auth = "yes: receivers verified every signature and dropped what failed, so the data used came from the processes the launcher started"
	}
	tls := s.TLS
	switch s.TLS {
	case "off", "":
		tls = "off: traffic is in clear text"
	case "auto":
		tls = "auto: the embedded server's throwaway CA"
	case "external":
		tls = "external: the CA and certificates given with --tls-ca"
	}
	strict := "no: a conflicting copy of a message degrades the run (counted as a conflict)"
	if s.Strict {
		strict = "yes (--strict): a conflicting copy of a message (forged or corrupted traffic) fails the run"
	}
	cluster := "1 server"
	if s.Cluster > 1 {
		cluster = fmt.Sprintf("%d servers", s.Cluster)
	}
	table(b, []string{"setting", "value"}, [][]string{{"server", server}, {"cluster", cluster}, {"permissions", perm},
		{"signed", signed}, {"authenticated", auth}, {"TLS", tls}, {"strict", strict}})
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

// prop1Text answers the sweep table's "upper 95% limit < bound": yes, no (the whole interval
// is above the bound) or inconclusive (the interval straddles it).
func prop1Text(fs metrics.Stat, bound float64) string {
	switch {
	case fs.N == 0:
		return "no"
	case fs.Hi < bound:
		return "yes"
	case fs.Lo < bound:
		return "inconclusive"
	}
	return "no"
}
