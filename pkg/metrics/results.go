package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Z95 is the two-sided 95% normal quantile used for every confidence interval in Results.
const Z95 = 1.959963984540054

// Stat summarises one quantity over the aggregated runs: sample mean, its standard error
// (sample standard deviation / sqrt(n); 0 when n < 2) and the 95% interval mean +- Z95 SE
// (normal approximation, central limit theorem over independent runs).
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SE   float64 `json:"se"`
	Lo   float64 `json:"ci_lo"`
	Hi   float64 `json:"ci_hi"`
}

// Series is a Stat per step: element k summarises step StepOf(k) over the runs (N[k] runs
// contributed; N[k] = 0 means no data there, and the other fields are then 0). A series of at
// most MaxSeriesPoints steps keeps every step (Step is nil: element k is step k); a longer one
// keeps MaxSeriesPoints or fewer evenly spaced steps, the first and the last among them, and
// lists them in Step, so that the Results, summary.json and the figures do not grow with T.
type Series struct {
	N    []int     `json:"n"`
	Mean []float64 `json:"mean"`
	SE   []float64 `json:"se"`
	Lo   []float64 `json:"ci_lo"`
	Hi   []float64 `json:"ci_hi"`
	// Step[k] is the step of element k when the series is thinned; absent: element k is step k.
	Step []int `json:"step,omitempty"`
}

// At returns element k as a Stat.
func (s *Series) At(k int) Stat {
	return Stat{N: s.N[k], Mean: s.Mean[k], SE: s.SE[k], Lo: s.Lo[k], Hi: s.Hi[k]}
}

// Len returns the number of elements (the number of steps unless the series is thinned).
func (s *Series) Len() int { return len(s.Mean) }

// StepOf returns the step of element k.
func (s *Series) StepOf(k int) int {
	if s.Step != nil {
		return s.Step[k]
	}
	return k
}

// LastStep returns the step of the last element (-1 for an empty series).
func (s *Series) LastStep() int {
	if s.Len() == 0 {
		return -1
	}
	return s.StepOf(s.Len() - 1)
}

// MaxSeriesPoints bounds the elements of every per-step Series of the Results (see Series).
const MaxSeriesPoints = 2001

// thinning maps the steps 0..n-1 of a series to the elements it keeps: every step when n <=
// MaxSeriesPoints; else steps 0, s, 2s, ... with stride s = ceil((n-1)/(MaxSeriesPoints-1)),
// and the last step n-1, which makes at most MaxSeriesPoints elements.
type thinning struct{ n, stride, count int }

func newThinning(n int) thinning {
	if n <= MaxSeriesPoints {
		return thinning{n: n, stride: 1, count: n}
	}
	s := (n - 2 + MaxSeriesPoints - 1) / (MaxSeriesPoints - 1) // ceil((n-1)/(M-1))
	c := (n-1)/s + 1
	if (n-1)%s != 0 {
		c++ // the last step
	}
	return thinning{n: n, stride: s, count: c}
}

// slot returns the element of step t, or -1 when the series does not keep t.
func (h thinning) slot(t int) int {
	switch {
	case t%h.stride == 0:
		return t / h.stride
	case t == h.n-1:
		return h.count - 1
	}
	return -1
}

// steps lists the step of every element, or nil when every step is kept.
func (h thinning) steps() []int {
	if h.stride == 1 {
		return nil
	}
	out := make([]int, 0, h.count)
	for t := 0; t < h.n; t += h.stride {
		out = append(out, t)
	}
	if len(out) < h.count {
		out = append(out, h.n-1)
	}
	return out
}

// Results are the metrics of a Monte Carlo run, computed from the per-step records by the
// Accumulator (the single implementation, used by the fast engine and the NATS launcher alike).
// It is JSON-serialisable; the field names are a stable contract (summary.json "metrics").
type Results struct {
	Kind     string            `json:"kind"` // "cloud-control" or "consensus"
	Scenario string            `json:"scenario"`
	Point    map[string]string `json:"point,omitempty"` // sweep values of this point
	Seed     uint64            `json:"seed"`
	Steps    int               `json:"steps"` // T: steps 0..T-1 publish, step T is the final state
	Runs     int               `json:"runs"`  // complete episodes aggregated
	// IncompleteEpisodes lists episodes that had records but not every step (not aggregated).
	IncompleteEpisodes []int   `json:"incomplete_episodes,omitempty"`
	Confidence         float64 `json:"confidence"` // level of every ci_lo/ci_hi: 0.95

	Mechanism   string  `json:"mechanism"`
	Noise       string  `json:"noise"`
	Adjacency   string  `json:"adjacency"`
	Calibration string  `json:"calibration,omitempty"`
	Epsilon     float64 `json:"epsilon"`
	Delta       float64 `json:"delta"`
	Mu          float64 `json:"mu"`
	// NoiseScale is the plan's scalar sigma (Gaussian) or b (Laplace); NoiseVariance the
	// per-component variance of gamma(0) (plan.NoiseVariance: sigma^2, or 2 b^2 for Laplace).
	NoiseScale    float64 `json:"noise_scale"`
	NoiseVariance float64 `json:"noise_variance"`

	Control   *ControlMetrics   `json:"control,omitempty"`
	Consensus *ConsensusMetrics `json:"consensus,omitempty"`

	// Links are the per-link message counters (fault.LinkStats: sent, delivered, dropped,
	// duplicated, reordered, late, ...), the injector's and the receivers' sides merged,
	// sorted by link name. Filled by the engine that ran the episodes.
	Links []fault.LinkStats `json:"links,omitempty"`
}

