package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// describe is the generic wording of each check name, for sweep summaries.
var describe = map[string]string{
	"calibration":          "the calibration satisfies its defining inequality",
	"calibration-lmi":      "the optimal Sigma satisfies every LMI (12)",
	"velocity-vanishes":    "the velocity error vanishes (MSE at T below 1e-4 of its peak)",
	"position-offset":      "the final position MSE agrees with the offset variance",
	"position-bounded":     "the tracking error stays bounded in mean square",
	"eve-flat":             "the eavesdropper's error stays flat",
	"eve-shrinks":          "the eavesdropper's error shrinks (the leak)",
	"prop1-bound":          "the final E||x(T) - 1x*||^2 is below the Proposition 1 bound",
	"mean-deviation":       "E[x_i(T) - x*] -> 0",
	"sum-preserved":        "the network sum is preserved to 1e-9",
	"structured-beats-iid": "structured noise beats iid-calibrated",
}

// markdown writes report.md.
func (r *run) markdown(figs []*Figure) []byte {
	var b strings.Builder
	name := "dpsim run"
	if r.sc != nil {
		name = r.sc.Name
	}
	fmt.Fprintf(&b, "# %s\n\n", name)
	if r.sc != nil && strings.TrimSpace(r.sc.Description) != "" {
		b.WriteString(strings.TrimSpace(r.sc.Description) + "\n\n")
	}
	b.WriteString("Monte Carlo numbers are means over the runs with their 95% confidence intervals as mean [lo, hi] " +
		"(normal approximation). Every PASS/FAIL below is computed from this run's numbers; PASS means the run agrees with what the theory predicts.\n\n")
	r.verdict(&b)
	r.setupSection(&b)
	r.privacySection(&b)
	r.resultsSection(&b)
	r.transportSection(&b)
	r.figuresSection(&b, figs)
	return []byte(b.String())
}

func (r *run) verdict(b *strings.Builder) {
	pass := 0
	var failing []string
	for _, c := range r.checks {
		if c.Pass {
			pass++
			continue
		}
		f := c.Name
		if c.Point != "" {
			f += " (" + c.Point + ")"
		}
		failing = append(failing, f)
	}
	switch {
	case len(r.checks) == 0:
		b.WriteString("**Verdict:** no computed checks apply to this run.\n\n")
	case len(failing) == 0:
		fmt.Fprintf(b, "**Verdict:** all %d computed checks pass.\n\n", len(r.checks))
	default:
		if len(failing) > 6 {
			failing = append(failing[:6], fmt.Sprintf("... %d more", len(failing)-6))
		}
		fmt.Fprintf(b, "**Verdict:** %d of %d computed checks pass; failing: %s.\n\n", pass, len(r.checks), strings.Join(failing, ", "))
	}
}

