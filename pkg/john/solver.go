package john

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Solver holds the state of one run; Step advances it by one iteration. It owns worker
// goroutines: call Close when done (Solve does). A Solver is not safe for concurrent use.
type Solver struct {
	cfg  Config
	a    blas64.General
	n, d int

	w, wNext []float64 // w_k and the next iterate
	prev     []float64 // exact: w_k of the last step (its h is known)
	sum      []float64 // sum of the iterates w_1..w_k
	count    int       // number of iterates in sum
	h        []float64 // exact: h(w_k); fast/dp: sketched h in the metric of P_k
	hPrev    []float64 // fast/dp: sketched h in the metric of P_{k-1}
	iter     int
	lastMax  float64 // exact: max_i h_i of the normalised prev (verified)

	pool   *pool
	gram   *gramJob
	lev    *levJob
	sketch *sketchJob
	q      []float64 // d x d work (Q or P, factorised in place)
	qFull  []float64 // d x d: Q(v) of the last evaluate, before factorisation
	pPrev  []float64 // fast/dp: P_{k-1} before factorisation
	pCur   []float64 // fast/dp: P_k before factorisation
	sk, m  []float64 // s x d: S and M = S U^{-T}
	tau    []float64 // fast/dp: leverage estimates
	bs     []float64 // sampled rows, scaled by sqrt(w_i / p_i)
	pv, pz []float64 // power-iteration vectors (d)
	evW    []float64 // evaluation weights (n)
	evH    []float64 // evaluation leverages (n)

	rnd       *rand.Rand
	sampled   float64 // sum over iterations of rows kept
	refreshes int
	sigma     float64
	noiseSrc  string
	sens      *Sensitivity
	traceLog  []TracePoint
	warnings  []string

	maxAbs         float64 // largest |a_ij| and where (0-based), for overflow/underflow messages
	maxRow, maxCol int
}

// NewSolver validates A and cfg and prepares a run (for fast and dp this includes the
// O(1)-approximate leverage scores of B_1 = sqrt(W_1) A from a CountSketch subspace
// embedding, Algorithm 1 line 14).
//
// Errors of the exported functions and methods carry the prefix "john: " once; the internal helpers
// return unprefixed errors.
func NewSolver(A *mat.Dense, cfg Config) (*Solver, error) {
	s, err := newSolver(A, cfg)
	if err != nil {
		return nil, fmt.Errorf("john: %w", err)
	}
	return s, nil
}

