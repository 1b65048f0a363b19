package vecsum

import (
	"math"
	"math/rand/v2"
)

// Mechanism names the three private-sum methods.
type Mechanism string

// The mechanisms of the paper.
const (
	// MethodGaussian is Algorithm 1: data in a box, equal noise Delta_2 sigma_opt on every coordinate.
	MethodGaussian Mechanism = "gaussian"
	// MethodElliptical is Algorithm 2: data in a box, noise sigma_opt Delta_j / b_j with the optimal
	// b_j = sqrt(Delta_j / sum Delta) (Theorem 3).
	MethodElliptical Mechanism = "elliptical"
	// MethodNormal is Algorithm 3: normally distributed data, centred, scaled by Lemma 4.1, clipped to
	// a ball of radius C, noise 2 C sigma_opt / b_j.
	MethodNormal Mechanism = "normal"
)

// ParseMechanism parses "gaussian", "elliptical" or "normal".
func ParseMechanism(s string) (Mechanism, error) {
	switch m := Mechanism(s); m {
	case MethodGaussian, MethodElliptical, MethodNormal:
		return m, nil
	}
	return "", inputErr("method %q: allowed gaussian, elliptical, normal", s)
}

// BoxPlan is the plan of the Gaussian (Algorithm 1) or elliptical Gaussian (Algorithm 2) mechanism for
// rows known to lie in the box prod_j [Lo_j, Hi_j]. Neighbouring data sets differ in one row
// (Definition 2.1, replacement), so the sum's per-coordinate sensitivity is Delta_j = Hi_j - Lo_j
// (eq. (3)) and its L2 sensitivity ||Delta||_2 (eq. (4)). Rows outside the box are clamped into it
// before summing, which keeps the guarantee for any input.
type BoxPlan struct {
	Method        Mechanism
	Epsilon       float64
	Delta         float64
	Lo, Hi        []float64
	Widths        []float64 // Delta_j = Hi_j - Lo_j
	SigmaOpt      float64   // Theorem 2
	Scaling       []float64 // b_j (elliptical: sqrt(Delta_j / sum Delta); gaussian: Delta_j/||Delta||_2)
	NoiseSigmas   []float64 // per-coordinate noise standard deviation
	ExpectedError float64   // E||eta||^2 = sum_j NoiseSigmas_j^2: eq. (1) resp. eq. (6)
	// GainOverGaussian is the Gaussian mechanism's expected error divided by this plan's:
	// d ||Delta||_2^2 / ||Delta||_1^2 for the elliptical mechanism (in [1, d]), 1 for the Gaussian.
	GainOverGaussian float64
}

// MaxWidth is the largest box width hi - lo PlanBox accepts: the noise and expected error square and
// sum the widths, and up to MaxWidth (PrivateMean's boxes of 16 MaxSigma included) they stay finite.
const MaxWidth = 1e100

