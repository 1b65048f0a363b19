package privacy

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// verifyDesign checks a GaussianDesign against the theory, independently of the solver:
//   - every LMI (12) holds: lambda_min(Sigma - c N N^T) >= -1e-12 ||Sigma||, and c N^T Sigma^{-1} N <= 1;
//   - the design is tight: 0.999 Sigma violates some LMI;
//   - TraceOptimal = trace(W Sigma) <= TraceScalar;
//   - the dual weights certify near-optimality: c (tr M^{1/2})^2 <= TraceOptimal <= (1+gapTol) * that,
//     with M = sum lambda_j (L^T N_j)(L^T N_j)^T and W = L L^T (weak duality);
//   - SqrtSigma is a symmetric square root of Sigma.
func verifyDesign(t *testing.T, d GaussianDesign, lambdaBar *mat.Dense, gapTol float64) {
	t.Helper()
	r := d.Sigma.SymmetricDim()
	c := d.LMIScale
	scale := mat.Norm(d.Sigma, 2)
	if d.MinLMIEigenvalue < -1e-12*scale || d.MaxLMIViolation > 1e-12*scale {
		t.Errorf("LMI violated: min eigenvalue %v (||Sigma|| %v)", d.MinLMIEigenvalue, scale)
	}
	var ch mat.Cholesky
	if !ch.Factorize(d.Sigma) {
		t.Fatal("Sigma is not positive definite")
	}
	worst := 0.0
	for _, v := range d.Constraints {
		var x mat.VecDense
		nv := mat.NewVecDense(r, v)
		if err := ch.SolveVecTo(&x, nv); err != nil {
			t.Fatal(err)
		}
		worst = math.Max(worst, c*mat.Dot(nv, &x))
	}
	if worst > 1+1e-10 {
		t.Errorf("max c N^T Sigma^-1 N = %v > 1: some LMI (12) fails", worst)
	}
	if worst/0.999 <= 1 {
		t.Errorf("0.999 Sigma still satisfies every LMI (max %v): the design is not tight", worst/0.999)
	}
	W := mat.NewSymDense(r, nil)
	if lambdaBar == nil {
		for i := 0; i < r; i++ {
			W.SetSym(i, i, 1)
		}
	} else {
		W.SymOuterK(1, lambdaBar.T())
	}
	var ws mat.Dense
	ws.Mul(W, d.Sigma)
	if tr := mat.Trace(&ws); !relClose(tr, d.TraceOptimal, 1e-10) {
		t.Errorf("TraceOptimal %v, trace(W Sigma) = %v", d.TraceOptimal, tr)
	}
	if !relClose(d.TraceScalar, d.ScalarSigma*d.ScalarSigma*mat.Trace(W), 1e-12) {
		t.Errorf("TraceScalar %v != sigma^2 tr(W)", d.TraceScalar)
	}
	if d.TraceOptimal > d.TraceScalar {
		t.Errorf("optimal trace %v exceeds the scalar choice %v", d.TraceOptimal, d.TraceScalar)
	}
	// independent dual bound
	var chW mat.Cholesky
	if !chW.Factorize(W) {
		t.Fatal("W not PD")
	}
	var L mat.TriDense
	chW.LTo(&L)
	M := mat.NewSymDense(r, nil)
	sum := 0.0
	for j, v := range d.Constraints {
		lj := d.DualWeights[j]
		if lj < 0 {
			t.Fatalf("negative dual weight %v", lj)
		}
		sum += lj
		var u mat.VecDense
		u.MulVec(L.T(), mat.NewVecDense(r, v))
		M.SymRankOne(M, lj, &u)
	}
	var eig mat.EigenSym
	eig.Factorize(M, false)
	f := 0.0
	for _, ev := range eig.Values(nil) {
		f += math.Sqrt(math.Max(ev, 0))
	}
	bound := c * f * f / sum // homogeneous: (tr M^{1/2})^2 / sum(lambda)
	if bound > d.TraceOptimal*(1+1e-9) {
		t.Errorf("dual bound %v above the primal %v: weak duality broken", bound, d.TraceOptimal)
	}
	if d.TraceOptimal > bound*(1+gapTol) {
		t.Errorf("primal %v is %.3g above the dual bound %v (tolerance %v)", d.TraceOptimal, d.TraceOptimal/bound-1, bound, gapTol)
	}
	var sq mat.Dense
	sq.Mul(d.SqrtSigma, d.SqrtSigma)
	if !mat.EqualApprox(&sq, d.Sigma, 1e-10*scale) || !mat.EqualApprox(d.SqrtSigma, d.SqrtSigma.T(), 1e-12*math.Sqrt(scale)) {
		t.Errorf("SqrtSigma is not the symmetric square root of Sigma")
	}
}