func newSolver(A *mat.Dense, cfg Config) (*Solver, error) {
	if A == nil || A.IsEmpty() {
		return nil, fmt.Errorf("empty matrix")
	}
	n, d := A.Dims()
	if n < d {
		return nil, fmt.Errorf("A is %d x %d; need n >= d rows (a bounded polytope needs rank d)", n, d)
	}
	raw := A.RawMatrix()
	maxAbs, maxRow, maxCol, maxNorm2 := 0.0, 0, 0, 0.0
	for i := 0; i < n; i++ {
		norm2 := 0.0
		for j, x := range raw.Data[i*raw.Stride : i*raw.Stride+d] {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("A[%d][%d] = %g is not finite (row %d, column %d, 1-based)", i, j, x, i+1, j+1)
			}
			if math.Abs(x) > maxAbs {
				maxAbs, maxRow, maxCol = math.Abs(x), i, j
			}
			norm2 += x * x
		}
		maxNorm2 = math.Max(maxNorm2, norm2)
	}
	// Every iterate has sum_i w_i = d, so the entries of A^T W A are at most d max_i ||a_i||^2 (and
	// the leverages a_i^T Q^{-1} a_i need ||a_i||^2 too): refuse what overflows, before it turns into
	// a misleading "not positive definite".
	if math.IsInf(float64(d)*maxNorm2, 0) {
		return nil, overflowError(maxAbs, maxRow, maxCol)
	}
	c, err := cfg.resolve(n, d)
	if err != nil {
		return nil, err
	}
	s := &Solver{
		maxAbs: maxAbs, maxRow: maxRow, maxCol: maxCol,
		cfg: c, a: raw, n: n, d: d,
		w: make([]float64, n), wNext: make([]float64, n), prev: make([]float64, n),
		sum: make([]float64, n), h: make([]float64, n),
		pool: newPool(c.Workers), gram: newGramJob(d), lev: newLevJob(d),
		q:       make([]float64, d*d),
		qFull:   make([]float64, d*d),
		lastMax: math.Inf(1),
		rnd:     rng.New(c.Seed, rng.Label("john"), rng.Label(string(c.Method))),
	}
	for i := range s.w {
		s.w[i] = float64(d) / float64(n) // Algorithm 1, line 9
	}
	if c.Method == Exact {
		return s, nil
	}
	sz := c.SketchSize
	s.sketch = newSketchJob(sz)
	s.hPrev = make([]float64, n)
	s.tau = make([]float64, n)
	s.pPrev = make([]float64, d*d)
	s.pCur = make([]float64, d*d)
	s.sk = make([]float64, sz*d)
	s.m = make([]float64, sz*d)
	s.pv = make([]float64, d)
	s.pz = make([]float64, d)
	if c.SampleSize < n {
		rows := c.SampleSize + 4*int(math.Sqrt(float64(c.SampleSize))) + 16
		s.bs = make([]float64, 0, min(rows, n)*d)
	}
	if c.Method == DP {
		if err := s.setupNoise(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.initLeverage(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the worker goroutines.
func (s *Solver) Close() { s.pool.close() }

// Method returns the resolved method.
func (s *Solver) Method() Method { return s.cfg.Method }

// Config returns the resolved configuration (defaults filled in).
func (s *Solver) Config() Config { return s.cfg }

// Iterations returns the number of Steps done.
func (s *Solver) Iterations() int { return s.iter }

// overflowError reports entries of A too large for float64 arithmetic on A^T W A.
func overflowError(maxAbs float64, row, col int) error {
	return fmt.Errorf("A's entries are too large: A^T W A overflows float64 (largest |a_ij| = %g at row %d, column %d, 1-based); "+
		"rescale A (A -> c A keeps the weights and scales the polytope and its ellipsoid by 1/c)", maxAbs, row+1, col+1)
}

func (s *Solver) rankError() error {
	hint := ""
	if s.maxAbs < 1e-150 {
		hint = fmt.Sprintf(" (its largest entry |a_ij| = %g is so small that the products a_ij a_ik underflow: rescale A)", s.maxAbs)
	}
	return fmt.Errorf("A^T W A is not positive definite: A (%d x %d) must have rank d = %d%s", s.n, s.d, s.d, hint)
}

// factor Cholesky-factorises the d x d matrix q in place. A non-finite entry is reported as an
// overflow (not as a rank defect).
func (s *Solver) factor(q []float64) (blas64.Triangular, float64, error) {
	for _, x := range q[:s.d*s.d] {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return blas64.Triangular{}, 0, overflowError(s.maxAbs, s.maxRow, s.maxCol)
		}
	}
	u, logdet, ok := cholesky(q, s.d)
	if !ok {
		return u, 0, s.rankError()
	}
	return u, logdet, nil
}

// checkLeverages refuses non-finite leverages (overflow in a_i^T Q^{-1} a_i for a nearly singular Q).
func (s *Solver) checkLeverages(h []float64) error {
	for i, x := range h {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Errorf("leverage h_%d = a_%d^T Q^{-1} a_%d = %g is not finite: Q is numerically singular or A's scale overflows (largest |a_ij| = %g); rescale A",
				i+1, i+1, i+1, x, s.maxAbs)
		}
	}
	return nil
}

// exactGram writes A^T diag(w) A into q and factorises it.
func (s *Solver) exactFactor(w []float64) (blas64.Triangular, float64, error) {
	s.gram.gram(s.pool, s.a, w, s.q)
	return s.factor(s.q)
}

// Step performs one iteration.
func (s *Solver) Step() error {
	var err error
	if s.cfg.Method == Exact {
		err = s.stepExact()
	} else {
		err = s.stepFast()
	}
	if err != nil {
		return fmt.Errorf("john: iteration %d: %w", s.iter+1, err)
	}
	s.iter++
	return nil
}

// stepExact: w_{k+1,i} = w_{k,i} h_i(w_k) (the fixed point of Definition 3.8, p = inf).
func (s *Solver) stepExact() error {
	u, _, err := s.exactFactor(s.w)
	if err != nil {
		return err
	}
	s.lev.leverages(s.pool, s.a, u, s.h)
	if err := s.checkLeverages(s.h); err != nil {
		return err
	}
	sumW, maxH := 0.0, 0.0
	for i, wi := range s.w {
		sumW += wi
		s.sum[i] += wi
		if s.h[i] > maxH && wi > 0 {
			maxH = s.h[i]
		}
		s.wNext[i] = wi * s.h[i]
	}
	// Rows with w_i = 0 keep weight 0; they are feasible iff h_i <= 1 too.
	for i, wi := range s.w {
		if wi == 0 && s.h[i] > maxH {
			maxH = s.h[i]
		}
	}
	s.count++
	// h(c w) = h(w)/c: the normalised w_k has max leverage maxH * sum(w)/d.
	s.lastMax = maxH * sumW / float64(s.d)
	s.prev, s.w, s.wNext = s.w, s.wNext, s.prev
	return nil
}

// normals fills x with N(0, 1) draws (Definition 3.10).
func (s *Solver) normals(x []float64) {
	for i := range x {
		x[i] = s.rnd.NormFloat64()
	}
}

// sketchIn sets M = S U^{-T} for a fresh Gaussian S (s x d, Definition 3.10) and writes
// out_i = ||M a_i||^2 / s, an unbiased estimate of a_i^T P^{-1} a_i for P = U^T U
// (||S x||^2 / s with x = U^{-T} a_i; S U^{-T} has the law of S P^{-1/2} since a
// Gaussian S is rotation invariant).
func (s *Solver) sketchIn(u blas64.Triangular, out []float64) {
	sz := s.cfg.SketchSize
	s.normals(s.sk)
	copy(s.m, s.sk)
	m := blas64.General{Rows: sz, Cols: s.d, Stride: s.d, Data: s.m}
	// X U^T = S  =>  X = S U^{-T}.
	blas64.Trsm(blas.Right, blas.Trans, 1, u, m)
	s.sketch.sketch(s.pool, s.a, m, out)
}

// initLeverage estimates the leverage scores of B_1 = sqrt(W_1) A to within O(1):
// a CountSketch Pi with m = 2 d^2 rows gives P_0 = (Pi B_1)^T (Pi B_1), an O(1) spectral
// approximation of B_1^T B_1 with constant probability (Clarkson-Woodruff); then
// hPrev_i = ||S_0 P_0^{-1/2} a_i||^2 / s. A poor P_0 is caught by the refresh test.
func (s *Solver) initLeverage() error {
	d, n := s.d, s.n
	m := 2 * d * d
	w0 := float64(d) / float64(n)
	if m >= n/2 || s.cfg.SampleSize >= n {
		s.gram.gram(s.pool, s.a, s.w, s.pPrev)
	} else {
		cs := make([]float64, m*d)
		sq := math.Sqrt(w0)
		for i := 0; i < n; i++ {
			b := s.rnd.IntN(m)
			f := sq
			if s.rnd.Uint64()&1 == 1 {
				f = -sq
			}
			dst := cs[b*d : b*d+d]
			for k, x := range s.a.Data[i*s.a.Stride : i*s.a.Stride+d] {
				dst[k] += f * x
			}
		}
		s.gram.gram(s.pool, blas64.General{Rows: m, Cols: d, Stride: d, Data: cs}, nil, s.pPrev)
	}
	copy(s.q, s.pPrev)
	u, _, err := s.factor(s.q)
	if err != nil {
		// Confirm with the exact Gram matrix before blaming A.
		s.gram.gram(s.pool, s.a, s.w, s.pPrev)
		copy(s.q, s.pPrev)
		if u, _, err = s.factor(s.q); err != nil {
			return err
		}
	}
	s.sketchIn(u, s.hPrev)
	return nil
}

// sampleFactor builds P = B^T D B by leverage-score sampling (Algorithm 1, line 15:
// row i kept with probability p_i = min(1, N tau_i / sum tau), weight 1/p_i, so
// E[P] = B^T B) and factorises it. Rows with p_i >= 1 are kept deterministically.
// On a singular sample it retries with 2N, 4N, then falls back to the exact Gram matrix.
func (s *Solver) sampleFactor(tau []float64) (blas64.Triangular, error) {
	d, n := s.d, s.n
	total := 0.0
	for _, t := range tau {
		total += t
	}
	target := float64(s.cfg.SampleSize)
	for try := 0; try < 3 && int(target) < n && total > 0; try++ {
		c := target / total
		s.bs = s.bs[:0]
		rows := 0
		for i, t := range tau {
			p := c * t
			if !(p > 0) {
				continue
			}
			if p < 1 {
				if s.rnd.Float64() >= p {
					continue
				}
			} else {
				p = 1
			}
			f := math.Sqrt(s.w[i] / p)
			for _, x := range s.a.Data[i*s.a.Stride : i*s.a.Stride+d] {
				s.bs = append(s.bs, f*x)
			}
			rows++
		}
		if rows >= d {
			s.gram.gram(s.pool, blas64.General{Rows: rows, Cols: d, Stride: d, Data: s.bs}, nil, s.pCur)
			copy(s.q, s.pCur)
			if u, _, ok := cholesky(s.q, d); ok {
				s.sampled += float64(rows)
				return u, nil
			}
		}
		target *= 2
	}
	s.gram.gram(s.pool, s.a, s.w, s.pCur)
	copy(s.q, s.pCur)
	u, _, err := s.factor(s.q)
	if err != nil {
		return u, err
	}
	s.sampled += float64(n)
	return u, nil
}

// drift estimates lambda_max(U^{-T} P_{k-1} U^{-1}) = lambda_max(P_k^{-1} P_{k-1}) by
// power iteration: the factor by which the leverage estimates made in P_{k-1}'s metric
// can undershoot those in P_k's.
func (s *Solver) drift(u blas64.Triangular) float64 {
	d := s.d
	x := s.pv
	for i := range x {
		x[i] = 1 + float64(i%7)*0.1
	}
	xv := blas64.Vector{N: d, Inc: 1, Data: x}
	zv := blas64.Vector{N: d, Inc: 1, Data: s.pz}
	pp := blas64.General{Rows: d, Cols: d, Stride: d, Data: s.pPrev}
	lambda := 0.0
	for it := 0; it < 30; it++ {
		nrm := blas64.Nrm2(xv)
		if nrm == 0 {
			return math.Inf(1)
		}
		blas64.Scal(1/nrm, xv)
		blas64.Trsv(blas.NoTrans, u, xv) // x <- U^{-1} x
		blas64.Gemv(blas.NoTrans, 1, pp, xv, 0, zv)
		blas64.Trsv(blas.Trans, u, zv) // z <- U^{-T} P_{k-1} U^{-1} x
		lambda = blas64.Nrm2(zv)
		copy(x, s.pz)
	}
	return lambda
}

// stepFast is one iteration of Algorithm 1 (lines 12-20).
func (s *Solver) stepFast() error {
	// Line 14: O(1)-approximate leverage scores of B_k = sqrt(W_k) A, tau_i = w_i a_i^T
	// P_{k-1}^{-1} a_i, from the sketch of the previous iteration.
	for i, wi := range s.w {
		s.tau[i] = wi * s.hPrev[i]
	}
	u, err := s.sampleFactor(s.tau)
	if err != nil {
		return err
	}
	if s.cfg.SampleSize < s.n && s.drift(u) > RefreshRatio {
		s.refreshes++
		s.sketchIn(u, s.hPrev)
		for i, wi := range s.w {
			s.tau[i] = wi * s.hPrev[i]
		}
		if u, err = s.sampleFactor(s.tau); err != nil {
			return err
		}
	}
	// Lines 16-18: wbar_i = ||S_k (B^T D B)^{-1/2} sqrt(w_i) a_i||^2 / s.
	s.sketchIn(u, s.h)
	for i, wi := range s.w {
		s.sum[i] += wi
		s.wNext[i] = wi * s.h[i]
	}
	s.count++
	// Lines 19-20: w_{k+1,i} = wbar_{k+1,i} (1 + z_{k+1,i}).
	if s.cfg.Method == DP {
		for i := range s.wNext {
			s.wNext[i] *= 1 + TruncatedNormal(s.rnd, s.sigma)
		}
	}
	s.w, s.wNext = s.wNext, s.w
	s.h, s.hPrev = s.hPrev, s.h
	s.pPrev, s.pCur = s.pCur, s.pPrev
	return nil
}

// Average writes the normalised mean of the iterates w_1..w_k (sum d, Algorithm 1
// lines 23-28) into dst (allocated when nil) and returns it. Before any Step it is w_1.
func (s *Solver) Average(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, s.n)
	}
	src := s.sum
	if s.count == 0 {
		src = s.w
	}
	tot := 0.0
	for _, x := range src {
		tot += x
	}
	f := float64(s.d) / tot
	for i, x := range src {
		dst[i] = f * x
	}
	return dst
}

