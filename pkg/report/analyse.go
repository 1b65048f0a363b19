package report

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// pointInfo is one point with its place in the sweep.
type pointInfo struct {
	idx    int
	sc     *scenario.Scenario
	plan   *plan.Plan
	res    *metrics.Results
	label  string // "epsilon=0.01, noise=structured", or the scenario name without a sweep
	values map[string]string
	axis   int // index into analysis.axisLabels
	series int // index into analysis.seriesLabels

	cond     *privacy.Conditioning // how fragile the sensitivity is (nil: no plan)
	calInfo  string                // calibration statement that is not a check (baselines without guarantee)
	naiveEps float64               // iid-naive: the eps actually achieved over the T releases
	resInfo  []string              // result lines that are not checks
}

// analysis is the analysed run: the Input's points placed on the sweep's axis and series, the
// checks computed from their numbers, and what the verdict must name (deviations, noise
// dominance, an incomplete run). The report's sections and its figures render it.
type analysis struct {
	appendix strings.Builder // sections after the figures (a large process table)
	in       Input
	sc       *scenario.Scenario // the scenario file
	kind     string             // scenario.CloudControl or scenario.Consensus
	points   []*pointInfo

	sweep        bool
	axisParam    string // the sweep figures' x parameter ("" without a sweep)
	axisNumeric  bool
	axisLabels   []string
	axisValues   []float64 // numeric axis only
	axisLog      bool
	seriesParams []string
	seriesLabels []string
	rep          *pointInfo // the point the per-point figures show

	comps, compLong []string // control: state component names (p, v or x0, x1, ...)
	vehicle         bool     // the plant is the paper's double integrator with C = [1 0]

	checks  []Check
	skipped []string // figures left out for lack of data

	// deviations are results outside a tolerance dpsim states but the theory does not
	// predict (velocity error at T >= VelocityTol): not failures, listed in the verdict.
	deviations []deviation
	// dominated are the control points whose noise swamps the control (NoiseDominance).
	dominated []noiseDominance
	// partial: the run did not cover what was asked (status not ok, fewer episodes or points,
	// missing record pieces); partialWhy says how, for the verdict.
	partial    bool
	partialWhy []string
	// failedAfter: the status is not ok, but every requested episode and point completed.
	failedAfter bool
}

// deviation is the velocity error at T of one point against VelocityTol.
type deviation struct {
	point string
	T     int
	v     float64 // max over runs |v(T) - v_r(T)|
	rho   float64 // slowest closed-loop pole (0: unknown)
}

func analyse(in Input) (*analysis, error) {
	if len(in.Points) == 0 {
		return nil, errors.New("report: no points")
	}
	r := &analysis{in: in, sc: in.Scenario}
	for i, p := range in.Points {
		if p.Results == nil {
			return nil, fmt.Errorf("report: point %d: no results", i)
		}
		sc := p.Scenario
		if sc == nil && p.Plan != nil {
			sc = p.Plan.Scenario
		}
		pi := &pointInfo{idx: i, sc: sc, plan: p.Plan, res: p.Results, values: map[string]string{}}
		if sc != nil {
			for _, v := range sc.Point {
				pi.values[string(v.Param)] = v.Value
			}
		}
		if len(pi.values) == 0 {
			for k, v := range p.Results.Point {
				pi.values[k] = v
			}
		}
		r.points = append(r.points, pi)
	}
	if r.sc == nil {
		r.sc = r.points[0].sc
	}
	r.kind = r.points[0].res.Kind
	for _, p := range r.points {
		if p.res.Kind != r.kind {
			return nil, fmt.Errorf("report: point %d is %q, point 0 is %q", p.idx, p.res.Kind, r.kind)
		}
		switch p.res.Kind {
		case string(scenario.CloudControl):
			if p.res.Control == nil {
				return nil, fmt.Errorf("report: point %d: cloud-control results without control metrics", p.idx)
			}
			if err := validControl(p.res.Control); err != nil {
				return nil, fmt.Errorf("report: point %d: %w", p.idx, err)
			}
		case string(scenario.Consensus):
			if p.res.Consensus == nil {
				return nil, fmt.Errorf("report: point %d: consensus results without consensus metrics", p.idx)
			}
			if err := validConsensus(p.res.Consensus); err != nil {
				return nil, fmt.Errorf("report: point %d: %w", p.idx, err)
			}
		default:
			return nil, fmt.Errorf("report: point %d: unknown kind %q", p.idx, p.res.Kind)
		}
	}
	r.sweepLayout()
	r.components()
	r.evaluate()
	r.completeness()
	return r, nil
}