// TestDesignAnisotropic: constraints 10 e1 and e2 (Value 10). The scalar choice needs sigma^2 =
// 100 c in both directions (trace 200 c); the optimum is diag(100 c, c) (trace 101 c).
func TestDesignAnisotropic(t *testing.T) {
	s := Sensitivity{Adjacency: Manifold, Norm: 2, Value: 10, Constraints: [][]float64{{10, 0}, {0, 1}, {3, 0.2}}}
	d, err := DesignGaussian(s, 1, 1e-2, 1, Tight, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinv, _ := KappaInverse(1, 1e-2)
	c := 1 / (kinv * kinv)
	if !relClose(d.LMIScale, c, 1e-14) {
		t.Errorf("c = %v, want (mu/kappa^-1)^2 = %v", d.LMIScale, c)
	}
	want := []float64{100 * c, 0, 0, c}
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			if math.Abs(d.Sigma.At(i, j)-want[2*i+j]) > 1e-7*100*c {
				t.Errorf("Sigma = %v, want diag(100c, c)", mat.Formatted(d.Sigma))
			}
		}
	}
	if !relClose(d.TraceOptimal, 101*c, 1e-7) || !relClose(d.TraceScalar, 200*c, 1e-12) {
		t.Errorf("traces %v / %v, want 101c / 200c", d.TraceOptimal, d.TraceScalar)
	}
	if !d.Converged || d.ScalarIsOptimal || !relClose(d.TraceSavedPercent, 49.5, 1e-5) {
		t.Errorf("converged %v, scalar optimal %v, saved %v%%", d.Converged, d.ScalarIsOptimal, d.TraceSavedPercent)
	}
	verifyDesign(t, d, nil, 1e-7)
}

