package report

import (
	"fmt"

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

// anyFragile reports whether some point's sensitivity is fragile.
func (r *analysis) anyFragile() bool {
	for _, p := range r.points {
		if p.cond != nil && p.cond.Fragile {
			return true
		}
	}
	return false
}
