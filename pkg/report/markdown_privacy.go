package report

import (
	"fmt"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// maxCompare bounds the points for which the other adjacency is resolved (plan.New per point).
const maxCompare = 8

// privacySection writes the privacy budget and calibration.
func (r *analysis) privacySection(b *strings.Builder) {
	b.WriteString("## Privacy budget and calibration\n\n")
	r.privacyTable(b)
	r.samplerLines(b)
	r.wholeRun(b)
	r.noiseDesignLines(b)
	r.worstPairLines(b)
	r.conditioningLines(b)
	r.calibrationLines(b)
	r.adjacencySection(b)
}

// privacyTable writes the table of every point's budget, calibration and noise, and what its
// numbers mean.
func (r *analysis) privacyTable(b *strings.Builder) {
	var rows [][]string
	for _, p := range r.points {
		row := r.privacyRow(p)
		if r.sweep {
			row = append(row, r.calibrationStatus(p))
		}
		rows = append(rows, row)
	}
	header := []string{"point", "mechanism", "eps", "delta", "mu", "adjacency", "calibration", "noise",
		"sensitivity Delta", "sigma (b for Laplace)", "kappa_eps^-1(delta)", "rank condition (8)"}
	if r.sweep {
		header = append(header, "guarantee check")
	}
	table(b, header, rows)
	b.WriteString("The sensitivity is in the units of the noise design: for `structured` noise Lambda_bar = O_T, so Delta is the " +
		"largest initial-state difference ||Lambda_bar^+ F (x - x')|| of a unit adjacent pair (Theorem 3, comparable with the paper's numbers); " +
		"for `iid-calibrated` noise it is the output difference over the whole released trajectory (Theorem 1 with Lambda = sigma I); " +
		"for `iid-naive` noise the output difference of one single release. " +
		"Gaussian: (eps, delta)-DP iff mu Delta / sigma <= kappa_eps^-1(delta) (eq. 7); Laplace: eps-DP iff mu Delta_L / b <= eps (eq. 14).\n\n")
}

// noiseDesignLines states the optimal Sigma (Algorithm 1) where it is a matrix.
func (r *analysis) noiseDesignLines(b *strings.Builder) {
	var sig []string
	for _, p := range r.points {
		if p.plan == nil || p.plan.Gaussian == nil || p.plan.Gaussian.Sigma == nil {
			continue
		}
		g := p.plan.Gaussian
		if g.Sigma.SymmetricDim() < 2 {
			continue
		}
		s := fmt.Sprintf("optimal Sigma = %s: trace(O_T Sigma O_T^T) = %s against %s for the scalar choice sigma^2 I (%s%% saved), "+
			"max LMI (12) violation %s", symString(g.Sigma), numP(g.TraceOptimal, 4), numP(g.TraceScalar, 4),
			numP(g.TraceSavedPercent, 3), num(g.MaxLMIViolation))
		if g.ScalarIsOptimal {
			s += "; the scalar choice is optimal here"
		}
		sig = append(sig, r.prefix(p)+s)
	}
	if len(sig) > 0 {
		b.WriteString("Noise design (Algorithm 1):\n\n")
		for _, s := range sig {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	} else if r.anyStructuredGaussian() {
		b.WriteString("Noise design (Algorithm 1): the private model has one state (r = 1), so Sigma = sigma^2 is a scalar and the scalar choice is optimal.\n\n")
	}
}

// textGroup is one text (a worst adjacent pair's description, a conditioning statement) and the
// points it describes.
type textGroup struct {
	text   string
	points []string
}

// addToGroup adds point label to the group of text t in groups (a new group at the end when none
// has t yet): groups in the order first seen.
func addToGroup(groups []*textGroup, t, label string) []*textGroup {
	for _, g := range groups {
		if g.text == t {
			g.points = append(g.points, label)
			return groups
		}
	}
	return append(groups, &textGroup{text: t, points: []string{label}})
}

// worstPairGroups groups the points' worst adjacent pairs by identical description, in the order
// first seen.
func (r *analysis) worstPairGroups() []*textGroup {
	var groups []*textGroup
	for _, p := range r.points {
		if p.plan == nil {
			continue
		}
		groups = addToGroup(groups, r.worstWords(p), p.label)
	}
	return groups
}

// worstPairLines states the worst adjacent pairs, one line per distinct description.
func (r *analysis) worstPairLines(b *strings.Builder) {
	groups := r.worstPairGroups()
	if len(groups) > 0 {
		b.WriteString("Worst adjacent pair (the pair that attains the sensitivity; the auditor replays it):\n\n")
		for _, g := range groups {
			if r.sweep {
				fmt.Fprintf(b, "- %s: %s\n", pointList(g.points, len(r.points)), g.text)
			} else {
				fmt.Fprintf(b, "- %s\n", g.text)
			}
		}
		b.WriteString("\n")
	}
}

// calibrationLines writes the calibration checks and honest statements about unsound baselines.
func (r *analysis) calibrationLines(b *strings.Builder) {
	var info []string
	for _, p := range r.points {
		if p.calInfo != "" {
			info = append(info, r.prefix(p)+p.calInfo)
		}
	}
	var mine []Check
	for _, c := range r.checks {
		if strings.HasPrefix(c.Name, "calibration") && !r.sweep {
			mine = append(mine, c)
		}
	}
	if r.sweep {
		b.WriteString("The guarantee check column is PASS when the noise satisfies the defining inequality of Theorem 1 (Gaussian: " +
			"kappa_eps(mu Delta / sigma) <= delta, and every LMI (12) for an optimal Sigma) or Theorem 2 (Laplace: mu Delta_L / b <= eps).\n\n")
		if len(info) > 0 {
			b.WriteString("Baselines without the claimed guarantee:\n\n")
		}
	} else if len(mine) > 0 || len(info) > 0 {
		b.WriteString("Calibration, checked against the defining inequality:\n\n")
	}
	for _, c := range mine {
		b.WriteString("- " + checkLine(c) + "\n")
	}
	for _, s := range info {
		b.WriteString("- " + s + "\n")
	}
	if len(mine) > 0 || len(info) > 0 {
		b.WriteString("\n")
	}
}

// wholeRun states the guarantee of the whole run: its k episodes release the same secret with fresh
// noise, and an eavesdropper who combines them sees their composition (docs/math.md section 9).
func (r *analysis) wholeRun(b *strings.Builder) {
	var lines []string
	for _, p := range r.points {
		pl := p.plan
		if pl == nil || pl.Noise == noise.None {
			continue
		}
		k := r.in.Points[p.idx].Requested
		if p.res != nil && p.res.Runs > k {
			k = p.res.Runs
		}
		if k < 1 {
			continue
		}
		pr := pl.Scenario.Privacy
		g, err := pl.RunGuarantee(k)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s%d episodes: the whole run's guarantee could not be computed: %v", r.prefix(p), k, err))
			continue
		}
		s := fmt.Sprintf("%sper episode (eps = %s, delta = %s); the %d episodes together: eps_run = %s at delta = %s, by %s composition",
			r.prefix(p), numP(pr.Epsilon, 4), numP(pr.Delta, 3), k, numP(g.EpsilonRun, 4), numP(g.DeltaRun, 3), g.Composition)
		if g.Mechanism == privacy.Gaussian {
			s += fmt.Sprintf(" (each episode is exactly mu_episode = %s-GDP, the run sqrt(%d) mu_episode = %s-GDP)", numP(g.MuEpisode, 4), k, numP(g.MuRun, 4))
		} else {
			s += " (the optimal composition of k pure eps-DP mechanisms, Kairouz, Oh & Viswanath 2015, Theorem 3.3)"
		}
		if pr.Episodes > 0 {
			s += fmt.Sprintf("; calibrated for the whole run: privacy.run_epsilon = %s over privacy.episodes = %d", numP(pr.RunEpsilon, 4), pr.Episodes)
			if k > pr.Episodes {
				s += fmt.Sprintf(", but the run played %d episodes, beyond the budget", k)
			}
		}
		if pl.Noise == noise.IIDNaive {
			s += "; iid-naive noise does not hold its per-episode budget over T, and the run is composed from what it gives over all T releases"
		}
		lines = append(lines, s)
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Whole run: every episode releases the same secret with fresh noise, so an eavesdropper who combines the episodes sees their " +
		"composition (docs/math.md section 9; Gaussian: k releases of a mu-GDP mechanism are exactly sqrt(k) mu-GDP, Dong, Roth & Su 2022, Cor. 3.3):\n\n")
	for _, s := range lines {
		b.WriteString("- " + s + "\n")
	}
	b.WriteString("\n")
}

// calibrationStatus summarises a point's calibration checks for the sweep table.
func (r *analysis) calibrationStatus(p *pointInfo) string {
	if p.plan == nil {
		return "n/a"
	}
	switch p.plan.Noise {
	case noise.None:
		return "none: no guarantee"
	case noise.IIDNaive:
		if p.naiveEps > 0 {
			return fmt.Sprintf("unsound over T: eps' = %s", numP(p.naiveEps, 3))
		}
		return "unsound over T"
	}
	n, pass := 0, true
	for _, c := range r.checks {
		if c.Point == p.label && strings.HasPrefix(c.Name, "calibration") {
			n++
			pass = pass && c.Pass
		}
	}
	switch {
	case n == 0:
		return "n/a"
	case pass:
		return "PASS"
	}
	return "FAIL"
}

func (r *analysis) anyStructuredGaussian() bool {
	for _, p := range r.points {
		if p.plan != nil && p.plan.Gaussian != nil {
			return true
		}
	}
	return false
}

// prefix labels a statement with its point in a sweep.
func (r *analysis) prefix(p *pointInfo) string {
	if !r.sweep {
		return ""
	}
	return p.label + ": "
}

func pointList(pts []string, total int) string {
	if len(pts) == total && total > 1 {
		return "every point"
	}
	if len(pts) > 4 {
		return fmt.Sprintf("%s, %s, ... (%d points)", pts[0], pts[1], len(pts))
	}
	return strings.Join(pts, "; ")
}

func (r *analysis) privacyRow(p *pointInfo) []string {
	res := p.res
	label := p.label
	if pl := p.plan; pl != nil {
		pr := pl.Scenario.Privacy
		cal := "-"
		kinv := "-"
		if pl.Mechanism == privacy.Gaussian {
			cal = string(pr.Calibration)
			kinv = numP(pl.KappaInv, 4)
		}
		rank := "holds"
		if pl.RankErr != nil {
			rank = "FAILS: " + pl.RankErr.Error()
		}
		scale := numP(pl.Scale, 4)
		if pl.Noise == noise.None {
			scale = "0 (none)"
		}
		return []string{label, string(pl.Mechanism), numP(pr.Epsilon, 4), numP(pr.Delta, 3), numP(pr.Mu, 3), string(pl.Adjacency), cal,
			string(pl.Noise), numP(pl.Sensitivity.Value, 4), scale, kinv, rank}
	}
	cal := res.Calibration
	if cal == "" {
		cal = "-"
	}
	return []string{label, res.Mechanism, numP(res.Epsilon, 4), numP(res.Delta, 3), numP(res.Mu, 3), res.Adjacency, cal, res.Noise,
		"n/a", numP(res.NoiseScale, 4), "n/a", "n/a"}
}

// modelNames names the private model's state components.
func (r *analysis) modelNames(p *pointInfo) []string {
	n, _ := p.plan.ModelA.Dims()
	if r.kind == string(scenario.Consensus) {
		return []string{"x_i"}
	}
	if p.sc != nil && p.sc.Privacy.Model == nil && len(r.comps) == n {
		return r.comps
	}
	if n == 1 {
		return []string{"z"}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("z%d", i) // 0-based, as every index in the report
	}
	return out
}

// worstWords describes the worst adjacent pair of a plan in words.
func (r *analysis) worstWords(p *pointInfo) string {
	pl := p.plan
	w := pl.Sensitivity.Worst
	mu := pl.Scenario.Privacy.Mu
	names := r.modelNames(p)
	nx := len(names)
	coord := func(k int) string {
		if nx == 0 {
			return fmt.Sprintf("coordinate %d", k)
		}
		return fmt.Sprintf("%s(%d)", names[k%nx], k/nx)
	}
	var s string
	switch {
	case pl.Noise == noise.IIDNaive:
		s = fmt.Sprintf("one release: %s changes by mu = %s", coord(w.Coordinate), num(mu))
	case w.Time >= 0 && w.Component >= 0 && w.Component < nx:
		s = fmt.Sprintf("%s(%d) changes by mu = %s", names[w.Component], w.Time, num(mu))
	default:
		s = fmt.Sprintf("coordinate %d changes by mu = %s", w.Coordinate, num(mu))
	}
	if pl.Noise != noise.IIDNaive {
		if len(w.FreeSet) > 0 {
			var fs []string
			for i, k := range w.FreeSet {
				if i == 6 {
					fs = append(fs, fmt.Sprintf("... (%d in all)", len(w.FreeSet)))
					break
				}
				fs = append(fs, coord(k))
			}
			s += " with the free coordinates {" + strings.Join(fs, ", ") + "} (the other free coordinates stay)"
		}
		s += " and the rest of the trajectory follows the dynamics"
		if r.kind == string(scenario.Consensus) {
			s += " (ker D_i = span(1_T): agent i's whole trajectory shifts)"
		}
	}
	if len(w.Diff) > 0 {
		s += "; x - x' = " + privacy.FormatVector(scaled(w.Diff, mu)) + " (sparse notation over the stacked trajectory: eK:v is entry K, 0-based, with value v; \"+N more nonzero of M\" counts the nonzero entries not shown, M the vector's length)"
	}
	if len(w.Param) > 0 {
		switch pl.Noise {
		case noise.Structured, noise.None:
			s += "; as an initial-state difference: " + privacy.FormatVector(scaled(w.Param, mu))
		default:
			s += "; output difference: " + privacy.FormatVector(scaled(w.Param, mu))
		}
	}
	return s
}

func scaled(v []float64, a float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = a * x
	}
	return out
}