// evaluate computes h(v), max_i h_i(v) and log det Q(v) exactly; Q(v) is left in
// s.qFull, the leverages in s.evH.
func (s *Solver) evaluate(v []float64) (maxH, logdet float64, err error) {
	if s.evH == nil {
		s.evH = make([]float64, s.n)
	}
	s.gram.gram(s.pool, s.a, v, s.q)
	copy(s.qFull, s.q)
	u, logdet, err := s.factor(s.q)
	if err != nil {
		return 0, 0, err
	}
	s.lev.leverages(s.pool, s.a, u, s.evH)
	if err := s.checkLeverages(s.evH); err != nil {
		return 0, 0, err
	}
	for _, x := range s.evH {
		maxH = max(maxH, x)
	}
	return maxH, logdet, nil
}

func (s *Solver) averageMaxLeverage() (float64, error) {
	if s.evW == nil {
		s.evW = make([]float64, s.n)
	}
	mh, _, err := s.evaluate(s.Average(s.evW))
	return mh, err
}

// MaxLeverage evaluates exactly (one O(n d^2) pass) max_i h_i of the weights Result would
// return now: the normalised average, or for exact the better of it and the last iterate.
func (s *Solver) MaxLeverage() (float64, error) {
	mh, err := s.maxLeverage()
	if err != nil {
		return 0, fmt.Errorf("john: %w", err)
	}
	return mh, nil
}

