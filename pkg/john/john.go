package john

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Method selects the iteration.
type Method string

const (
	// Exact is the fixed-point iteration w_i <- w_i h_i(w) with averaged iterates
	// (Cohen, Cong, Song, Zhuo): O(n d^2) per iteration.
	Exact Method = "exact"
	// Fast is Algorithm 1 without noise: leverage-score sampling plus an s x d Gaussian
	// sketch, O(n d s + N d^2) per iteration.
	Fast Method = "fast"
	// DP is Algorithm 1 with the truncated Gaussian noise w_i = wbar_i (1 + z_i).
	DP Method = "dp"
)

// Methods lists the accepted method names, default first.
var Methods = []Method{Exact, Fast, DP}

// ParseMethod accepts "exact", "fast" or "dp".
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Methods))
	for i, m := range Methods {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown method %q (allowed: %s)", s, strings.Join(names, ", "))
}

// Documented constants of the fast iteration (the paper only gives Theta(.) orders).
const (
	// DefaultXi is the default accuracy of the sketched methods (fast, dp): max_i h_i(v) <=
	// 1 + Xi (Definition 3.4).
	DefaultXi = 0.1
	// DefaultXiExact is the default accuracy of the exact method: the John ellipsoid to
	// machine accuracy (log det Q within d ln(1 + 1e-9) of the optimum).
	DefaultXiExact = 1e-9
	// MaxIterWolfeAtwood bounds the exact method's Wolfe-Atwood iterations.
	MaxIterWolfeAtwood = 1_000_000
	// SketchConstant c_s in s = ceil(c_s / xi) (Algorithm 1, line 3: s = Theta(1/xi)).
	SketchConstant = 1.0
	// SampleConstant c_N in N = ceil(c_N d ln(d+1) / xi), the expected number of rows kept
	// by leverage-score sampling (Algorithm 1, line 6: N = Theta(xi0^{-2} d log(nd/delta1)),
	// with xi0 = Theta(xi); we use one power of 1/xi because the sampling errors of the T
	// iterations are independent and average out, see doc.go).
	SampleConstant = 4.0
	// FastIterConstant c_T in the default iteration count of fast and dp:
	// T = ceil(c_T ln(n) V / (2 xi^2)), V the per-iteration relative variance of the weight
	// estimates (2/s from the sketch, plus at most Var z <= 1/12 from the dp noise). The
	// average of T iterates has log-weight fluctuations ~ sqrt(V/T); the union over n rows
	// costs sqrt(ln n). Fitted on seeded Gaussian polytopes (n = 500..3000, d = 5..20,
	// xi = 0.1, 20 seeds each, fast and dp): c_T = 4 failed 4/120, 6 failed 0/120 with a
	// worst max h of 1.099, 8 failed 0/120 with a worst of 1.086 (doc.go). The paper's
	// T = Theta(xi^{-2}(log(n/delta0) + (L eps0)^{-2})) has the same ln n / xi^2 shape and no
	// constant.
	FastIterConstant = 8.0
	// RefreshRatio: the leverage scores of B_k are estimated in the metric of the previous
	// sampled Gram matrix P_{k-1}; when lambda_max(P_k^{-1} P_{k-1}) exceeds this ratio the
	// estimates may undershoot by more than that factor and are recomputed in P_k's metric.
	RefreshRatio = 4.0
)

// Config parameterises Solve. The zero value (plus Method) is usable.
type Config struct {
	Method Method
	// Xi is the target accuracy (default DefaultXi).
	Xi float64
	// MaxIter is the number of iterations T (0: DefaultMaxIter).
	MaxIter int
	// SketchSize s (fast, dp; 0: ceil(SketchConstant/Xi)).
	SketchSize int
	// SampleSize is the expected number N of rows kept by leverage-score sampling
	// (fast, dp; 0: ceil(SampleConstant d ln(d+1)/Xi)). N >= n uses every row.
	SampleSize int
	// CheckEvery (fast, dp): every CheckEvery iterations the averaged iterate is evaluated
	// exactly (one O(n d^2) pass) and the run stops once max_i h_i <= 1 + Xi. 0: never,
	// run MaxIter iterations. For dp an early stop depends on the private data (see doc.go).
	CheckEvery int
	// NoiseScale is sigma of z ~ N^T(0, sigma^2, [-0.5, 0.5]) (dp). 0: derived from
	// Epsilon, Delta and Eps0 (see CalibrateNoise; a heuristic, no guarantee).
	NoiseScale float64
	// Epsilon, Delta: the privacy target used to derive NoiseScale when it is 0.
	Epsilon, Delta float64
	// Eps0 is the neighbour radius: neighbouring polytopes differ in one row by at most
	// Eps0 in 2-norm. With Eps0 > 0 the dp result carries the local sensitivity bound.
	Eps0 float64
	// Seed of the random streams (sampling, sketch, noise).
	Seed uint64
	// Workers is the number of goroutines (0: GOMAXPROCS).
	Workers int
	// Trace records max_i h_i of the current output after every iteration (one extra
	// exact evaluation per iteration).
	Trace bool
}