func symString(s *mat.SymDense) string {
	n := s.SymmetricDim()
	rows := make([]string, n)
	for i := 0; i < n; i++ {
		cells := make([]string, n)
		for j := 0; j < n; j++ {
			cells[j] = numP(s.At(i, j), 4)
		}
		rows[i] = "[" + strings.Join(cells, ", ") + "]"
	}
	return "[" + strings.Join(rows, ", ") + "]"
}

func denseString(m *mat.Dense) string {
	if m == nil {
		return "-"
	}
	r, c := m.Dims()
	rows := make([]string, r)
	for i := 0; i < r; i++ {
		cells := make([]string, c)
		for j := 0; j < c; j++ {
			cells[j] = numP(m.At(i, j), 4)
		}
		rows[i] = "[" + strings.Join(cells, ", ") + "]"
	}
	return "[" + strings.Join(rows, ", ") + "]"
}

// fullStatePrivate reports whether a control point protects the plant's whole state (the
// private model is the plant itself, with more than one state).
func (r *analysis) fullStatePrivate(p *pointInfo) bool {
	if r.kind != string(scenario.CloudControl) || p.plan == nil || p.plan.System == nil {
		return false
	}
	n, _ := p.plan.ModelA.Dims()
	return n > 1 && n == p.plan.System.Nx() && mat.Equal(p.plan.ModelA, p.plan.System.A)
}