// ControlMetrics are the cloud-control metrics (Section 5.3, paper Figs. 2-3). Component i is
// state coordinate i (for the vehicle: 0 = position p, 1 = velocity v).
type ControlMetrics struct {
	// TrackingError[i] is x_i(t) - x_r,i(t) for t = 0..T (mean: the bias; ci: its 95% interval).
	TrackingError []Series `json:"tracking_error"`
	// TrackingSqError[i] is (x_i(t) - x_r,i(t))^2 for t = 0..T: the mean is the mean-square error.
	TrackingSqError []Series `json:"tracking_sq_error"`
	// FinalSqError[i] is TrackingSqError[i] at the final step t = T.
	FinalSqError []Stat `json:"final_sq_error"`
	// AvgSqError[i] is the run's time-averaged squared tracking error (1/(T+1)) sum_t
	// (x_i(t) - x_r,i(t))^2 over t = 0..T: one number per run, so its interval is across runs
	// (a summary of the whole trajectory, steadier than the final step when the loop oscillates).
	AvgSqError []Stat `json:"avg_sq_error"`
	// FinalAbsErrorMax[i] is max over runs of |x_i(T) - x_r,i(T)|.
	FinalAbsErrorMax []float64 `json:"final_abs_error_max"`
	// EveSqError is the eavesdropper's ||x0_hat(t) - x(0)||^2 for t = 0..T-1 (x0_hat from
	// yhat(0..t), u(0..t-1)); N[t] counts the runs where x0 was identifiable at t.
	EveSqError Series `json:"eve_sq_error"`
}

// ConsensusMetrics are the average-consensus metrics (Section 6.3, paper Figs. 5-7).
type ConsensusMetrics struct {
	Agents int     `json:"agents"`
	Alpha  float64 `json:"alpha"` // convergence rate of the graph
	// XStar is x* = mean_i x_i(0) (per run; constant when x(0) is the scenario's).
	XStar Stat `json:"x_star"`
	// Deviation[k] is x_i(t) - x* for t = 0..T of agent i = DeviationAgents[k] (Fig. 5: its
	// mean tends to 0). Every agent up to MaxDeviationAgents agents; beyond, that many evenly
	// spaced ones (the first and the last among them), so that the results, the figures and
	// the accumulator's memory do not grow as N x T.
	Deviation []Series `json:"deviation"`
	// DeviationAgents are the agents of Deviation, ascending.
	DeviationAgents []int `json:"deviation_agents"`
	// MaxAbsDeviation is max_i |x_i(t) - x*| for t = 0..T over every agent: the spread of the
	// whole network whatever its size.
	MaxAbsDeviation Series `json:"max_abs_deviation"`
	// SqDeviation is ||x(t) - 1 x*||^2 for t = 0..T (Figs. 6-7: its mean against the bound).
	SqDeviation Series `json:"sq_deviation"`
	// FinalSqDeviation is SqDeviation at t = T.
	FinalSqDeviation Stat `json:"final_sq_deviation"`
	// Prop1Bound is Proposition 1's limit bound on E||x(t) - 1 x*||^2: sum_i sigma_i^2 (Gaussian),
	// 2 sum_i b_i^2 (Laplace), i.e. N * NoiseVariance.
	Prop1Bound float64 `json:"prop1_bound"`
	// OffsetLimit is the exact limit (N-1) * NoiseVariance for i.i.d. constant offsets: node i
	// ends at x* + mean(gamma) - gamma_i (docs/math.md section 5), so the bound is loose by N/(N-1).
	OffsetLimit float64 `json:"offset_limit"`
	// FinalBelowBound reports FinalSqDeviation.Hi < Prop1Bound (95% upper limit below the bound).
	FinalBelowBound bool `json:"final_below_bound"`
	// SumRelDevMax is max over runs and t of |sum_i x_i(t) - sum_i x_i(0)| / scale, scale =
	// max(|sum_i x_i(0)|, max_i |x_i(0)|) (1 if that is 0): eq. (25) preserves the sum exactly.
	SumRelDevMax float64 `json:"sum_rel_dev_max"`
	// FinalSumDrift is sum_i x_i(T) - sum_i x_i(0) per run. Eq. (25) keeps it at 0 (to
	// rounding) when every agent hears every neighbour; a lost message breaks the symmetry of
	// the exchange (i uses a stand-in for y_j while j used y_i), and the network sum drifts.
	FinalSumDrift Stat `json:"final_sum_drift"`
	// FinalSumAbsDrift is |sum_i x_i(T) - sum_i x_i(0)| per run (its mean is the typical size
	// of the drift whatever its sign).
	FinalSumAbsDrift Stat `json:"final_sum_abs_drift"`
	// EveSqError is the eavesdropper's ||x0_hat(t) - x(0)||^2 for t = 0..T-1.
	EveSqError Series `json:"eve_sq_error"`
}

