package live

import (
	"math"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// Aggregate is the Monte Carlo estimate, over a point's completed episodes, of the mean
// square the paper bounds (metrics.Results.BoundSeries; the point's Bound is its limit):
// cloud control, E[(x_0(t) - x_r,0(t))^2] (the paper's vehicle: its position error, whose mean
// tends to Var(gamma) with a constant offset); consensus, E||x(t) - 1 x*||^2 (Proposition 1).
// Mean, Lo and Hi are the mean over the episodes and its 95% interval (metrics.Series: the
// lower end clamped at 0) at the steps T, thinned to about MaxPoints; null where no episode
// has the step.
type Aggregate struct {
	Point int    `json:"point"`
	Runs  int    `json:"runs"` // the completed episodes folded
	T     []int  `json:"t"`
	Mean  Floats `json:"mean"`
	Lo    Floats `json:"ci_lo"`
	Hi    Floats `json:"ci_hi"`
}

// Aggregate sets point k's Monte Carlo mean square over its runs episodes folded so far
// (launch.PlayOptions.Aggregate; at the point's end, its Results' BoundSeries).
func (h *Hub) Aggregate(k, runs int, s *metrics.Series) {
	if h == nil || s == nil {
		return
	}
	a := thinAggregate(k, runs, s)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.agg = a
	h.seq++
}

// thinAggregate copies s into an Aggregate of about MaxPoints steps: every stride-th element
// and the last one.
func thinAggregate(k, runs int, s *metrics.Series) *Aggregate {
	n := s.Len()
	stride := max(1, (n+MaxPoints-1)/MaxPoints)
	a := &Aggregate{Point: k, Runs: runs}
	for i := 0; i < n; i++ {
		if i%stride != 0 && i != n-1 {
			continue
		}
		a.T = append(a.T, s.StepOf(i))
		if s.N[i] == 0 {
			a.Mean, a.Lo, a.Hi = append(a.Mean, math.NaN()), append(a.Lo, math.NaN()), append(a.Hi, math.NaN())
			continue
		}
		a.Mean, a.Lo, a.Hi = append(a.Mean, s.Mean[i]), append(a.Lo, s.Lo[i]), append(a.Hi, s.Hi[i])
	}
	return a
}
