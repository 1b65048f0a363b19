package vecsum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsim/dpsim/pkg/gchisq"
)

// NormalPlan is Algorithm 3 ("the elliptical Gaussian mechanism for Gaussian data") planned without
// data: rows x_i ~ N(mu, diag(sigma^2)) are centred at a mean estimate mu_hat, scaled by b (Lemma 4.1),
// clipped to the ball of radius C in the scaled space, summed, mapped back (divide by b_j, add n mu_hat)
// and released with noise N(0, (2 C sigma_opt / b_j)^2) on coordinate j.
//
// Why 2 C: neighbouring data sets differ in one row (Definition 2.1, replacement, n public). After
// clipping, every scaled centred row lies in the ball of radius C about 0, so replacing one row moves the
// scaled sum by at most the ball's diameter, 2C: the L2 sensitivity is Delta = 2C (Section 4, "clipping
// entries by a factor C thus means that Delta(f) = 2C"), and Theorem 2 gives noise 2 C sigma_opt per
// scaled coordinate, i.e. 2 C sigma_opt / b_j after the inverse scaling (post-processing, Lemma 2.1).
// Under add/remove adjacency the factor would be 1 (plus the change of n mu_hat); the factor 2 is right
// for the replacement adjacency the paper uses.
//
// The comparison "without scaling" clips the centred raw data (b_j = 1) at the radius C_n with the same
// clipping probability and adds 2 C_n sigma_opt to every coordinate. Note: Section 5 writes its error as
// E_n = (2 C_n sigma_opt)^2, but the noise is added to all d coordinates, so E_n = d (2 C_n sigma_opt)^2;
// only with the factor d is the gain 1 for equal sigmas and in [1, d] as the paper reports (we use it).
type NormalPlan struct {
	Epsilon, Delta float64
	N              int       // number of rows (public)
	Sigmas         []float64 // standard deviations of the centred data (incl. any mean uncertainty)
	ClipProb       float64   // p_C: probability that one row is clipped (default 1/n)
	SigmaOpt       float64   // Theorem 2
	Scaling        []float64 // b_j = 1 / sqrt(sigma_j sum_i sigma_i)  (Lemma 4.1, eq. (16))
	ScaledSigmas   []float64 // b_j sigma_j = sqrt(sigma_j / sum sigma): sum of squares 1 (eq. (10))
	ClipRadius     float64   // C: minimal radius with Pr[||(x - mu) . b|| > C] = p_C (generalized chi-square)
	NoiseSigmas    []float64 // 2 C sigma_opt / b_j
	ExpectedError  float64   // E||eta||^2 = (2 C sigma_opt)^2 sum_j b_j^-2  (eq. (9), (24))
	// The same clipping probability without the scaling (b_j = 1).
	ClipRadiusUnscaled    float64 // C_n: Pr[||x - mu|| > C_n] = p_C
	NoiseSigmaUnscaled    float64 // 2 C_n sigma_opt on every coordinate
	ExpectedErrorUnscaled float64 // d (2 C_n sigma_opt)^2
	Gain                  float64 // ExpectedErrorUnscaled / ExpectedError
	// Lemma 4.2 / Theorem 4 (Bernstein) bounds, valid when ln(1/p_C) <= sum sigma^2 / (18 sigma_max^2);
	// NaN otherwise, and BoundReason says why. BoundClipRadius >= ClipRadius and BoundError >=
	// ExpectedError when valid.
	BoundClipRadius float64
	BoundError      float64
	BoundReason     string // empty when the bounds apply
}

// Radii holds the two clip radii and the expected noise errors divided by sigma_opt^2 (they do not
// depend on the privacy budget).
type Radii struct {
	Scaled, Unscaled              float64 // C and C_n
	ErrScaled, ErrUnscaled        float64 // E_t / sigma_opt^2 and E_n / sigma_opt^2
	Gain                          float64 // ErrUnscaled / ErrScaled
	BoundRadius, BoundErrorUnit   float64 // Lemma 4.2 / Theorem 4 (NaN when not applicable), error / sigma_opt^2
	BoundReason                   string  // why the bounds do not apply; empty when they do
	SumSigma, SumSigma2, MaxSigma float64
}