// MaxDeviationAgents bounds the agents whose deviation series ConsensusMetrics.Deviation keeps.
const MaxDeviationAgents = 32

// TrackedAgents returns the agents of ConsensusMetrics.Deviation for n agents: all of them up
// to MaxDeviationAgents, else MaxDeviationAgents evenly spaced ones from 0 to n-1.
func TrackedAgents(n int) []int {
	if n <= MaxDeviationAgents {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, MaxDeviationAgents)
	for k := range out {
		out[k] = int(math.Round(float64(k) * float64(n-1) / float64(MaxDeviationAgents-1)))
	}
	return out
}

// moments is a vector of Welford accumulators (count, mean, sum of squared deviations).
type moments struct {
	n       []int
	mean, q []float64
}

func newMoments(n int) moments {
	return moments{n: make([]int, n), mean: make([]float64, n), q: make([]float64, n)}
}

func (m *moments) add(k int, v float64) {
	m.n[k]++
	d := v - m.mean[k]
	m.mean[k] += d / float64(m.n[k])
	m.q[k] += d * (v - m.mean[k])
}

func (m moments) clone() moments {
	return moments{n: slices.Clone(m.n), mean: slices.Clone(m.mean), q: slices.Clone(m.q)}
}

func (m moments) stat(k int) Stat {
	n := m.n[k]
	if n == 0 {
		return Stat{}
	}
	s := Stat{N: n, Mean: m.mean[k]}
	if n > 1 {
		s.SE = math.Sqrt(m.q[k]/float64(n-1)) / math.Sqrt(float64(n))
	}
	s.Lo, s.Hi = s.Mean-Z95*s.SE, s.Mean+Z95*s.SE
	return s
}

// series returns elements off, off+stride, ... (count of them) as a Series whose element k is
// step steps[k] (steps nil: step k).
func (m moments) series(off, stride, count int, steps []int) Series {
	s := Series{N: make([]int, count), Mean: make([]float64, count), SE: make([]float64, count),
		Lo: make([]float64, count), Hi: make([]float64, count), Step: slices.Clone(steps)}
	for t := 0; t < count; t++ {
		st := m.stat(off + t*stride)
		s.N[t], s.Mean[t], s.SE[t], s.Lo[t], s.Hi[t] = st.N, st.Mean, st.SE, st.Lo, st.Hi
	}
	return s
}

// Episode reduces the records of one episode, in step order, to what the metrics need: the
// values at the steps the series keep (thinning) and the per-run aggregates over every step.
// Its memory is O(MaxSeriesPoints x d), whatever T: records that arrive ahead of their turn
// (out of step order) wait in held until the steps before them arrived, so the arithmetic is
// the same, bit for bit, whatever the arrival order.
type Episode struct {
	episode int
	steps   int                // T
	next    int                // steps 0..next-1 are reduced
	held    map[int]heldRecord // records of steps > next, copied
	x0      []float64          // x(0)
	scratch []float64          // the reference at the current step (control)
	// kept steps of the state series 0..T (a.thinX): control err and sq are count x d
	// (tracking error and its square); consensus err is count x len(tracked) deviations, sq
	// and maxDev are count (||x - 1 x*||^2, max_i |x_i - x*|).
	err, sq, maxDev []float64
	eve             []float64 // kept steps of 0..T-1 (a.thinEve): ||x0_hat(t) - x(0)||^2
	eveOK           []bool
	// per-run aggregates over every step
	avg    []float64 // control: sum_t (x_i(t) - x_r,i(t))^2 per component
	absMax []float64 // control: |x_i(T) - x_r,i(T)|
	xstar  float64   // consensus: mean of x(0)
	sum0   float64   // consensus: sum of x(0)
	scale  float64   // consensus: max(|sum x(0)|, max_i |x_i(0)|), 1 if 0
	sumDev float64   // consensus: max_t |sum x(t) - sum x(0)| / scale
	drift  float64   // consensus: sum x(T) - sum x(0)
}