// PlanBox returns the plan of the Gaussian or elliptical mechanism for the box [lo, hi].
func PlanBox(method Mechanism, lo, hi []float64, eps, delta float64) (*BoxPlan, error) {
	if method != MethodGaussian && method != MethodElliptical {
		return nil, inputErr("box plan: method %q: must be gaussian or elliptical", method)
	}
	if len(lo) == 0 || len(lo) != len(hi) {
		return nil, inputErr("box plan: %d lower and %d upper bounds: need the same positive number", len(lo), len(hi))
	}
	if err := checkFinite("lower bound", lo); err != nil {
		return nil, err
	}
	if err := checkFinite("upper bound", hi); err != nil {
		return nil, err
	}
	so, err := SigmaOpt(eps, delta)
	if err != nil {
		return nil, err
	}
	d := len(lo)
	p := &BoxPlan{Method: method, Epsilon: eps, Delta: delta, SigmaOpt: so,
		Lo: append([]float64(nil), lo...), Hi: append([]float64(nil), hi...),
		Widths: make([]float64, d), Scaling: make([]float64, d), NoiseSigmas: make([]float64, d)}
	var l1, l2 float64
	for j := range lo {
		if !(hi[j] > lo[j]) {
			return nil, inputErr("box plan: dimension %d: upper bound %v must exceed lower bound %v", j, hi[j], lo[j])
		}
		p.Widths[j] = hi[j] - lo[j]
		if p.Widths[j] > MaxWidth {
			// the expected error squares and sums the widths; far beyond this it is +Inf
			return nil, inputErr("box plan: dimension %d: width %v of [%v, %v] exceeds %g; express the data in other units",
				j, p.Widths[j], lo[j], hi[j], MaxWidth)
		}
		l1 += p.Widths[j]
	}
	l2 = norm2(p.Widths)
	for j, w := range p.Widths {
		switch method {
		case MethodGaussian:
			// Algorithm 1: sigma = Delta_2 sigma_opt on every coordinate (b_j / Delta_j = 1/||Delta||).
			p.Scaling[j] = w / l2
			p.NoiseSigmas[j] = l2 * so
		case MethodElliptical:
			// Algorithm 2 with Theorem 3's b_j = sqrt(Delta_j / sum Delta): sigma_j = sigma_opt Delta_j / b_j.
			p.Scaling[j] = math.Sqrt(w / l1)
			p.NoiseSigmas[j] = so * w / p.Scaling[j]
		}
		p.ExpectedError += p.NoiseSigmas[j] * p.NoiseSigmas[j]
	}
	p.GainOverGaussian = 1
	if method == MethodElliptical {
		p.GainOverGaussian = float64(d) * l2 * l2 / (l1 * l1)
	}
	return p, nil
}

// BoxResult is the outcome of BoxPlan.Sum.
type BoxResult struct {
	Sum []float64 // the private sum
	// Non-private diagnostics about the input (they depend on the data; do not release them).
	ClampedRows int       // rows with at least one coordinate outside the box
	ClampError  float64   // ||sum of clamped rows - true sum||^2
	TrueSum     []float64 // the exact sum of the rows (before clamping)
}

// Sum clamps the rows of x (row-major, len(x) = n d) into the box, sums them and adds the plan's
// noise drawn from r. out, if non-nil with length d, receives the private sum.
func (p *BoxPlan) Sum(x []float64, r *rand.Rand, out []float64) (BoxResult, error) {
	d := len(p.Lo)
	if len(x)%d != 0 {
		return BoxResult{}, inputErr("sum: %d values do not form rows of %d", len(x), d)
	}
	if out == nil || len(out) != d {
		out = make([]float64, d)
	}
	for j := range out {
		out[j] = 0
	}
	res := BoxResult{Sum: out, TrueSum: make([]float64, d)}
	diff := make([]float64, d)
	for i := 0; i+d <= len(x); i += d {
		row := x[i : i+d]
		clamped := false
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return BoxResult{}, inputErr("sum: row %d, column %d: value %v is not finite", i/d+1, j+1, v)
			}
			res.TrueSum[j] += v
			c := v
			if c < p.Lo[j] {
				c = p.Lo[j]
				clamped = true
			} else if c > p.Hi[j] {
				c = p.Hi[j]
				clamped = true
			}
			diff[j] += v - c
			out[j] += c
		}
		if clamped {
			res.ClampedRows++
		}
	}
	for j := range out {
		res.ClampError += diff[j] * diff[j]
		out[j] += p.NoiseSigmas[j] * r.NormFloat64()
	}
	return res, nil
}

// norm2 is the Euclidean norm of w computed as max |w_j| times the norm of w / max, so that squares of
// tiny widths do not underflow to a zero norm (which made the scaling w_j / ||w|| infinite).
func norm2(w []float64) float64 {
	m := 0.0
	for _, v := range w {
		m = math.Max(m, math.Abs(v))
	}
	if m == 0 {
		return 0
	}
	s := 0.0
	for _, v := range w {
		s += (v / m) * (v / m)
	}
	return m * math.Sqrt(s)
}
