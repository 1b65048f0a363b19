package gchisq

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Term is one summand w chi^2(k, lambda) of Q.
type Term struct {
	Weight        float64 // w_j, any sign; zero weights are dropped
	DF            float64 // k_j >= 0 degrees of freedom (non-integer values are accepted)
	NonCentrality float64 // lambda_j >= 0
}

// DefaultAccuracy is the absolute error bound Davies' algorithm is asked to meet by default.
const DefaultAccuracy = 1e-10

// DefaultLimit bounds the total number of integration terms (and of bound evaluations) of one CDF call.
const DefaultLimit = 2_000_000

const (
	forceDavies = 1
	forceImhof  = 2
)

// Errors reported by CDF, Survival and Quantile (Davies' ifault codes 1, 3 and 4).
var (
	// ErrAccuracy: the requested accuracy needs more than Limit integration terms (ifault 1).
	ErrAccuracy = errors.New("gchisq: required accuracy not achieved within the term limit")
	// ErrInvalid: invalid parameters (ifault 3).
	ErrInvalid = errors.New("gchisq: invalid parameters")
	// ErrNoParams: the integration parameters could not be located within the limit (ifault 4).
	ErrNoParams = errors.New("gchisq: unable to locate integration parameters")
)

// Option configures a Dist.
type Option func(*Dist) error

// WithAccuracy sets the absolute error bound of CDF and Survival (default DefaultAccuracy).
// Values below 1e-14 are refused: the trapezoidal sums cannot be trusted beyond that in float64.
func WithAccuracy(acc float64) Option {
	return func(d *Dist) error {
		if !(acc >= 1e-14 && acc < 0.5) {
			return fmt.Errorf("%w: accuracy %v must lie in [1e-14, 0.5)", ErrInvalid, acc)
		}
		d.acc = acc
		return nil
	}
}

// WithLimit sets the maximum number of integration terms per evaluation (default DefaultLimit).
func WithLimit(lim int) Option {
	return func(d *Dist) error {
		if lim < 100 {
			return fmt.Errorf("%w: limit %d must be at least 100", ErrInvalid, lim)
		}
		d.lim = lim
		return nil
	}
}

// Dist is the distribution of Q = sum_j w_j chi^2(k_j, lambda_j) + sigma Z. It is immutable after New
// and safe for concurrent use.
type Dist struct {
	// terms sorted by |w| descending
	w, k, nc []float64
	absw     []float64
	sigma    float64
	acc      float64
	lim      int
	force    int // tests: 0 automatic, forceDavies or forceImhof

	mean, variance float64
	absMean        float64 // sum_j |w_j| (k_j + lambda_j)
	lmax, lmin     float64 // max(0, max w), min(0, min w)
	sd             float64 // sqrt(Variance)

	ps powerSums
}

// New builds the distribution of sum_j terms[j] + sigma Z. It returns an error naming the offending
// term for a NaN/Inf weight, a negative or non-finite DF or non-centrality, or sigma < 0; at least one
// term with non-zero weight and positive DF + non-centrality, or sigma > 0, is required.
func New(terms []Term, sigma float64, opts ...Option) (*Dist, error) {
	if math.IsNaN(sigma) || math.IsInf(sigma, 0) || sigma < 0 {
		return nil, fmt.Errorf("%w: sigma = %v must be finite and >= 0", ErrInvalid, sigma)
	}
	d := &Dist{sigma: sigma, acc: DefaultAccuracy, lim: DefaultLimit}
	for _, o := range opts {
		if err := o(d); err != nil {
			return nil, err
		}
	}
	idx := make([]int, 0, len(terms))
	for j, t := range terms {
		switch {
		case math.IsNaN(t.Weight) || math.IsInf(t.Weight, 0):
			return nil, fmt.Errorf("%w: term %d: weight %v must be finite", ErrInvalid, j, t.Weight)
		case math.IsNaN(t.DF) || math.IsInf(t.DF, 0) || t.DF < 0:
			return nil, fmt.Errorf("%w: term %d: degrees of freedom %v must be finite and >= 0", ErrInvalid, j, t.DF)
		case math.IsNaN(t.NonCentrality) || math.IsInf(t.NonCentrality, 0) || t.NonCentrality < 0:
			return nil, fmt.Errorf("%w: term %d: non-centrality %v must be finite and >= 0", ErrInvalid, j, t.NonCentrality)
		}
		if t.Weight != 0 && t.DF+t.NonCentrality > 0 {
			idx = append(idx, j)
		}
	}
	if len(idx) == 0 && sigma == 0 {
		return nil, fmt.Errorf("%w: Q is identically zero (no term with non-zero weight and sigma = 0)", ErrInvalid)
	}
	continuous := sigma > 0
	for _, j := range idx {
		if terms[j].DF > 0 {
			continuous = true
		}
	}
	if !continuous {
		return nil, fmt.Errorf("%w: every term has 0 degrees of freedom and sigma = 0, so Q has an atom at 0 (P(Q = 0) > 0); "+
			"the characteristic-function inversion needs a continuous distribution", ErrInvalid)
	}
	sort.SliceStable(idx, func(a, b int) bool { return math.Abs(terms[idx[a]].Weight) > math.Abs(terms[idx[b]].Weight) })
	n := len(idx)
	d.w = make([]float64, n)
	d.k = make([]float64, n)
	d.nc = make([]float64, n)
	d.absw = make([]float64, n)
	variance := sigma * sigma
	for i, j := range idx {
		t := terms[j]
		d.w[i], d.k[i], d.nc[i], d.absw[i] = t.Weight, t.DF, t.NonCentrality, math.Abs(t.Weight)
		variance += t.Weight * t.Weight * (2*t.DF + 4*t.NonCentrality)
		d.mean += t.Weight * (t.DF + t.NonCentrality)
		d.absMean += math.Abs(t.Weight) * (t.DF + t.NonCentrality)
		d.lmax = math.Max(d.lmax, t.Weight)
		d.lmin = math.Min(d.lmin, t.Weight)
	}
	d.variance = variance
	d.sd = math.Sqrt(variance)
	d.ps = newPowerSums(d.w, d.k, d.nc)
	return d, nil
}

