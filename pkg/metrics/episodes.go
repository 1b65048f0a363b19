package metrics

import (
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The per-episode table (dpsim run --parquet, episodes.parquet; docs/outputs.md): one row per
// complete episode, with the per-run values whose aggregates over the runs are the Results'
// per-run statistics. Each value is the number fold adds to the Results' sums, bit for bit, so
// a Welford mean of a column over the rows in episode order is the Results' mean.

// EpisodeColumns are the names of the per-episode values of the runs of plan p (an
// Accumulator's), in the order the sink
// receives them (SetEpisodeSink). Cloud control, per state component i (d of them):
// final_error_i (x_i(T) - x_r,i(T): TrackingError[i] at T), final_sq_error_i (its square:
// FinalSqError[i]), avg_sq_error_i (the time-averaged squared error: AvgSqError[i]),
// final_abs_error_i (|x_i(T) - x_r,i(T)|: its max over the runs is FinalAbsErrorMax[i]); then
// eve_final_sq_error. Consensus: x_star (XStar), final_sq_deviation (FinalSqDeviation),
// final_max_abs_deviation (MaxAbsDeviation at T), sum_rel_dev_max (its max over the runs is
// SumRelDevMax), final_sum_drift (FinalSumDrift), final_sum_abs_drift (FinalSumAbsDrift),
// eve_final_sq_error. eve_final_sq_error is the eavesdropper's ||x0_hat(T-1) - x(0)||^2
// (EveSqError at its last step), NaN where x(0) was not identifiable there (the runs it
// counts are EveSqError's N).
func EpisodeColumns(p *plan.Plan) []string {
	var cols []string
	if p.Scenario.Kind == scenario.CloudControl && p.System != nil {
		for _, name := range []string{"final_error", "final_sq_error", "avg_sq_error", "final_abs_error"} {
			for i := 0; i < p.System.Nx(); i++ {
				cols = append(cols, fmt.Sprintf("%s_%d", name, i))
			}
		}
	} else {
		cols = []string{"x_star", "final_sq_deviation", "final_max_abs_deviation", "sum_rel_dev_max", "final_sum_drift", "final_sum_abs_drift"}
	}
	return append(cols, "eve_final_sq_error")
}

// SetEpisodeSink makes a hand fn the values (EpisodeColumns) of every complete episode it
// aggregates, once each, from the goroutine that adds to a: as the episode is folded, or when
// Results includes it while it waits for a lower-numbered episode (so the episodes fn saw are
// those of the Results' runs). The values belong to fn.
func (a *Accumulator) SetEpisodeSink(fn func(ep int, values []float64)) { a.sink = fn }

// sinkEpisode hands e's values to the sink, once (waiting: e is not folded yet, remember it).
func (a *Accumulator) sinkEpisode(e *Episode, waiting bool) {
	if a.sink == nil || a.sunk[e.episode] {
		return
	}
	if waiting {
		if a.sunk == nil {
			a.sunk = map[int]bool{}
		}
		a.sunk[e.episode] = true
	}
	a.sink(e.episode, a.episodeValues(e))
}

// episodeValues are e's per-run values, as fold adds them.
func (a *Accumulator) episodeValues(e *Episode) []float64 {
	T, d, last := a.steps, a.dim, a.thinX.count-1
	var v []float64
	if a.control {
		v = make([]float64, 0, 4*d+1)
		v = append(v, e.err[last*d:last*d+d]...)
		v = append(v, e.sq[last*d:last*d+d]...)
		for i := 0; i < d; i++ {
			v = append(v, e.avg[i]/float64(T+1))
		}
		v = append(v, e.absMax...)
	} else {
		v = append(make([]float64, 0, 7), e.xstar, e.sq[last], e.maxDev[last], e.sumDev, e.drift, math.Abs(e.drift))
	}
	eve := math.NaN()
	if k := len(e.eveOK) - 1; k >= 0 && e.eveOK[k] {
		eve = e.eve[k]
	}
	return append(v, eve)
}