// LemmaScaling returns b_j = 1 / sqrt(sigma_j sum_i sigma_i) (Lemma 4.1, eq. (16)), the scaling that
// minimises the noise error (9) subject to sum_j (b_j sigma_j)^2 = 1 (eq. (10)).
func LemmaScaling(sigmas []float64) []float64 {
	s := 0.0
	for _, v := range sigmas {
		s += v
	}
	b := make([]float64, len(sigmas))
	for j, v := range sigmas {
		b[j] = 1 / math.Sqrt(v*s)
	}
	return b
}

// MaxSigma is the largest standard deviation the planner accepts. A
// plan is invariant to the data's unit but works with squares, squared sums and, in EstimateClipError,
// fourth powers; up to MaxSigma none of them overflows float64 (beyond it plans came out +Inf or NaN).
// Tiny values are harmless: their squares may underflow, but they then contribute nothing.
const MaxSigma = 1e50

// CheckSigmas refuses an empty list of standard deviations or one that is not finite, > 0 and at most
// MaxSigma, naming the (0-based) entry.
func CheckSigmas(sigmas []float64) error { return checkSigmas(sigmas) }

func checkSigmas(sigmas []float64) error {
	if len(sigmas) == 0 {
		return inputErr("no standard deviations given")
	}
	for j, v := range sigmas {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return inputErr("sigma[%d] = %v: standard deviations must be finite and > 0", j, v)
		}
		if v > MaxSigma {
			return inputErr("sigma[%d] = %v: standard deviations must be at most %g (their squares and sums must stay inside float64); express the data in other units", j, v, MaxSigma)
		}
	}
	return nil
}

// ClipRadii computes C and C_n for data standard deviations sigmas and clipping probability p, with
// the generalized chi-square upper quantile (pkg/gchisq): ||(x - mu) . b||^2 = sum_j (b_j sigma_j)^2 Z_j^2.
func ClipRadii(sigmas []float64, p float64) (Radii, error) {
	if err := checkSigmas(sigmas); err != nil {
		return Radii{}, err
	}
	if math.IsNaN(p) || p <= 0 || p >= 1 {
		return Radii{}, inputErr("clipping probability %v: must lie in (0, 1)", p)
	}
	var r Radii
	for _, s := range sigmas {
		r.SumSigma += s
		r.SumSigma2 += s * s
		r.MaxSigma = math.Max(r.MaxSigma, s)
	}
	d := float64(len(sigmas))
	// Scaled: weights (b_j sigma_j)^2 = sigma_j / sum sigma.
	ws := make([]float64, len(sigmas))
	wu := make([]float64, len(sigmas))
	for j, s := range sigmas {
		ws[j] = s / r.SumSigma
		wu[j] = (s / r.MaxSigma) * (s / r.MaxSigma) // unscaled, normalised by sigma_max^2
	}
	qs, err := upperQuantile(ws, p)
	if err != nil {
		return Radii{}, fmt.Errorf("vecsum: scaled clip radius: %w", err)
	}
	qu, err := upperQuantile(wu, p)
	if err != nil {
		return Radii{}, fmt.Errorf("vecsum: unscaled clip radius: %w", err)
	}
	r.Scaled = math.Sqrt(qs)
	r.Unscaled = r.MaxSigma * math.Sqrt(qu)
	// eq. (24): E = (2 C sigma_opt)^2 sum b_j^-2 with sum_j b_j^-2 = (sum sigma)^2.
	r.ErrScaled = 4 * r.Scaled * r.Scaled * r.SumSigma * r.SumSigma
	r.ErrUnscaled = 4 * d * r.Unscaled * r.Unscaled
	// Gain = ErrUnscaled / ErrScaled = d (q_u / q_s) (sigma_max / sum sigma)^2, formed from ratios so that
	// it stays exact when tiny sigmas make both errors underflow
	r.Gain = d * (qu / qs) * (r.MaxSigma / r.SumSigma) * (r.MaxSigma / r.SumSigma)
	// Lemma 4.2 with t = sqrt(ln(1/p)) on the scaled data (Theorem 4 for p = 1/n).
	r.BoundRadius, r.BoundErrorUnit = math.NaN(), math.NaN()
	lnp := math.Log(1 / p)
	limit := r.SumSigma2 / (18 * r.MaxSigma * r.MaxSigma)
	if lnp <= limit {
		c2 := math.Sqrt(8*lnp*r.SumSigma2)/r.SumSigma + 1
		r.BoundRadius = math.Sqrt(c2)
		r.BoundErrorUnit = 4 * r.SumSigma * (math.Sqrt(8*lnp*r.SumSigma2) + r.SumSigma)
	} else {
		// Bernstein's inequality with t = sqrt(ln(1/p)) needs t^2 <= sum sigma^2 / (18 sigma_max^2): few
		// or very unequal sigmas, or a small clipping probability, leave the lemma without a bound.
		r.BoundReason = fmt.Sprintf("Lemma 4.2 / Theorem 4 need ln(1/p_C) <= sum sigma^2 / (18 sigma_max^2); here "+
			"ln(1/p_C) = %.4g > sum sigma^2 / (18 sigma_max^2) = %.4g (too few or too unequal sigmas for this clipping probability)", lnp, limit)
	}
	return r, nil
}