// heldRecord is a copy of a record that arrived before its turn.
type heldRecord struct{ x, ref, eve []float64 }

// NewEpisode returns an empty buffer for episode ep, sized for a's plan (see PutControl).
func (a *Accumulator) NewEpisode(ep int) *Episode {
	d, kx, ke := a.dim, a.thinX.count, a.thinEve.count
	e := &Episode{steps: a.steps, x0: make([]float64, d), eve: make([]float64, ke), eveOK: make([]bool, ke)}
	if a.control {
		e.scratch, e.err, e.sq = make([]float64, d), make([]float64, kx*d), make([]float64, kx*d)
		e.avg, e.absMax = make([]float64, d), make([]float64, d)
	} else {
		e.err, e.sq, e.maxDev = make([]float64, kx*len(a.tracked)), make([]float64, kx), make([]float64, kx)
	}
	e.Reset(ep)
	return e
}

// Reset empties e for episode ep (a recycled buffer, see Recycle).
func (e *Episode) Reset(ep int) {
	e.episode, e.next = ep, 0
	e.held = nil
	clear(e.eveOK)
	clear(e.avg)
	clear(e.absMax)
	e.sumDev, e.drift = 0, 0
}

// complete reports whether every step 0..T was reduced.
func (e *Episode) complete() bool { return e.next == e.steps+1 }

// Accumulator turns per-step records into Results: the one implementation of every metric.
// Records may arrive in any order (episodes interleaved, steps out of order); each episode is
// reduced in step order as its records arrive (Episode: O(MaxSeriesPoints d) memory, plus
// copies of records that came ahead of their turn) and, once all its steps 0..T arrived, folded
// into the running sums. Episodes are folded in increasing episode order (an episode waits until
// all lower-numbered complete episodes are folded; Results folds what is still waiting in
// episode order), so the Results are bit-identical whatever the arrival order or scheduling.
// The per-step series keep at most MaxSeriesPoints evenly spaced steps (Series); the per-run
// aggregates (final, time-averaged and maximal errors, sum drift) cover every step. A record
// without X (a missing piece, see trace.ControlJoin / trace.ConsensusJoin) is ignored, which leaves its
// episode incomplete. Not safe for concurrent use.
type Accumulator struct {
	res     Results // metadata template
	control bool
	steps   int
	dim     int // nx (control) or N (consensus)
	ref     dynamics.Reference
	bound   float64
	alpha   float64
	tracked []int    // consensus: the agents of Deviation
	thinX   thinning // the state series, steps 0..T
	thinEve thinning // the eavesdropper's series, steps 0..T-1

	next    int // lowest episode not folded yet (episodes below are folded)
	pending map[int]*Episode
	free    []*Episode
	sums    sums
	// sink, when set, receives each episode's per-run values (EpisodeColumns) once (sunk: the
	// waiting episodes Results handed over before they were folded).
	sink func(ep int, values []float64)
	sunk map[int]bool
}

// sums are the running aggregates over folded episodes.
type sums struct {
	runs int
	// control: err, sq are kept(T+1) x d (index k*d + i); eve is kept(T).
	// consensus: err is kept(T+1) x len(tracked) deviations, sq and maxDev are kept(T+1), eve
	// is kept(T), xstar 1.
	err, sq, eve, xstar, maxDev moments
	absMax                      []float64 // control: |err_i(T)| max per component
	sumDev                      float64
	drift                       moments // consensus: [sum x(T) - sum x(0), |...|]; control: time-averaged sq. error per component
}

func (s sums) clone() sums {
	return sums{runs: s.runs, err: s.err.clone(), sq: s.sq.clone(), eve: s.eve.clone(), xstar: s.xstar.clone(), maxDev: s.maxDev.clone(),
		absMax: slices.Clone(s.absMax), sumDev: s.sumDev, drift: s.drift.clone()}
}