// completeness decides whether the run covered what was asked, from Input.Status, the
// episodes and points requested and the missing record pieces.
func (r *analysis) completeness() {
	in := r.in
	done, want := 0, 0
	known := true
	for _, p := range r.points {
		done += p.res.Runs
		want += r.in.Points[p.idx].Requested
		known = known && r.in.Points[p.idx].Requested > 0
	}
	if known && done < want {
		r.partialWhy = append(r.partialWhy, fmt.Sprintf("%d of %d episodes", done, want))
	}
	if in.PlannedPoints > len(r.points) {
		r.partialWhy = append(r.partialWhy, fmt.Sprintf("%d of %d sweep points", len(r.points), in.PlannedPoints))
	}
	missing := 0
	for _, p := range r.in.Points {
		missing += p.Missing
	}
	if missing > 0 {
		r.partialWhy = append(r.partialWhy, fmt.Sprintf("%d missing record pieces", missing))
	}
	// degraded and intervened: complete, with the misses or the interventions named
	notOK := in.Status != "" && in.Status != "ok" && in.Status != "degraded" && in.Status != "intervened"
	// A run that failed after every requested episode completed (e.g. writing summary.json):
	// its numbers are complete, only the failure is to be named.
	r.failedAfter = notOK && known && len(r.partialWhy) == 0
	if notOK && !r.failedAfter {
		r.partialWhy = append([]string{in.Status}, r.partialWhy...)
	}
	r.partial = len(r.partialWhy) > 0
}

// evaluate computes every check (calibration first, then results) in point order.
func (r *analysis) evaluate() {
	for _, p := range r.points {
		p.calInfo = r.calibrationCheck(p)
	}
	for _, p := range r.points {
		if p.res.Runs == 0 {
			p.resInfo = []string{"no complete episode: there is nothing to check"}
			continue
		}
		switch {
		case p.res.Control != nil:
			p.resInfo = r.controlChecks(p)
		case p.res.Consensus != nil:
			p.resInfo = r.consensusChecks(p)
		}
	}
	r.sweepComparisons()
	r.faultChecks()
	r.findNoiseDominance()
	r.findConditioning()
}

// components names the state components of a control run: p and v for the paper's vehicle
// (A = [1 Ts; 0 1], C = [1 0]), x0, x1, ... otherwise.
func (r *analysis) components() {
	if r.kind != string(scenario.CloudControl) {
		return
	}
	n := len(r.rep.res.Control.TrackingError)
	if n == 2 && r.rep.plan.PaperVehicle() {
		r.vehicle = true
		r.comps = []string{"p", "v"}
		r.compLong = []string{"position p", "velocity v"}
		return
	}
	// 0-based, as every index dpsim prints (x(0)'s entries, agent.0, the CLI's x0 x1 ...).
	for i := 0; i < n; i++ {
		r.comps = append(r.comps, fmt.Sprintf("x%d", i))
		r.compLong = append(r.compLong, fmt.Sprintf("state x%d", i))
	}
}

// eveTrend returns the eavesdropper's mean error at the first step with an estimate and at the
// last step, with those steps; ok is false without two distinct such steps.
func eveTrend(s *metrics.Series) (early, late float64, t0, t1 int, ok bool) {
	t0, t1 = -1, -1
	for t := 0; t < s.Len(); t++ {
		if s.N[t] > 0 {
			if t0 < 0 {
				t0 = t
			}
			t1 = t
		}
	}
	if t0 < 0 || t1 <= t0 {
		return 0, 0, t0, t1, false
	}
	return s.Mean[t0], s.Mean[t1], t0, t1, true
}

// validSeries checks that the slices of a Series have one length.
func validSeries(name string, s *metrics.Series) error {
	n := len(s.Mean)
	if len(s.N) != n || len(s.SE) != n || len(s.Lo) != n || len(s.Hi) != n {
		return fmt.Errorf("%s: n, mean, se, ci_lo, ci_hi have lengths %d, %d, %d, %d, %d", name, len(s.N), n, len(s.SE), len(s.Lo), len(s.Hi))
	}
	if s.Step != nil && len(s.Step) != n { // a thinned series names the step of every element
		return fmt.Errorf("%s: step has %d entries for %d elements", name, len(s.Step), n)
	}
	return nil
}

func validControl(c *metrics.ControlMetrics) error {
	d := len(c.TrackingError)
	if d == 0 {
		return errors.New("control metrics without tracking errors")
	}
	if len(c.TrackingSqError) != d || len(c.FinalSqError) != d {
		return fmt.Errorf("control metrics: %d tracking error series, %d squared, %d final", d, len(c.TrackingSqError), len(c.FinalSqError))
	}
	if len(c.FinalAbsErrorMax) != 0 && len(c.FinalAbsErrorMax) != d {
		return fmt.Errorf("control metrics: %d final_abs_error_max values for %d components", len(c.FinalAbsErrorMax), d)
	}
	for i := 0; i < d; i++ {
		if err := validSeries(fmt.Sprintf("tracking_error[%d]", i), &c.TrackingError[i]); err != nil {
			return err
		}
		if err := validSeries(fmt.Sprintf("tracking_sq_error[%d]", i), &c.TrackingSqError[i]); err != nil {
			return err
		}
	}
	return validSeries("eve_sq_error", &c.EveSqError)
}

func validConsensus(c *metrics.ConsensusMetrics) error {
	for i := range c.Deviation {
		if err := validSeries(fmt.Sprintf("deviation[%d]", i), &c.Deviation[i]); err != nil {
			return err
		}
	}
	if err := validSeries("sq_deviation", &c.SqDeviation); err != nil {
		return err
	}
	if c.MaxAbsDeviation.Len() > 0 {
		if err := validSeries("max_abs_deviation", &c.MaxAbsDeviation); err != nil {
			return err
		}
	}
	return validSeries("eve_sq_error", &c.EveSqError)
}