func upperQuantile(w []float64, p float64) (float64, error) {
	g, err := gchisq.NewWeighted(w)
	if err != nil {
		return 0, err
	}
	return g.UpperQuantile(p)
}

// PlanNormal plans Algorithm 3 for n rows whose coordinates have standard deviations sigmas, with
// (eps, delta) and clipping probability clipProb (<= 0 means 1/n).
func PlanNormal(sigmas []float64, n int, eps, delta, clipProb float64) (*NormalPlan, error) {
	if n < 1 {
		return nil, inputErr("n = %d: need at least one row", n)
	}
	if clipProb <= 0 {
		clipProb = 1 / float64(n)
		if n == 1 {
			clipProb = 0.5
		}
	}
	so, err := SigmaOpt(eps, delta)
	if err != nil {
		return nil, err
	}
	r, err := ClipRadii(sigmas, clipProb)
	if err != nil {
		return nil, err
	}
	d := len(sigmas)
	p := &NormalPlan{Epsilon: eps, Delta: delta, N: n, Sigmas: append([]float64(nil), sigmas...),
		ClipProb: clipProb, SigmaOpt: so, Scaling: LemmaScaling(sigmas), ScaledSigmas: make([]float64, d),
		NoiseSigmas: make([]float64, d), ClipRadius: r.Scaled, ClipRadiusUnscaled: r.Unscaled}
	for j, b := range p.Scaling {
		p.ScaledSigmas[j] = b * sigmas[j]
		p.NoiseSigmas[j] = 2 * r.Scaled * so / b
	}
	so2 := so * so
	p.ExpectedError = r.ErrScaled * so2
	p.ExpectedErrorUnscaled = r.ErrUnscaled * so2
	p.NoiseSigmaUnscaled = 2 * r.Unscaled * so
	p.Gain = r.Gain
	p.BoundClipRadius = r.BoundRadius
	p.BoundError = r.BoundErrorUnit * so2
	p.BoundReason = r.BoundReason
	if err := p.checkFinite(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkFinite refuses a plan whose numbers left float64 (tiny sigmas whose products sigma_j sum sigma
// underflow give an infinite scaling b_j): a plan with +Inf or NaN in it would release nonsense.
func (p *NormalPlan) checkFinite() error {
	named := []struct {
		name string
		v    []float64
	}{{"scaling b", p.Scaling}, {"noise sigma", p.NoiseSigmas}, {"clip radius", []float64{p.ClipRadius, p.ClipRadiusUnscaled}},
		{"expected error", []float64{p.ExpectedError, p.ExpectedErrorUnscaled}}, {"gain", []float64{p.Gain}}}
	for _, n := range named {
		for j, v := range n.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return inputErr("sigmas in [%g, %g]: the plan leaves float64: %s[%d] = %v; express the data in other units",
					slices.Min(p.Sigmas), slices.Max(p.Sigmas), n.name, j, v)
			}
		}
	}
	return nil
}

// NormalResult is the outcome of NormalPlan.Sum.
type NormalResult struct {
	Sum []float64 // the private sum
	// Non-private diagnostics about the input (they depend on the data; do not release them).
	ClippedRows int       // rows with ||(x_i - mu_hat) . b|| > C
	ClipError   float64   // ||clipped sum - true sum||^2: the error clipping itself caused
	TrueSum     []float64 // the sum of the rows (clipped sum plus correction; imprecise next to an outlier)
}

// Accumulator is the streaming core of Algorithm 3: Add rows in any number of calls, then Release.
// It keeps the clipped sum sum_i [mu_hat + min(1, s_i) (x_i - mu_hat)], s_i = C / ||(x_i - mu_hat) . b||
// (the paper's sum_i [min(C/||x~_i||, 1) x~_i] / b + n mu_hat), and the clipping correction
// sum_{clipped} (1 - s_i)(x_i - mu_hat) for the diagnostics.
//
// Rows go through in blocks of accBlock: one fused pass computes each row's scaled norm and adds the row
// to a block sum that starts at zero; a block without a clipped row (all but about n p_C / accBlock of
// them) joins the running sum as it is. A block with a clipped row is summed again row by row, with the
// clipped rows' clipped values, so an outlier never enters any sum: adding it and subtracting it later
// would lose the other rows to rounding (an outlier of 1e20 has an ulp of 16384).
//
// (The paper's pseudo-code adds mu_hat before dividing by b_j; the centre has to be added back in the
// original space, as done here.) Add does not allocate.
type Accumulator struct {
	plan    *NormalPlan
	mu, b   []float64
	mb      []float64 // mu . b
	c2      float64
	sum     []float64 // clipped sum
	corr    []float64
	blk     []float64         // block sum
	norms   [accBlock]float64 // squared scaled norms of the block's rows
	rows    int
	clipped int
}

// accBlock is the number of rows summed apart before they join the running sum.
const accBlock = 64

// NewAccumulator returns an accumulator centred at mu (len d).
func (p *NormalPlan) NewAccumulator(mu []float64) (*Accumulator, error) {
	d := len(p.Scaling)
	if len(mu) != d {
		return nil, inputErr("mean has %d values, data have %d dimensions", len(mu), d)
	}
	if err := checkFinite("mean", mu); err != nil {
		return nil, err
	}
	mb := make([]float64, d)
	for j := range mb {
		mb[j] = mu[j] * p.Scaling[j]
	}
	return &Accumulator{plan: p, mu: append([]float64(nil), mu...), b: p.Scaling, mb: mb, c2: p.ClipRadius * p.ClipRadius,
		sum: make([]float64, d), corr: make([]float64, d), blk: make([]float64, d)}, nil
}

// Add accumulates the rows of x (row-major, a multiple of d values). A row with a non-finite value is
// rejected with an error naming it (1-based row number counted over all Add calls).
func (a *Accumulator) Add(x []float64) error {
	d := len(a.b)
	if len(x)%d != 0 {
		return inputErr("add: %d values do not form rows of %d", len(x), d)
	}
	for i := 0; i < len(x); i += accBlock * d {
		if err := a.addBlock(x[i:min(i+accBlock*d, len(x))]); err != nil {
			return err
		}
	}
	return nil
}

// addBlock adds at most accBlock rows: the fused fast pass, then either the block sum or, when a row
// was clipped, the exact row-by-row pass.
func (a *Accumulator) addBlock(x []float64) error {
	d := len(a.b)
	mb, b, blk := a.mb[:d], a.b[:d], a.blk[:d]
	clear(blk)
	clipped := false
	for k, i := 0, 0; i+d <= len(x); k, i = k+1, i+d {
		row := x[i : i+d : i+d]
		// ||(x - mu) . b||^2 with four partial sums (independent dependency chains) and array-pointer
		// views of four coordinates at a time (one bounds check per chunk)
		var n0, n1, n2, n3 float64
		j := 0
		for ; j+4 <= d; j += 4 {
			r := (*[4]float64)(row[j : j+4])
			bb := (*[4]float64)(b[j : j+4])
			m := (*[4]float64)(mb[j : j+4])
			s := (*[4]float64)(blk[j : j+4])
			v0 := r[0]*bb[0] - m[0]
			v1 := r[1]*bb[1] - m[1]
			v2 := r[2]*bb[2] - m[2]
			v3 := r[3]*bb[3] - m[3]
			n0 += v0 * v0
			n1 += v1 * v1
			n2 += v2 * v2
			n3 += v3 * v3
			s[0] += r[0]
			s[1] += r[1]
			s[2] += r[2]
			s[3] += r[3]
		}
		for ; j < d; j++ {
			v := row[j]*b[j] - mb[j]
			n0 += v * v
			blk[j] += row[j]
		}
		nrm := (n0 + n1) + (n2 + n3)
		a.norms[k] = nrm
		clipped = clipped || !(nrm <= a.c2)
	}
	if !clipped {
		for j, v := range blk {
			a.sum[j] += v
		}
		a.rows += len(x) / d
		return nil
	}
	// Exact pass: the norms of the fast pass decide (the same numbers, so the same rows are clipped).
	for k, i := 0, 0; i+d <= len(x); k, i = k+1, i+d {
		row := x[i : i+d : i+d]
		if nrm := a.norms[k]; nrm <= a.c2 {
			for j, v := range row {
				a.sum[j] += v
			}
		} else if err := a.clip(row, nrm); err != nil {
			return err
		}
		a.rows++
	}
	return nil
}

// clip adds the clipped row mu + s (x - mu), s = C / ||(x - mu) . b||, to the sum and (1 - s)(x - mu)
// to the correction. A squared norm that overflowed is recomputed scaled by the largest entry, so that
// an outlier near 1e160 is clipped like any other row.
func (a *Accumulator) clip(row []float64, nrm float64) error {
	for j, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return inputErr("row %d, column %d: value %v is not finite", a.rows+1, j+1, v)
		}
	}
	norm := math.Sqrt(nrm)
	if math.IsInf(nrm, 0) || math.IsNaN(nrm) {
		norm = a.scaledNorm(row)
	}
	s := a.plan.ClipRadius / norm
	for j, v := range row {
		dv := v - a.mu[j]
		if math.IsInf(dv, 0) {
			return inputErr("data row %d, column %d: %v minus the centre %v overflows float64: remove the row or express the data in other units",
				a.rows+1, j+1, v, a.mu[j])
		}
		a.sum[j] += a.mu[j] + s*dv
		a.corr[j] += (1 - s) * dv
	}
	a.clipped++
	return nil
}

