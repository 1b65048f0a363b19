package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/scenario"
)

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

// maxInlineProcs is the largest process table report.md shows in its setup section; a larger
// one goes to the appendix.
const maxInlineProcs = 12

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