func (r *run) setupSection(b *strings.Builder) {
	in := r.in
	b.WriteString("## Setup\n\n")
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
		add("sweep", fmt.Sprintf("%d points: %s", len(r.points), strings.Join(sw, " x ")))
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
	table(b, []string{"setting", "value"}, rows)

	if len(in.Processes) > 0 {
		procs := slices.Clone(in.Processes)
		sort.SliceStable(procs, func(i, j int) bool {
			if procs[i].Role != procs[j].Role {
				return procs[i].Role < procs[j].Role
			}
			return procs[i].ID < procs[j].ID
		})
		var pr [][]string
		var peak int64
		for _, p := range procs {
			pr = append(pr, []string{p.Role, fmt.Sprint(p.ID), fmt.Sprint(p.PID), bytesMiB(p.PeakRSSBytes)})
			peak = max(peak, p.PeakRSSBytes)
		}
		fmt.Fprintf(b, "Processes (%d; largest peak RSS %s):\n\n", len(procs), bytesMiB(peak))
		table(b, []string{"role", "id", "pid", "peak RSS"}, pr)
	}

	var warn []string
	if r.sc != nil {
		warn = append(warn, r.sc.Warnings...)
	}
	seen := map[string]bool{}
	for _, p := range r.points {
		if p.plan != nil {
			for _, w := range p.plan.GraphWarnings {
				if !seen[w] && !slices.Contains(warn, w) {
					warn = append(warn, w)
				}
				seen[w] = true
			}
		}
		if len(p.res.IncompleteEpisodes) > 0 {
			warn = append(warn, fmt.Sprintf("%s%d incomplete episodes were not aggregated: %s", r.prefix(p), len(p.res.IncompleteEpisodes), intList(p.res.IncompleteEpisodes, 10)))
		}
	}
	if len(warn) > 0 {
		b.WriteString("Warnings:\n\n")
		for _, w := range warn {
			b.WriteString("- " + w + "\n")
		}
		b.WriteString("\n")
	}
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

func (r *run) runsText() string {
	want := 0
	if r.sc != nil {
		want = r.sc.Runs
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
	if want > 0 && hi != want {
		s += fmt.Sprintf(" (the scenario file asks for %d)", want)
	}
	return s
}

func (r *run) seedText() string {
	seed := r.in.Seed
	if seed == 0 {
		seed = r.rep.res.Seed
	}
	switch {
	case r.in.SeedDrawn:
		return fmt.Sprintf("%d (drawn at random for this run; pass --seed %d to reproduce it)", seed, seed)
	case r.sc != nil && r.sc.Seed == seed:
		return fmt.Sprintf("%d (fixed in the scenario file)", seed)
	}
	return fmt.Sprintf("%d (given on the command line)", seed)
}

func (r *run) systemRows(add func(k, v string)) {
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

func (r *run) resultsSection(b *strings.Builder) {
	b.WriteString("## Results against the paper's bounds\n\n")
	if !r.sweep {
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
	type agg struct {
		name, series  string
		total, passed int
		failedAt      []string
	}
	var aggs []*agg
	for _, p := range r.points {
		for _, c := range r.checks {
			if c.Point != p.label || strings.HasPrefix(c.Name, "calibration") {
				continue
			}
			ser := r.seriesLabels[p.series]
			var a *agg
			for _, x := range aggs {
				if x.name == c.Name && x.series == ser {
					a = x
				}
			}
			if a == nil {
				a = &agg{name: c.Name, series: ser}
				aggs = append(aggs, a)
			}
			a.total++
			if c.Pass {
				a.passed++
			} else {
				a.failedAt = append(a.failedAt, p.values[r.axisParam])
			}
		}
	}
	slices.SortStableFunc(aggs, func(x, y *agg) int {
		return slices.Index(r.seriesLabels, x.series) - slices.Index(r.seriesLabels, y.series)
	})
	for _, a := range aggs {
		d := describe[a.name]
		if d == "" {
			d = a.name
		}
		where := "at every " + r.axisParam
		if a.series != "" {
			where += " for " + a.series
		}
		text := fmt.Sprintf("%s %s (%d of %d points)", d, where, a.passed, a.total)
		if len(a.failedAt) > 0 {
			text += "; fails at " + r.axisParam + " = " + strings.Join(a.failedAt, ", ")
		}
		lines = append(lines, checkLine(Check{Pass: a.passed == a.total, Text: text}))
	}
	if len(lines) > 0 {
		b.WriteString("Across the sweep:\n\n")
		for _, l := range lines {
			b.WriteString("- " + l + "\n")
		}
		b.WriteString("\n")
	}
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
	r.extraSection(b)
}

func (r *run) sweepTable(b *strings.Builder) {
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
				if i < len(p.res.Control.FinalSqError) {
					row = append(row, ci(p.res.Control.FinalSqError[i]))
				} else {
					row = append(row, "n/a")
				}
			}
			row = append(row, eveRatioText(p))
			rows = append(rows, row)
		}
	case string(scenario.Consensus):
		header = []string{"point", "sigma_i (b_i)", "final E||x(T) - 1x*||^2", "Prop. 1 bound", "below", "sum deviation", "eavesdropper late/early"}
		for _, p := range r.points {
			c := p.res.Consensus
			rows = append(rows, []string{p.label, numP(p.res.NoiseScale, 4), ci(c.FinalSqDeviation), num(c.Prop1Bound),
				yesNo(c.FinalSqDeviation.N > 0 && c.FinalSqDeviation.Hi < c.Prop1Bound), num(c.SumRelDevMax), eveRatioText(p)})
		}
	}
	table(b, header, rows)
}

func eveRatioText(p *pointInfo) string {
	early, late, _, _, ok := eveTrend(eveSeries(p))
	if !ok {
		return "n/a"
	}
	return num(safeRatio(late, early))
}

func (r *run) extraSection(b *strings.Builder) {
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

func (r *run) transportSection(b *strings.Builder) {
	in := r.in
	if len(in.Invalid) == 0 && in.Timing == nil {
		return
	}
	b.WriteString("## Transport\n\n")
	if len(in.Invalid) > 0 {
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
		b.WriteString("Invalid messages (counted, logged and dropped by the receivers):\n\n")
		table(b, []string{"counter", "count"}, rows)
	}
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

func (r *run) figuresSection(b *strings.Builder, figs []*Figure) {
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
