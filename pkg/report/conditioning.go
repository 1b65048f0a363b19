package report

import (
	"fmt"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// findConditioning computes how fragile each point's sensitivity is (plan.Conditioning).
// Points with the same private model, horizon, adjacency, noise and mechanism share one
// computation (a sweep over the budget recomputes nothing). Plans without a sensitivity (read
// from a plan file) have none.
func (r *analysis) findConditioning() {
	cache := map[string]*privacy.Conditioning{}
	for _, p := range r.points {
		pl := p.plan
		if pl == nil || pl.ModelA == nil || pl.ModelC == nil || !(pl.Sensitivity.Value > 0) {
			continue
		}
		key := fmt.Sprintf("%v|%v|%d|%s|%s|%s", mat.Formatted(pl.ModelA), mat.Formatted(pl.ModelC), pl.Steps, pl.Adjacency, pl.Noise, pl.Mechanism)
		c, ok := cache[key]
		if !ok {
			v := pl.Conditioning()
			c = &v
			cache[key] = c
		}
		p.cond = c
	}
}

// conditioningLines writes the Privacy section's conditioning statement, grouped by identical text.
func (r *analysis) conditioningLines(b *strings.Builder) {
	type group struct {
		text   string
		points []string
	}
	var groups []*group
	for _, p := range r.points {
		if p.cond == nil {
			continue
		}
		t := p.cond.Summary()
		if p.cond.Fragile {
			t += " - **fragile** (see Warnings)"
		}
		found := false
		for _, g := range groups {
			if g.text == t {
				g.points = append(g.points, p.label)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, &group{text: t, points: []string{p.label}})
		}
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

// anyFragile reports whether some point's sensitivity is fragile.
func (r *analysis) anyFragile() bool {
	for _, p := range r.points {
		if p.cond != nil && p.cond.Fragile {
			return true
		}
	}
	return false
}

// fragileWarning is the Warnings entry of the points whose sensitivity is fragile ("" when none).
func (r *analysis) fragileWarning() string {
	var pts []string
	var first *privacy.Conditioning
	for _, p := range r.points {
		if p.cond != nil && p.cond.Fragile {
			if first == nil {
				first = p.cond
			}
			pts = append(pts, p.label)
		}
	}
	if first == nil {
		return ""
	}
	where := ""
	if r.sweep {
		where = " at " + pointList(pts, len(r.points))
	}
	return fmt.Sprintf("**the sensitivity is fragile**%s: %s. The noise it calibrates is then a property of the digits written, not of the plant.",
		where, strings.TrimPrefix(first.Advice(), "the calibration is fragile: "))
}