// NewWeighted is the central case with one degree of freedom per weight: Q = sum_j w_j Z_j^2, the
// squared norm of a Gaussian vector with independent N(0, w_j) coordinates.
func NewWeighted(weights []float64, opts ...Option) (*Dist, error) {
	terms := make([]Term, len(weights))
	for j, w := range weights {
		terms[j] = Term{Weight: w, DF: 1}
	}
	return New(terms, 0, opts...)
}

// Len is the number of non-trivial chi-square terms.
func (d *Dist) Len() int { return len(d.w) }

// Mean is E[Q] = sum_j w_j (k_j + lambda_j).
func (d *Dist) Mean() float64 { return d.mean }

// Variance is Var[Q] = sigma^2 + sum_j w_j^2 (2 k_j + 4 lambda_j).
func (d *Dist) Variance() float64 { return d.variance }

// Accuracy is the absolute error bound of CDF and Survival.
func (d *Dist) Accuracy() float64 { return d.acc }

// Trace reports how one evaluation went (Davies' trace vector).
type Trace struct {
	AbsSum        float64 // trace[0]: absolute value sum of the integrand terms (round-off scale)
	Terms         int     // trace[1]: total number of integration terms
	Integrations  int     // trace[2]: number of integrations (1 + auxiliary ones)
	Interval      float64 // trace[3]: integration interval of the final integration
	Truncation    float64 // trace[4]: truncation point of the initial integration
	ConvergenceSD float64 // trace[5]: s.d. of the initial convergence factor
	Cycles        int     // trace[6]: bound evaluations used to locate the parameters
	RoundOff      bool    // ifault 2: round-off error possibly significant
	Accuracy      float64 // the requested error bound
	Method        string  // MethodDavies or MethodImhof
	ErrorEstimate float64 // MethodImhof: |difference| of the last two refinements (Davies: 0, bound is Accuracy)
}

// Evaluation methods reported in Trace.Method.
const (
	MethodDavies = "davies"   // Davies' AS 155 with its rigorous error bound
	MethodImhof  = "imhof-de" // Imhof's integral, double-exponential quadrature, refinement estimate
)

// CDF returns P(Q <= x) with absolute error at most Accuracy(). It does not allocate.
func (d *Dist) CDF(x float64) (float64, error) {
	p, _, err := d.CDFTrace(x, d.acc)
	return p, err
}

// Survival returns P(Q > x) with absolute error at most Accuracy().
func (d *Dist) Survival(x float64) (float64, error) {
	p, _, err := d.survival(x, d.acc)
	return p, err
}

// CDFTrace returns P(Q <= x) with absolute error at most acc, and the trace of the computation.
func (d *Dist) CDFTrace(x, acc float64) (float64, Trace, error) {
	if math.IsNaN(x) {
		return math.NaN(), Trace{}, fmt.Errorf("%w: x is NaN", ErrInvalid)
	}
	if math.IsInf(x, 1) {
		return 1, Trace{}, nil
	}
	if math.IsInf(x, -1) {
		return 0, Trace{}, nil
	}
	if !(acc > 0) {
		return math.NaN(), Trace{}, fmt.Errorf("%w: accuracy %v must be positive", ErrInvalid, acc)
	}
	var s daviesState
	v, tr, err := s.run(d, x, acc)
	if err != nil {
		return math.NaN(), tr, err
	}
	return clamp01(v), tr, nil
}

// survival returns 1 - CDF computed as 0.5 + integral (no cancellation against 1).
func (d *Dist) survival(x, acc float64) (float64, Trace, error) {
	if math.IsNaN(x) {
		return math.NaN(), Trace{}, fmt.Errorf("%w: x is NaN", ErrInvalid)
	}
	if math.IsInf(x, 1) {
		return 0, Trace{}, nil
	}
	if math.IsInf(x, -1) {
		return 1, Trace{}, nil
	}
	var s daviesState
	v, tr, err := s.runUpper(d, x, acc)
	if err != nil {
		return math.NaN(), tr, err
	}
	return clamp01(v), tr, nil
}

func clamp01(v float64) float64 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}