func (s *Solver) maxLeverage() (float64, error) {
	mh, err := s.averageMaxLeverage()
	if err != nil {
		return 0, err
	}
	if s.cfg.Method == Exact && s.count > 0 {
		mh = min(mh, s.lastMax)
	}
	return mh, nil
}

// trace appends the accuracy of the current output.
func (s *Solver) trace() error {
	mh, err := s.maxLeverage()
	if err != nil {
		return err
	}
	s.traceLog = append(s.traceLog, TracePoint{Iteration: s.iter, MaxLeverage: mh})
	return nil
}

// Result evaluates the output weights exactly and assembles the Result (Elapsed unset).
func (s *Solver) Result() (*Result, error) {
	c := s.cfg
	v := s.Average(nil)
	out := "average"
	if c.Method == Exact && s.count > 0 {
		useLast := s.lastMax <= 1+c.Xi
		if !useLast {
			mh, _, err := s.evaluate(v)
			if err != nil {
				return nil, fmt.Errorf("john: result: %w", err)
			}
			useLast = s.lastMax < mh
		}
		if useLast {
			tot := 0.0
			for _, x := range s.prev {
				tot += x
			}
			for i, x := range s.prev {
				v[i] = x * float64(s.d) / tot
			}
			out = "last-iterate"
		}
	}
	maxH, logdet, err := s.evaluate(v)
	if err != nil {
		return nil, fmt.Errorf("john: result: %w", err)
	}
	qs := mat.NewSymDense(s.d, nil)
	for i := 0; i < s.d; i++ {
		for j := i; j < s.d; j++ {
			qs.SetSym(i, j, s.qFull[i*s.d+j])
		}
	}
	sumV := 0.0
	for _, x := range v {
		sumV += x
	}
	r := &Result{
		Method: c.Method, Weights: v, Q: qs, SumWeights: sumV, MaxLeverage: maxH, LogDetQ: logdet,
		Iterations: s.iter, Converged: maxH <= 1+c.Xi, Xi: c.Xi, Output: out, Seed: c.Seed,
		Trace: s.traceLog, Warnings: append([]string(nil), s.warnings...),
	}
	if c.Method != Exact {
		r.SketchSize, r.SampleSize, r.Refreshes = c.SketchSize, c.SampleSize, s.refreshes
		if s.iter > 0 {
			r.MeanSampled = s.sampled / float64(s.iter+s.refreshes)
		}
	}
	if c.Method == DP {
		r.NoiseScale, r.NoiseSource = s.sigma, s.noiseSrc
		r.Guarantee, r.GuaranteeNote = GuaranteeNone, GuaranteeNote
		r.Sensitivity = s.sens
	}
	if w := r.ConvergenceWarning(); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	return r, nil
}

// ConvergenceWarning returns "" when the result is converged (MaxLeverage <= 1 + Xi), else the
// warning (also in Warnings) that says by how much it missed.
func (r *Result) ConvergenceWarning() string {
	if r.Converged {
		return ""
	}
	return fmt.Sprintf("not converged: max leverage - 1 = %.6g > xi = %g after %d iterations", r.MaxLeverage-1, r.Xi, r.Iterations)
}