// adjacencySection writes the manifold vs block table for full-state control scenarios.
func (r *analysis) adjacencySection(b *strings.Builder) {
	var pts []*pointInfo
	for _, p := range r.points {
		if r.fullStatePrivate(p) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return
	}
	if len(pts) > maxCompare {
		pts = []*pointInfo{r.rep}
		if !r.fullStatePrivate(r.rep) {
			return
		}
	}
	b.WriteString("### Manifold vs block adjacency\n\n")
	b.WriteString("The whole state is private, so the two adjacency notions differ (docs/math.md section 1): `manifold` is Definition 4 over " +
		"every valid index set (a free set may mix time steps), `block` only the T block index sets of Theorem 3 (one time step's state changes).\n\n")
	var rows [][]string
	var notes []string
	for _, p := range pts {
		other := privacy.Block
		if p.plan.Adjacency == privacy.Block {
			other = privacy.Manifold
		}
		op, err := plan.New(p.sc, plan.Options{Adjacency: other})
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s%s adjacency could not be resolved: %v", r.prefix(p), other, err))
			continue
		}
		for _, q := range []*plan.Plan{p.plan, op} {
			used := "no"
			if q == p.plan {
				used = "yes (this run)"
			}
			tr := "-"
			if q.Gaussian != nil {
				tr = numP(q.Gaussian.TraceOptimal, 4)
			}
			rows = append(rows, []string{p.label, string(q.Adjacency), numP(q.Sensitivity.Value, 4), numP(q.Scale, 4), tr, used})
		}
		man, blk := p.plan, op
		if p.plan.Adjacency == privacy.Block {
			man, blk = op, p.plan
		}
		notes = append(notes, r.prefix(p)+underCalibration(man, blk))
	}
	table(b, []string{"point", "adjacency", "sensitivity Delta", "scalar sigma (b)", "trace(O_T Sigma O_T^T)", "used"}, rows)
	for _, n := range notes {
		b.WriteString(n + "\n\n")
	}
}