// NewAccumulator returns an empty accumulator for the plan's scenario point; seed is recorded in
// the Results.
func NewAccumulator(p *plan.Plan, seed uint64) (*Accumulator, error) {
	if p == nil || p.Scenario == nil {
		return nil, fmt.Errorf("metrics: accumulator: plan is nil")
	}
	s := p.Scenario
	a := &Accumulator{steps: p.Steps, pending: map[int]*Episode{}}
	if a.steps < 1 {
		return nil, fmt.Errorf("metrics: accumulator: scenario %s: steps %d < 1", s.Name, a.steps)
	}
	a.res = Results{
		Kind: string(s.Kind), Scenario: s.Name, Seed: seed, Steps: p.Steps, Confidence: 0.95,
		Mechanism: string(p.Mechanism), Noise: string(p.Noise), Adjacency: string(p.Adjacency),
		Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta, Mu: s.Privacy.Mu,
		NoiseScale: p.Scale, NoiseVariance: p.NoiseVariance(),
	}
	if p.Mechanism == privacy.Gaussian {
		a.res.Calibration = string(s.Privacy.Calibration)
	}
	if len(s.Point) > 0 {
		a.res.Point = map[string]string{}
		for _, pt := range s.Point {
			a.res.Point[string(pt.Param)] = pt.Value
		}
	}
	T := a.steps
	a.thinX, a.thinEve = newThinning(T+1), newThinning(T)
	kx, ke := a.thinX.count, a.thinEve.count
	switch s.Kind {
	case scenario.CloudControl:
		if p.System == nil {
			return nil, fmt.Errorf("metrics: accumulator: scenario %s: no plant", s.Name)
		}
		a.control, a.dim, a.ref = true, p.System.Nx(), p.Reference
		a.sums = sums{err: newMoments(kx * a.dim), sq: newMoments(kx * a.dim), eve: newMoments(ke),
			absMax: make([]float64, a.dim), drift: newMoments(a.dim)}
	case scenario.Consensus:
		if p.Graph == nil {
			return nil, fmt.Errorf("metrics: accumulator: scenario %s: no graph", s.Name)
		}
		a.dim, a.alpha = p.Graph.N, p.Alpha
		// Proposition 1: lim E||x(t) - 1 x*||^2 <= sum_i Var(gamma_i) = sum sigma_i^2 (Gaussian),
		// 2 sum b_i^2 (Laplace); every agent has the plan's scale.
		a.bound = float64(a.dim) * p.NoiseVariance()
		a.tracked = TrackedAgents(a.dim)
		a.sums = sums{err: newMoments(kx * len(a.tracked)), sq: newMoments(kx), eve: newMoments(ke), xstar: newMoments(1),
			maxDev: newMoments(kx), drift: newMoments(2)}
	default:
		return nil, fmt.Errorf("metrics: accumulator: scenario %s: unknown kind %q", s.Name, s.Kind)
	}
	return a, nil
}

func (a *Accumulator) episode(ep int) (*Episode, error) {
	if ep < 0 {
		return nil, fmt.Errorf("metrics: accumulator: episode %d is negative", ep)
	}
	if ep < a.next {
		return nil, fmt.Errorf("metrics: accumulator: episode %d already aggregated (duplicate record)", ep)
	}
	e := a.pending[ep]
	if e == nil {
		if n := len(a.free); n > 0 {
			e, a.free = a.free[n-1], a.free[:n-1]
			e.Reset(ep)
		} else {
			e = a.NewEpisode(ep)
		}
		a.pending[ep] = e
	}
	return e, nil
}

func (a *Accumulator) checkStep(kind string, ep, step int) error {
	if step < 0 || step > a.steps {
		return fmt.Errorf("metrics: accumulator: %s record episode %d: step %d outside 0..%d", kind, ep, step, a.steps)
	}
	return nil
}

func checkVec(name string, v []float64, n, ep, step int) error {
	if len(v) != n {
		return fmt.Errorf("metrics: accumulator: episode %d step %d: %s has %d values, want %d", ep, step, name, len(v), n)
	}
	if k := nonFinite(v); k >= 0 {
		return fmt.Errorf("metrics: accumulator: episode %d step %d: %s[%d] = %v is not finite", ep, step, name, k, v[k])
	}
	return nil
}

// AddControl adds one cloud-control record (values are copied). It uses X, Ref (computed from the
// plan's reference when nil) and EveX0; a record without X is ignored.
func (a *Accumulator) AddControl(r *trace.ControlRecord) error {
	if !a.control {
		return fmt.Errorf("metrics: accumulator: control record in a %s run", a.res.Kind)
	}
	return a.add("control", r.Episode, r.Step, r.X, r.Ref, r.EveX0)
}

// AddConsensus adds one consensus record (values are copied). It uses X and EveX0; a record
// without X is ignored.
func (a *Accumulator) AddConsensus(r *trace.ConsensusRecord) error {
	if a.control {
		return fmt.Errorf("metrics: accumulator: consensus record in a %s run", a.res.Kind)
	}
	return a.add("consensus", r.Episode, r.Step, r.X, nil, r.EveX0)
}

// add validates one record, copies it into its episode's buffer and folds the episode once
// complete. ref is used by control runs only (nil: computed from the plan's reference).
func (a *Accumulator) add(kind string, ep, t int, x, ref, eve []float64) error {
	if err := a.checkStep(kind, ep, t); err != nil {
		return err
	}
	if x == nil {
		return nil
	}
	if err := a.valid(ep, t, x, ref, eve); err != nil {
		return err
	}
	e, err := a.episode(ep)
	if err != nil {
		return err
	}
	if err := a.put(e, ep, t, x, ref, eve); err != nil {
		return err
	}
	a.maybeFold(e)
	return nil
}