// TestDesignScalarTight: the scalar sigma satisfies the defining inequality of Theorem 1 and 0.999
// sigma does not.
func TestDesignScalarTight(t *testing.T) {
	A, C := vehicle(0.1)
	s, err := DynamicsSensitivity(A, C, 100, Block, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, eps := range []float64{0.01, 0.1, 1, 5} {
		d, err := DesignGaussian(s, eps, 1e-2, 1, Tight, obsMatrix(A, C, 100))
		if err != nil {
			t.Fatal(err)
		}
		if !GaussianSatisfies(eps, 1e-2, 1, s.Value, d.ScalarSigma) || GaussianSatisfies(eps, 1e-2, 1, s.Value, 0.999*d.ScalarSigma) {
			t.Errorf("eps=%v: scalar sigma %v is not the tight calibration", eps, d.ScalarSigma)
		}
	}
}

// TestDesignVehicle: the optimal Sigma for the vehicle (LambdaBar = O_T, T = 100) under both
// adjacencies satisfies every LMI, is certified optimal by its dual weights, and beats the scalar
// choice strictly.
func TestDesignVehicle(t *testing.T) {
	A, C := vehicle(0.1)
	horizons := []int{100}
	if !testing.Short() {
		horizons = append(horizons, 1000)
	}
	for _, T := range horizons {
		O := obsMatrix(A, C, T)
		for _, adj := range []Adjacency{Manifold, Block} {
			s, err := DynamicsSensitivity(A, C, T, adj, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			d, err := DesignGaussian(s, 1, 1e-2, 1, Tight, O)
			if err != nil {
				t.Fatal(err)
			}
			verifyDesign(t, d, O, 1e-7)
			if !d.Converged || d.Iterations == 0 {
				t.Errorf("%s: converged %v after %d Newton steps, gap %v", adj, d.Converged, d.Iterations, d.DualityGap)
			}
			if !(d.TraceOptimal < 0.9*d.TraceScalar) {
				t.Errorf("%s: optimal trace %v not clearly below scalar %v", adj, d.TraceOptimal, d.TraceScalar)
			}
			t.Logf("vehicle T=%d %s: Delta=%.4f sigma=%.4f trace scalar %.4g optimal %.4g (saved %.2f%%), %d Newton steps, working set %d of %d, gap %.2g",
				T, adj, s.Value, d.ScalarSigma, d.TraceScalar, d.TraceOptimal, d.TraceSavedPercent, d.Iterations, d.WorkingSet, len(s.Constraints), d.DualityGap)
		}
	}
}

// TestDesignSatisfiesTheorem1: end to end on the explicit mechanism - with Lambda = LambdaBar
// sqrt(Sigma), Delta_N of Theorem 1 (computed by the general circuit code, which knows nothing of the
// design) equals kappa^{-1}(delta)/mu up to the feasibility margin: (eps, delta)-DP holds, tightly.
func TestDesignSatisfiesTheorem1(t *testing.T) {
	type tc struct {
		name string
		p    Problem
	}
	var cases []tc
	A, C := vehicle(0.1)
	cases = append(cases, tc{"vehicle T=6", cloudProblem(A, C, 6)})
	r := rng.New(5, rng.Label("design-e2e"))
	for i := 0; i < 4; i++ {
		n, q := 6, 3
		F := randDense(r, 4, n)
		D := randDense(r, q, n)
		N, _ := KernelBasis(D)
		var fn mat.Dense
		fn.Mul(F, N)
		cases = append(cases, tc{"random", Problem{F: F, D: D, LambdaBar: &fn}})
		Am, Cm := randDense(r, 3, 3), randDense(r, 2, 3)
		cases = append(cases, tc{"random dynamics", cloudProblem(Am, Cm, 3)})
	}
	for _, c := range cases {
		for _, eps := range []float64{0.1, 1} {
			mu := 0.7
			s, err := ManifoldSensitivity(c.p, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			d, err := DesignGaussian(s, eps, 1e-3, mu, Tight, c.p.LambdaBar)
			if err != nil {
				t.Fatal(err)
			}
			verifyDesign(t, d, c.p.LambdaBar, 1e-7)
			var Lam mat.Dense
			Lam.Mul(c.p.LambdaBar, d.SqrtSigma)
			dn, err := DeltaN(c.p.F, c.p.D, &Lam, 0)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			limit := d.KappaInv / mu
			if dn.Value > limit*(1+1e-9) || dn.Value < limit*(1-1e-6) {
				t.Errorf("%s eps=%v: Delta_N(Lambda) = %v, Theorem 1 needs <= %v (and tight)", c.name, eps, dn.Value, limit)
			}
			if !GaussianSatisfies(eps, 1e-3, mu, dn.Value*(1-1e-9), 1) {
				t.Errorf("%s: Kappa check fails for the designed Lambda", c.name)
			}
		}
	}
}

// TestDesignScalarCases: with r = 1 (consensus, position-only model) the optimum is the scalar
// design; paper-bound reproduces the paper's sigma = 2.5244 and widens c accordingly.
func TestDesignScalarCases(t *testing.T) {
	one := mat.NewDense(1, 1, []float64{1})
	s, err := DynamicsSensitivity(one, one, 100, Manifold, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	ones := mat.NewDense(100, 1, nil)
	for i := 0; i < 100; i++ {
		ones.Set(i, 0, 1)
	}
	tight, err := DesignGaussian(s, 1, 1e-2, 1, Tight, ones)
	if err != nil {
		t.Fatal(err)
	}
	if !relClose(tight.Sigma.At(0, 0), tight.ScalarSigma*tight.ScalarSigma, 1e-9) || !relClose(tight.TraceOptimal, tight.TraceScalar, 1e-9) {
		t.Errorf("r=1: Sigma %v, want sigma^2 = %v", tight.Sigma.At(0, 0), tight.ScalarSigma*tight.ScalarSigma)
	}
	verifyDesign(t, tight, ones, 1e-9)
	paper, err := DesignGaussian(s, 1, 1e-2, 1, PaperBound, ones)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(paper.ScalarSigma-2.5244) > 1e-4 || math.Abs(math.Sqrt(paper.Sigma.At(0, 0))-2.5244) > 1e-4 {
		t.Errorf("paper-bound sigma %v / sqrt(Sigma) %v, want 2.5244", paper.ScalarSigma, math.Sqrt(paper.Sigma.At(0, 0)))
	}
	if !(paper.LMIScale > tight.LMIScale) || !relClose(paper.LMIScale, paper.ScalarSigma*paper.ScalarSigma, 1e-12) {
		t.Errorf("paper-bound c = %v, tight c = %v", paper.LMIScale, tight.LMIScale)
	}
	if _, err := DesignGaussian(s, 2, 1e-2, 1, Classic, ones); err == nil {
		t.Errorf("classic calibration with eps = 2 must be refused")
	}
}

// TestDesignRandom: random LMI sets in R^r, r = 2..5, random weights: feasibility, certificate,
// and never worse than the scalar choice.
func TestDesignRandom(t *testing.T) {
	for trial := 0; trial < 12; trial++ {
		r := rng.New(9, rng.Label("design-random"), uint64(trial))
		dim := 2 + trial%4
		m := dim + r.IntN(30)
		var cons [][]float64
		val := 0.0
		for j := 0; j < m; j++ {
			v := make([]float64, dim)
			for i := range v {
				v[i] = r.NormFloat64() * float64(1+i*i)
			}
			cons = append(cons, v)
			val = math.Max(val, vecNorm(v, 2))
		}
		s := Sensitivity{Norm: 2, Value: val, Constraints: cons}
		L := randDense(r, dim+3, dim)
		d, err := DesignGaussian(s, 0.5, 1e-5, 2, Tight, L)
		if err != nil {
			t.Fatal(err)
		}
		verifyDesign(t, d, L, 1e-7)
		if !d.Converged {
			t.Errorf("trial %d: not converged, gap %v", trial, d.DualityGap)
		}
	}
}

func TestDesignErrors(t *testing.T) {
	good := Sensitivity{Norm: 2, Value: 2, Constraints: [][]float64{{2, 0}, {0, 1}}}
	cases := []struct {
		name string
		s    Sensitivity
		L    *mat.Dense
		want string
	}{
		{"laplace norm", Sensitivity{Norm: 1, Value: 1, Constraints: [][]float64{{1}}}, nil, "2-norm"},
		{"no constraints", Sensitivity{Norm: 2, Value: 3}, nil, "no LMI constraints"},
		{"inconsistent", Sensitivity{Norm: 2, Value: 1, Constraints: [][]float64{{2, 0}}}, nil, "do not belong together"},
		{"lambda dims", good, identity(3), "LambdaBar is 3x3"},
		{"lambda rank", good, mat.NewDense(3, 2, []float64{1, 1, 1, 1, 1, 1}), "full column rank"},
		{"not spanning", Sensitivity{Norm: 2, Value: 1, Constraints: [][]float64{{1, 0}, {0.5, 0}}}, nil, "span only 1 of the 2"},
		{"ragged", Sensitivity{Norm: 2, Value: 1, Constraints: [][]float64{{1, 0}, {0.5}}}, nil, "has length 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DesignGaussian(tc.s, 1, 1e-2, 1, Tight, tc.L)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := DesignGaussian(good, 1, 2, 1, Tight, nil); err == nil {
		t.Error("delta = 2 must be refused")
	}
}

// TestDesignLaplace: Algorithm 2, sigma = mu Delta_L / eps (eq. (14)).
func TestDesignLaplace(t *testing.T) {
	one := mat.NewDense(1, 1, []float64{1})
	s, _ := DynamicsSensitivity(one, one, 100, Manifold, 1, 0)
	d, err := DesignLaplace(s, 0.1, 1)
	if err != nil || !relClose(d.Scale, 10, 1e-14) {
		t.Errorf("position-only Laplace scale %v (%v), want mu/eps = 10", d.Scale, err)
	}
	A, C := vehicle(0.1)
	s, _ = DynamicsSensitivity(A, C, 100, Manifold, 1, 0)
	d, err = DesignLaplace(s, 1, 2)
	if err != nil || !relClose(d.Scale, 2*109, 1e-9) {
		t.Errorf("vehicle Laplace scale %v (%v), want 2*109", d.Scale, err)
	}
	s2, _ := DynamicsSensitivity(A, C, 100, Manifold, 2, 0)
	if _, err := DesignLaplace(s2, 1, 1); err == nil || !strings.Contains(err.Error(), "1-norm") {
		t.Errorf("2-norm sensitivity must be refused: %v", err)
	}
	if _, err := DesignLaplace(s, 0, 1); err == nil {
		t.Error("eps = 0 must be refused")
	}
}