// TracePoint is the accuracy of the output after Iteration iterations.
type TracePoint struct {
	Iteration   int
	MaxLeverage float64
}

// Guarantee strings.
const (
	// GuaranteeNone is the only privacy statement this package makes for dp: the noise
	// scale is reported, no (eps, delta) is claimed. See doc.go and Result.GuaranteeNote.
	GuaranteeNone = "none (noise scale only)"
)

// Result is the output of Solve plus the verification a user needs.
type Result struct {
	Method Method
	// Weights v, normalised so that sum v = d.
	Weights []float64
	// Q = A^T diag(v) A; the ellipsoid is E = {x : x^T Q x <= 1} and
	// E / sqrt(MaxLeverage) is inside P (Lemma 3.5).
	Q *mat.SymDense
	// SumWeights = sum_i v_i (d up to rounding).
	SumWeights float64
	// MaxLeverage = max_i h_i(v) = max_i a_i^T Q^{-1} a_i, computed exactly.
	MaxLeverage float64
	// LogDetQ = log det Q (the volume of E is proportional to det Q^{-1/2}).
	LogDetQ float64
	// Iterations performed.
	Iterations int
	// Converged is MaxLeverage <= 1 + Xi.
	Converged bool
	Xi        float64
	// Output is "average" (the normalised mean of the iterates, Algorithm 1 lines 23-28)
	// or "last-iterate" (exact only, when the last iterate is verified better).
	Output  string
	Elapsed time.Duration
	Seed    uint64
	// SketchSize s, SampleSize N (target), MeanSampled (rows actually kept, mean over
	// iterations) and Refreshes (leverage re-estimates, see RefreshRatio): fast and dp.
	SketchSize, SampleSize int
	MeanSampled            float64
	Refreshes              int
	// NoiseScale sigma (dp), NoiseSource "user" or "calibrated-heuristic".
	NoiseScale  float64
	NoiseSource string
	// Guarantee and GuaranteeNote (dp): what is and is not claimed.
	Guarantee     string
	GuaranteeNote string
	// Sensitivity (dp with Eps0 > 0): the local bound at the first iterate w_1 = d/n.
	Sensitivity *Sensitivity
	Trace       []TracePoint
	Warnings    []string
}

// Accepted ranges of Config: xi in [MinXiFor(method), MaxXi], SketchSize <= MaxSketchSize, Workers <=
// MaxWorkers. Exact verifies its iterate every step and stops as soon as max_i h_i <= 1 + xi, so a tiny
// xi only costs the iterations it needs (down to MinXiExact, where 1 + xi is still distinct from 1 in
// float64 by 4500 ulps); fast and dp run ~1/xi^2 iterations with an s = ceil(1/xi) row sketch, beyond
// any run below MinXiSketched. Above MaxXi the target 1 + xi says nothing.
const (
	MinXiExact    = 1e-12
	MinXiSketched = 1e-6
	MaxXi         = 10.0
	MaxSketchSize = 1 << 24
	MaxWorkers    = 4096
)

// MinXiFor returns the smallest accepted xi of method m.
func MinXiFor(m Method) float64 {
	if m == Exact || m == "" {
		return MinXiExact
	}
	return MinXiSketched
}

func xiRangeReason(m Method) string {
	if m == Exact || m == "" {
		return "1 + xi must stay distinguishable from 1 in float64"
	}
	return "fast and dp run about 8 ln(n) V/(2 xi^2) iterations with a ceil(1/xi)-row sketch"
}

// ceilCount is ceil(x) as an int, saturating at math.MaxInt32 (x >= 1 expected).
func ceilCount(x float64) int {
	if !(x < math.MaxInt32) {
		return math.MaxInt32
	}
	return int(math.Ceil(x))
}

// DefaultMaxIter is the default T. Exact: ceil(ln(n/d)/ln(1+xi)), which by the convexity
// of log h_i (Lemma 3.9) guarantees max_i h_i(u) <= (n/d)^{1/T} <= 1 + xi for the average
// u of w_1..w_T (each iterate sums to d and w_{T+1,i} <= 1). Fast and dp (sketch size s):
// ceil(FastIterConstant ln(n) V / (2 xi^2)) with V = 2/s, plus 1/12 for dp (the largest
// variance of the truncated noise, whatever sigma).
func DefaultMaxIter(m Method, n, d int, xi float64, s int) int {
	if m == Exact {
		if n <= d {
			return 1
		}
		return max(1, ceilCount(math.Log(float64(n)/float64(d))/math.Log1p(xi)))
	}
	v := 2 / float64(max(s, 1))
	if m == DP {
		v += 1.0 / 12
	}
	return max(1, ceilCount(FastIterConstant*math.Log(float64(max(n, 2)))*v/(2*xi*xi)))
}

// DefaultSketchSize is ceil(SketchConstant / xi).
func DefaultSketchSize(xi float64) int {
	return max(1, ceilCount(SketchConstant/xi-1e-9))
}