// valid checks a record's vectors: dimensions, finiteness, no estimate at the final step.
func (a *Accumulator) valid(ep, t int, x, ref, eve []float64) error {
	d := a.dim
	if err := checkVec("x", x, d, ep, t); err != nil {
		return err
	}
	if ref != nil {
		if err := checkVec("ref", ref, d, ep, t); err != nil {
			return err
		}
	}
	if eve != nil {
		if t == a.steps {
			return fmt.Errorf("metrics: accumulator: episode %d: eavesdropper estimate at the final step %d", ep, t)
		}
		if err := checkVec("eve_x0", eve, d, ep, t); err != nil {
			return err
		}
	}
	return nil
}

// put hands a validated record to the episode e: in its turn it is reduced at once (with the
// records held after it), ahead of its turn it is copied and held.
func (a *Accumulator) put(e *Episode, ep, t int, x, ref, eve []float64) error {
	if _, dup := e.held[t]; t < e.next || dup {
		return fmt.Errorf("metrics: accumulator: episode %d step %d added twice", ep, t)
	}
	if t > e.next {
		if e.held == nil {
			e.held = map[int]heldRecord{}
		}
		e.held[t] = heldRecord{x: slices.Clone(x), ref: slices.Clone(ref), eve: slices.Clone(eve)}
		return nil
	}
	a.reduce(e, x, ref, eve)
	for len(e.held) > 0 {
		h, ok := e.held[e.next]
		if !ok {
			break
		}
		delete(e.held, e.next)
		a.reduce(e, h.x, h.ref, h.eve)
	}
	return nil
}

// reduce adds step e.next of the episode (x, ref: nil computes the plan's reference, eve: nil
// when the eavesdropper had no estimate) to e and advances e.next. This, with fold, is where
// every metric is defined.
func (a *Accumulator) reduce(e *Episode, x, ref, eve []float64) {
	t, d := e.next, a.dim
	if t == 0 {
		copy(e.x0, x)
		if !a.control {
			a.startConsensus(e)
		}
	}
	k := a.thinX.slot(t)
	if a.control {
		if ref == nil {
			a.ref.At(t, e.scratch)
			ref = e.scratch
		}
		for i := 0; i < d; i++ {
			err := x[i] - ref[i] // tracking error x_i(t) - x_r,i(t)
			if k >= 0 {
				e.err[k*d+i], e.sq[k*d+i] = err, err*err
			}
			e.avg[i] += err * err
			if t == a.steps {
				e.absMax[i] = math.Abs(err)
			}
		}
	} else {
		a.reduceConsensus(e, t, k, x)
	}
	if ke := a.thinEve.slot(t); eve != nil && t < a.steps && ke >= 0 {
		var sq float64
		for i := 0; i < d; i++ {
			v := eve[i] - e.x0[i]
			sq += v * v
		}
		e.eve[ke], e.eveOK[ke] = sq, true
	}
	e.next++
}

// startConsensus computes x* = mean_i x_i(0) and the scale of the sum's drift from x(0).
func (a *Accumulator) startConsensus(e *Episode) {
	var sum0, max0 float64
	for _, v := range e.x0 {
		sum0 += v
		max0 = math.Max(max0, math.Abs(v))
	}
	e.sum0, e.xstar = sum0, sum0/float64(a.dim) // x* = average of x(0)
	e.scale = math.Max(math.Abs(sum0), max0)
	if e.scale == 0 {
		e.scale = 1
	}
}

// reduceConsensus adds the consensus state x(t) (element k of the kept steps, -1: not kept).
func (a *Accumulator) reduceConsensus(e *Episode, t, k int, xt []float64) {
	var sq, sum, maxAbs float64
	for _, x := range xt {
		dev := x - e.xstar
		sq += dev * dev
		sum += x
		maxAbs = math.Max(maxAbs, math.Abs(dev))
	}
	if k >= 0 {
		nt := len(a.tracked)
		for j, i := range a.tracked {
			e.err[k*nt+j] = xt[i] - e.xstar
		}
		e.sq[k], e.maxDev[k] = sq, maxAbs
	}
	e.sumDev = math.Max(e.sumDev, math.Abs(sum-e.sum0)/e.scale)
	if t == a.steps {
		e.drift = sum - e.sum0
	}
}

// PutControl validates one cloud-control record and reduces it into e, an episode buffer the
// caller owns (NewEpisode), without folding it: the path of an engine that reduces its episodes
// on its own workers and hands each over whole (AddEpisode). It reads only the configuration of
// a, so workers may call it concurrently on their own buffers.
func (a *Accumulator) PutControl(e *Episode, r *trace.ControlRecord) error {
	if err := a.valid(r.Episode, r.Step, r.X, r.Ref, r.EveX0); err != nil {
		return err
	}
	return a.put(e, r.Episode, r.Step, r.X, r.Ref, r.EveX0)
}