// scaledNorm is ||(row - mu) . b|| computed as max |v_j| times the norm of v / max (no overflow).
func (a *Accumulator) scaledNorm(row []float64) float64 {
	m := 0.0
	for j, v := range row {
		m = math.Max(m, math.Abs(v*a.b[j]-a.mb[j]))
	}
	s := 0.0
	for j, v := range row {
		q := (v*a.b[j] - a.mb[j]) / m
		s += q * q
	}
	return m * math.Sqrt(s)
}

// Rows is the number of rows accumulated.
func (a *Accumulator) Rows() int { return a.rows }

// Release returns the private sum (clipped sum plus noise N(0, NoiseSigmas_j^2) from r) with the
// non-private diagnostics. Every call draws fresh noise and is a separate (eps, delta) release of the
// same data (releases compose). It refuses if the number of rows differs from the plan's n (the clipping
// probability, and with it C, were chosen for that n; n is public under replacement adjacency).
func (a *Accumulator) Release(r *rand.Rand) (NormalResult, error) {
	if a.rows != a.plan.N {
		return NormalResult{}, inputErr("release: %d rows accumulated, plan is for n = %d", a.rows, a.plan.N)
	}
	d := len(a.b)
	res := NormalResult{Sum: make([]float64, d), TrueSum: make([]float64, d), ClippedRows: a.clipped}
	for j := range res.Sum {
		res.ClipError += a.corr[j] * a.corr[j]
		res.TrueSum[j] = a.sum[j] + a.corr[j]
		res.Sum[j] = a.sum[j] + a.plan.NoiseSigmas[j]*r.NormFloat64()
	}
	return res, nil
}

// Sum runs Algorithm 3 on the rows of x (row-major, n d values) centred at mu.
func (p *NormalPlan) Sum(x, mu []float64, r *rand.Rand) (NormalResult, error) {
	a, err := p.NewAccumulator(mu)
	if err != nil {
		return NormalResult{}, err
	}
	if err := a.Add(x); err != nil {
		return NormalResult{}, err
	}
	return a.Release(r)
}

// PlainSum writes the column sums of the rows of x into out (len d): the baseline the benchmarks
// compare Algorithm 3 with (same loop structure, no centring, norm or clipping).
func PlainSum(x []float64, out []float64) {
	d := len(out)
	for j := range out {
		out[j] = 0
	}
	for i := 0; i+d <= len(x); i += d {
		row := x[i : i+d : i+d]
		j := 0
		for ; j+4 <= d; j += 4 {
			out[j] += row[j]
			out[j+1] += row[j+1]
			out[j+2] += row[j+2]
			out[j+3] += row[j+3]
		}
		for ; j < d; j++ {
			out[j] += row[j]
		}
	}
}