// DefaultSampleSize is ceil(SampleConstant d ln(d+1) / xi).
func DefaultSampleSize(d int, xi float64) int {
	return max(d, ceilCount(SampleConstant*float64(d)*math.Log(float64(d)+1)/xi))
}

func (c Config) resolve(n, d int) (Config, error) {
	if c.Method == "" {
		c.Method = Exact
	}
	if _, err := ParseMethod(string(c.Method)); err != nil {
		return c, err
	}
	if c.Xi == 0 {
		c.Xi = DefaultXi
		if c.Method == Exact && !c.Trace {
			c.Xi = DefaultXiExact
		}
	}
	if lo := MinXiFor(c.Method); !(c.Xi >= lo && c.Xi <= MaxXi) {
		return c, fmt.Errorf("xi = %g: must lie in [%g, %g] for method %s (%s)", c.Xi, lo, MaxXi, c.Method, xiRangeReason(c.Method))
	}
	if c.MaxIter < 0 || c.SketchSize < 0 || c.SampleSize < 0 || c.CheckEvery < 0 || c.Workers < 0 {
		return c, fmt.Errorf("max-iter, sketch size, sample size, check-every and workers must be >= 0")
	}
	if c.SketchSize > MaxSketchSize || c.Workers > MaxWorkers {
		return c, fmt.Errorf("sketch size %d (at most %d) or workers %d (at most %d) too large", c.SketchSize, MaxSketchSize, c.Workers, MaxWorkers)
	}
	if c.SketchSize == 0 {
		c.SketchSize = DefaultSketchSize(c.Xi)
	}
	if c.MaxIter == 0 && c.Method == Exact && !c.Trace {
		c.MaxIter = MaxIterWolfeAtwood // Solve's Wolfe-Atwood iterations; it stops far earlier
	}
	if c.MaxIter == 0 {
		c.MaxIter = DefaultMaxIter(c.Method, n, d, c.Xi, c.SketchSize)
	}
	if c.SampleSize == 0 {
		c.SampleSize = DefaultSampleSize(d, c.Xi)
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"noise scale", c.NoiseScale}, {"epsilon", c.Epsilon}, {"delta", c.Delta}, {"eps0", c.Eps0}} {
		if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return c, fmt.Errorf("%s must be finite and >= 0, got %g", p.name, p.v)
		}
	}
	if c.Method == DP && c.NoiseScale == 0 {
		if c.Epsilon == 0 || c.Delta == 0 || c.Eps0 == 0 {
			return c, fmt.Errorf("method dp needs a noise scale, or epsilon, delta and eps0 to derive one")
		}
		if c.Delta >= 1 {
			return c, fmt.Errorf("delta must be in (0, 1), got %g", c.Delta)
		}
	}
	return c, nil
}

// Solve computes the (approximate) John ellipsoid of P = {x : |a_i^T x| <= 1} for the
// n x d matrix A (n >= d, rank d) with the configured method.
func Solve(A *mat.Dense, cfg Config) (*Result, error) {
	start := time.Now()
	s, err := NewSolver(A, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	c := s.cfg
	if c.Method == Exact && !c.Trace {
		// The exact method: Wolfe-Atwood on the dual (wa.go), then the same exact evaluation.
		// The uniform start is checked first: its factorisation names a rank defect, an
		// underflow or an overflow precisely.
		if _, _, err := s.exactFactor(s.w); err != nil {
			return nil, fmt.Errorf("john: %w", err)
		}
		w, it, err := wolfeAtwood(mat.DenseCopyOf(A), c.Xi, c.MaxIter, nil)
		if err != nil {
			return nil, fmt.Errorf("john: %w", err)
		}
		shareDuplicates(A, w)
		copy(s.prev, w)
		copy(s.sum, w)
		s.count, s.iter = 1, it
		if s.lastMax, _, err = s.evaluate(w); err != nil {
			return nil, fmt.Errorf("john: %w", err)
		}
		res, err := s.Result()
		if err != nil {
			return nil, err
		}
		res.Output = "wolfe-atwood"
		res.Elapsed = time.Since(start)
		return res, nil
	}
	if c.Trace {
		if err := s.trace(); err != nil {
			return nil, fmt.Errorf("john: %w", err)
		}
	}
	for s.Iterations() < c.MaxIter {
		if err := s.Step(); err != nil {
			return nil, err
		}
		if c.Trace {
			if err := s.trace(); err != nil {
				return nil, fmt.Errorf("john: iteration %d: %w", s.Iterations(), err)
			}
		}
		if s.Method() == Exact {
			if s.lastMax <= 1+c.Xi {
				break
			}
			continue
		}
		if c.CheckEvery > 0 && s.Iterations()%c.CheckEvery == 0 {
			mh, err := s.averageMaxLeverage()
			if err != nil {
				return nil, fmt.Errorf("john: iteration %d: %w", s.Iterations(), err)
			}
			if mh <= 1+c.Xi {
				break
			}
		}
	}
	res, err := s.Result()
	if err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