// PutConsensus is PutControl for a consensus record.
func (a *Accumulator) PutConsensus(e *Episode, r *trace.ConsensusRecord) error {
	if err := a.valid(r.Episode, r.Step, r.X, nil, r.EveX0); err != nil {
		return err
	}
	return a.put(e, r.Episode, r.Step, r.X, nil, r.EveX0)
}

// Recycle hands fn the episode buffers folded (or discarded) since the last call and forgets
// them, so that an engine reuses them (Reset) instead of allocating one per episode.
func (a *Accumulator) Recycle(fn func(*Episode)) {
	for _, e := range a.free {
		fn(e)
	}
	a.free = a.free[:0]
}

// Discard drops what was added of episode ep while it waits (an episode found incomplete after
// some of its records were added), so that its number can be used again. Folded episodes and
// episodes not begun are left alone.
func (a *Accumulator) Discard(ep int) {
	if e := a.pending[ep]; e != nil {
		delete(a.pending, ep)
		a.free = append(a.free, e)
	}
}

// maybeFold folds complete episodes in episode order starting at next.
func (a *Accumulator) maybeFold(e *Episode) {
	if !e.complete() || e.episode != a.next {
		return
	}
	for {
		e := a.pending[a.next]
		if e == nil || !e.complete() {
			return
		}
		a.fold(&a.sums, e)
		a.sinkEpisode(e, false)
		delete(a.sunk, a.next)
		delete(a.pending, a.next)
		a.free = append(a.free, e)
		a.next++
	}
}

// AddEpisode hands over an episode buffer filled by PutControl / PutConsensus; it is folded in
// episode order (an incomplete one counts as incomplete, as with AddControl).
func (a *Accumulator) AddEpisode(e *Episode) error {
	if e.episode < a.next || a.pending[e.episode] != nil {
		return fmt.Errorf("metrics: accumulator: episode %d added twice", e.episode)
	}
	a.pending[e.episode] = e
	a.maybeFold(e)
	return nil
}

// fold adds one complete episode to s, in episode order (the moments are order-sensitive).
func (a *Accumulator) fold(s *sums, e *Episode) {
	T, d, kx := a.steps, a.dim, a.thinX.count
	s.runs++
	if a.control {
		for i := 0; i < d; i++ {
			for k := 0; k < kx; k++ {
				s.err.add(k*d+i, e.err[k*d+i])
				s.sq.add(k*d+i, e.sq[k*d+i])
			}
			s.absMax[i] = math.Max(s.absMax[i], e.absMax[i])
			s.drift.add(i, e.avg[i]/float64(T+1))
		}
	} else {
		s.xstar.add(0, e.xstar)
		nt := len(a.tracked)
		for k := 0; k < kx; k++ {
			for j := 0; j < nt; j++ {
				s.err.add(k*nt+j, e.err[k*nt+j])
			}
			s.sq.add(k, e.sq[k])
			s.maxDev.add(k, e.maxDev[k])
		}
		s.sumDev = math.Max(s.sumDev, e.sumDev)
		s.drift.add(0, e.drift)
		s.drift.add(1, math.Abs(e.drift))
	}
	for k := range e.eveOK {
		if e.eveOK[k] {
			s.eve.add(k, e.eve[k])
		}
	}
}

// Results returns the metrics of the episodes aggregated so far. Complete episodes still waiting
// for a lower-numbered one are included (in episode order) without changing the accumulator;
// episodes that are still incomplete are listed in IncompleteEpisodes. Calling Results does not
// end the accumulation.
func (a *Accumulator) Results() *Results {
	r := a.results()
	clampNonnegative(r)
	return r
}