// underCalibration states, with numbers, what block-calibrated noise gives under manifold adjacency.
func underCalibration(man, blk *plan.Plan) string {
	pr := man.Scenario.Privacy
	ratio := man.Sensitivity.Value / blk.Sensitivity.Value
	s := fmt.Sprintf("Manifold adjacency needs a sensitivity %s times the block one (%s against %s), and the noise scales with it (sigma %s against %s). "+
		"Calibrating for block and claiming manifold therefore under-calibrates",
		numP(ratio, 3), numP(man.Sensitivity.Value, 4), numP(blk.Sensitivity.Value, 4), numP(man.Scale, 4), numP(blk.Scale, 4))
	eff, err := blk.AchievedEpsilon(man.Sensitivity)
	if err != nil || !(eff > 0) {
		return s + "."
	}
	if man.Mechanism == privacy.Laplace {
		return s + fmt.Sprintf(": the block noise gives only eps' = %s under manifold adjacency, against the claimed eps = %s.", numP(eff, 3), numP(pr.Epsilon, 4))
	}
	return s + fmt.Sprintf(": the block noise gives only (eps' = %s, delta = %s)-DP under manifold adjacency, against the claimed eps = %s.",
		numP(eff, 3), numP(pr.Delta, 3), numP(pr.Epsilon, 4))
}

