package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
)

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

// checkLine prints a check for report.md.
func checkLine(c Check) string {
	switch {
	case c.Pass:
		return "**PASS**: " + c.Text + ": yes"
	case c.Inconclusive:
		return "**INCONCLUSIVE**: " + c.Text + ": " + c.undecided()
	}
	return "**FAIL**: " + c.Text + ": no"
}