// results computes the Results from the folded sums.
func (a *Accumulator) results() *Results {
	s := a.sums
	var waiting, incomplete []int
	for ep, e := range a.pending {
		if e.complete() {
			waiting = append(waiting, ep)
		} else {
			incomplete = append(incomplete, ep)
		}
	}
	if len(waiting) > 0 {
		s = a.sums.clone()
		slices.Sort(waiting)
		for _, ep := range waiting {
			a.fold(&s, a.pending[ep])
			a.sinkEpisode(a.pending[ep], true)
		}
	}
	slices.Sort(incomplete)
	r := a.res
	if r.Point != nil {
		r.Point = make(map[string]string, len(a.res.Point))
		for k, v := range a.res.Point {
			r.Point[k] = v
		}
	}
	r.Runs = s.runs
	r.IncompleteEpisodes = incomplete
	d, kx, ke := a.dim, a.thinX.count, a.thinEve.count
	stepsX, stepsEve := a.thinX.steps(), a.thinEve.steps()
	last := kx - 1 // the final step T is always kept
	if a.control {
		m := &ControlMetrics{EveSqError: s.eve.series(0, 1, ke, stepsEve), FinalAbsErrorMax: slices.Clone(s.absMax)}
		for i := 0; i < d; i++ {
			m.TrackingError = append(m.TrackingError, s.err.series(i, d, kx, stepsX))
			m.TrackingSqError = append(m.TrackingSqError, s.sq.series(i, d, kx, stepsX))
			m.FinalSqError = append(m.FinalSqError, s.sq.stat(last*d+i))
			m.AvgSqError = append(m.AvgSqError, s.drift.stat(i))
		}
		r.Control = m
	} else {
		m := &ConsensusMetrics{
			Agents: d, Alpha: a.alpha, XStar: s.xstar.stat(0), SqDeviation: s.sq.series(0, 1, kx, stepsX),
			FinalSqDeviation: s.sq.stat(last), Prop1Bound: a.bound,
			OffsetLimit: float64(d-1) * a.res.NoiseVariance, SumRelDevMax: s.sumDev,
			FinalSumDrift: s.drift.stat(0), FinalSumAbsDrift: s.drift.stat(1),
			EveSqError: s.eve.series(0, 1, ke, stepsEve), MaxAbsDeviation: s.maxDev.series(0, 1, kx, stepsX),
			DeviationAgents: slices.Clone(a.tracked),
		}
		for j := range a.tracked {
			m.Deviation = append(m.Deviation, s.err.series(j, len(a.tracked), kx, stepsX))
		}
		m.FinalBelowBound = m.FinalSqDeviation.N > 0 && m.FinalSqDeviation.Hi < m.Prop1Bound
		r.Consensus = m
	}
	return &r
}

// clampNonnegative sets the lower 95% limit of every nonnegative quantity (mean squares, the
// eavesdropper's squared error) to at least 0: the normal interval mean - 1.96 SE can dip below 0
// at small n, which such a quantity cannot.
func clampNonnegative(r *Results) {
	clampSeries := func(s *Series) {
		for t := range s.Lo {
			s.Lo[t] = math.Max(0, s.Lo[t])
		}
	}
	clampStat := func(s *Stat) { s.Lo = math.Max(0, s.Lo) }
	if c := r.Control; c != nil {
		for i := range c.TrackingSqError {
			clampSeries(&c.TrackingSqError[i])
		}
		for i := range c.FinalSqError {
			clampStat(&c.FinalSqError[i])
		}
		for i := range c.AvgSqError {
			clampStat(&c.AvgSqError[i])
		}
		clampSeries(&c.EveSqError)
	}
	if c := r.Consensus; c != nil {
		clampSeries(&c.SqDeviation)
		clampSeries(&c.MaxAbsDeviation)
		clampStat(&c.FinalSqDeviation)
		clampStat(&c.FinalSumAbsDrift)
		clampSeries(&c.EveSqError)
	}
}

// nonFinite returns the index of the first NaN or infinite entry of v, -1 if none.
func nonFinite(v []float64) int {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return i
		}
	}
	return -1
}

// SeriesPoints is the number of steps a Series of n steps keeps (n, or about MaxSeriesPoints
// when n is larger): what its memory grows with.
func SeriesPoints(n int) int { return newThinning(n).count }

// BoundSeries is the per-step mean square that the paper bounds, the one a run's figures and
// live view hold against its bound: cloud control, (x_0(t) - x_r,0(t))^2 (the paper's vehicle:
// the position error, whose mean tends to Var(gamma) with a constant offset); consensus,
// ||x(t) - 1 x*||^2 (Proposition 1). Nil when the Results hold neither.
func (r *Results) BoundSeries() *Series {
	switch {
	case r.Control != nil && len(r.Control.TrackingSqError) > 0:
		return &r.Control.TrackingSqError[0]
	case r.Consensus != nil:
		return &r.Consensus.SqDeviation
	}
	return nil
}

// BoundSeries returns Results().BoundSeries() over the episodes folded so far, and their
// number, without computing the other metrics: cheap enough to call after every group of
// episodes (the live view). Complete episodes still waiting for a lower-numbered one are not
// in it (the launcher's collector folds its episodes in order, so none wait there).
func (a *Accumulator) BoundSeries() (runs int, s Series) {
	kx := a.thinX.count
	if a.control {
		s = a.sums.sq.series(0, a.dim, kx, a.thinX.steps())
	} else {
		s = a.sums.sq.series(0, 1, kx, a.thinX.steps())
	}
	for t := range s.Lo {
		s.Lo[t] = math.Max(0, s.Lo[t]) // as clampNonnegative
	}
	return a.sums.runs, s
}