// samplerLines states how the noise became float64 values (docs/math.md section 10): with the
// secure sampler the grid and that the guarantee holds for the bits at no cost; with the float
// sampler that it holds in the reals only. Points with the same statement share a line.
func (r *analysis) samplerLines(b *strings.Builder) {
	var notes []string
	points := map[string][]string{}
	for _, p := range r.points {
		if p.plan == nil {
			continue
		}
		n := p.plan.SamplerInfo().Note
		if _, ok := points[n]; !ok {
			notes = append(notes, n)
		}
		points[n] = append(points[n], p.label)
	}
	if len(notes) == 1 {
		b.WriteString("Sampler: " + notes[0] + ".\n\n")
		return
	}
	b.WriteString("Sampler:\n\n")
	for _, n := range notes {
		fmt.Fprintf(b, "- %s: %s\n", pointList(points[n], len(r.points)), n)
	}
	b.WriteString("\n")
}

// conditioningLines writes the Privacy section's conditioning statement, grouped by identical text.
func (r *analysis) conditioningLines(b *strings.Builder) {
	var groups []*textGroup
	for _, p := range r.points {
		if p.cond == nil {
			continue
		}
		t := p.cond.Summary()
		if p.cond.Fragile {
			t += " - **fragile** (see Warnings)"
		}
		groups = addToGroup(groups, t, p.label)
	}
	if len(groups) == 0 {
		return
	}
	fmt.Fprintf(b, "Conditioning of the sensitivity (fragile when the smallest |det D_dj| of the free sets it kept is below %g, or when it moves by more than %g%% "+
		"under %g relative changes of the private model's entries):\n\n", privacy.FragileMinDet, 100*privacy.FragilePerturbation, privacy.PerturbationSize)
	for _, g := range groups {
		if r.sweep {
			fmt.Fprintf(b, "- %s: %s\n", pointList(g.points, len(r.points)), g.text)
		} else {
			fmt.Fprintf(b, "- %s\n", g.text)
		}
	}
	b.WriteString("\n")
}
