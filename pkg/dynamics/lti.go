package dynamics

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// LTI is the discrete-time linear time-invariant system of eq. (16):
//
//	x(t+1) = A x(t) + B u(t),   y(t) = C x(t)
//
// with A nx x nx, B nx x nu and C ny x nx. B may be nil (nu = 0): an autonomous model, e.g. the
// private subsystem whose trajectory is protected (the paper's vehicle protects p(t) with A = 1,
// C = 1 and the velocity treated as a known input).
type LTI struct {
	A, B, C *mat.Dense
}

// NewLTI checks the dimensions of (A, B, C) and returns the system holding copies of the
// matrices. B may be nil. Entries must be finite.
func NewLTI(A, B, C *mat.Dense) (*LTI, error) {
	if A == nil || A.IsEmpty() {
		return nil, errors.New("dynamics: A is missing")
	}
	if C == nil || C.IsEmpty() {
		return nil, errors.New("dynamics: C is missing")
	}
	ar, ac := A.Dims()
	if ar != ac {
		return nil, fmt.Errorf("dynamics: A must be square, got %dx%d", ar, ac)
	}
	nx := ar
	if B != nil && !B.IsEmpty() {
		br, _ := B.Dims()
		if br != nx {
			return nil, fmt.Errorf("dynamics: B must have nx=%d rows (as A), got %d", nx, br)
		}
	}
	_, cc := C.Dims()
	if cc != nx {
		return nil, fmt.Errorf("dynamics: C must have nx=%d columns (as A), got %d", nx, cc)
	}
	for _, m := range []struct {
		name string
		M    *mat.Dense
	}{{"A", A}, {"B", B}, {"C", C}} {
		if m.M == nil || m.M.IsEmpty() {
			continue
		}
		if err := checkFinite(m.name, m.M); err != nil {
			return nil, err
		}
	}
	s := &LTI{A: mat.DenseCopyOf(A), C: mat.DenseCopyOf(C)}
	if B != nil && !B.IsEmpty() {
		s.B = mat.DenseCopyOf(B)
	}
	return s, nil
}

func checkFinite(name string, m mat.Matrix) error {
	r, c := m.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("dynamics: %s[%d,%d] = %v is not finite", name, i, j, v)
			}
		}
	}
	return nil
}

// Nx is the state dimension.
func (s *LTI) Nx() int { r, _ := s.A.Dims(); return r }

// Nu is the input dimension (0 when B is nil).
func (s *LTI) Nu() int {
	if s.B == nil {
		return 0
	}
	_, c := s.B.Dims()
	return c
}

// Ny is the output dimension.
func (s *LTI) Ny() int { r, _ := s.C.Dims(); return r }

func mustHorizon(T, min int, what string) {
	if T < min {
		panic(fmt.Sprintf("dynamics: %s needs horizon T >= %d, got %d", what, min, T))
	}
}

// Observability returns O_T = [C; CA; ...; CA^{T-1}] (T*ny x nx), Section 5.2. T must be >= 1.
func (s *LTI) Observability(T int) *mat.Dense {
	mustHorizon(T, 1, "Observability")
	nx, ny := s.Nx(), s.Ny()
	O := mat.NewDense(T*ny, nx, nil)
	cur := mat.DenseCopyOf(s.C) // C A^t
	var next mat.Dense
	for t := 0; t < T; t++ {
		O.Slice(t*ny, (t+1)*ny, 0, nx).(*mat.Dense).Copy(cur)
		if t+1 < T {
			next.Mul(cur, s.A)
			cur.Copy(&next)
		}
	}
	return O
}

// DPerp returns D_perp = [I; A; ...; A^{T-1}] (T*nx x nx), eq. (21): a basis of ker D with
// D D_perp = 0, and F D_perp = O_T. T must be >= 1.
func (s *LTI) DPerp(T int) *mat.Dense {
	mustHorizon(T, 1, "DPerp")
	nx := s.Nx()
	P := mat.NewDense(T*nx, nx, nil)
	cur := eye(nx)
	var next mat.Dense
	for t := 0; t < T; t++ {
		P.Slice(t*nx, (t+1)*nx, 0, nx).(*mat.Dense).Copy(cur)
		if t+1 < T {
			next.Mul(s.A, cur)
			cur.Copy(&next)
		}
	}
	return P
}

// StackedD returns the (T-1)nx x T nx constraint matrix of eq. (20): block row t is
// [0 ... A -I ... 0] with A in block column t and -I in block column t+1, so that the stacked
// trajectory x = [x(0); ...; x(T-1)] satisfies D x + b = 0 with b = InputTerm(u), eq. (19).
// T must be >= 2 (for T = 1 there is no constraint; the function panics).
func (s *LTI) StackedD(T int) *mat.Dense {
	mustHorizon(T, 2, "StackedD")
	nx := s.Nx()
	D := mat.NewDense((T-1)*nx, T*nx, nil)
	for t := 0; t < T-1; t++ {
		D.Slice(t*nx, (t+1)*nx, t*nx, (t+1)*nx).(*mat.Dense).Copy(s.A)
		for i := 0; i < nx; i++ {
			D.Set(t*nx+i, (t+1)*nx+i, -1)
		}
	}
	return D
}

// StackedF returns F = I_T (x) C (T*ny x T*nx), the output map of mechanism (18). T >= 1.
func (s *LTI) StackedF(T int) *mat.Dense {
	mustHorizon(T, 1, "StackedF")
	nx, ny := s.Nx(), s.Ny()
	F := mat.NewDense(T*ny, T*nx, nil)
	for t := 0; t < T; t++ {
		F.Slice(t*ny, (t+1)*ny, t*nx, (t+1)*nx).(*mat.Dense).Copy(s.C)
	}
	return F
}

// CheckInputs reports whether u is a valid input sequence for InputTerm: every u[t] has length Nu.
func (s *LTI) CheckInputs(u [][]float64) error {
	nu := s.Nu()
	for t, ut := range u {
		if len(ut) != nu {
			return fmt.Errorf("dynamics: input u(%d) has length %d, want nu=%d", t, len(ut), nu)
		}
	}
	return nil
}

// InputTerm returns b = (I_{T-1} (x) B) u, eq. (19): block t is B u(t), for the inputs
// u = [u(0); ...; u(T-2)] (len(u) = T-1). With D from StackedD, D x + b = 0 holds for every
// trajectory of the system. For B == nil, b is zero. It panics if some u[t] does not have length
// Nu (a programming error; validate user data with CheckInputs first).
func (s *LTI) InputTerm(u [][]float64) []float64 {
	if err := s.CheckInputs(u); err != nil {
		panic(err.Error())
	}
	nx, nu := s.Nx(), s.Nu()
	b := make([]float64, len(u)*nx)
	if nu == 0 {
		return b
	}
	for t, ut := range u {
		for i := 0; i < nx; i++ {
			var acc float64
			for j := 0; j < nu; j++ {
				acc += s.B.At(i, j) * ut[j]
			}
			b[t*nx+i] = acc
		}
	}
	return b
}

// rankTol is the numerical-rank threshold used by the checks: a singular value counts as zero
// when it is below max(rows, cols) * eps * sigma_max (the LAPACK/MATLAB rank convention).
//
// Assumption 1 is checked in two places with different tolerances, on purpose. Here (CheckAssumption1,
// a diagnostic of the system: is O_T of full rank at all) the threshold is the rounding level above.
// pkg/privacy's checkAssumption1 (run by DynamicsSensitivity, the check the calibration pipeline
// relies on) uses its package-wide rankTol = 1e-10 relative, the same threshold as its rank condition
// (8) and circuit enumeration: a system with sigma_min/sigma_max in (~1e-15, 1e-10) passes here but is
// refused there, because its sensitivity (~ sigma_max/sigma_min) would be calibrated from an
// ill-conditioned O_T^+. The packages do not share code (neither imports the other; delegating privacy's
// check to this one would make privacy's own rank decisions inconsistent with each other).
func rankTol(rows, cols int, smax float64) float64 {
	return float64(max(rows, cols)) * 2.220446049250313e-16 * smax
}

// singularValues returns the singular values of m in decreasing order.
func singularValues(m mat.Matrix) ([]float64, bool) {
	var svd mat.SVD
	if !svd.Factorize(m, mat.SVDNone) {
		return nil, false
	}
	return svd.Values(nil), true
}

// ObservabilityRank returns the numerical rank of O_T and its smallest and largest singular
// values (rank decided with the max(rows,cols)*eps*sigma_max threshold).
func (s *LTI) ObservabilityRank(T int) (rank int, sMin, sMax float64, err error) {
	if T < 1 {
		return 0, 0, 0, fmt.Errorf("dynamics: horizon T must be >= 1, got %d", T)
	}
	O := s.Observability(T)
	sv, ok := singularValues(O)
	if !ok {
		return 0, 0, 0, errors.New("dynamics: SVD of the observability matrix did not converge")
	}
	r, c := O.Dims()
	nx := s.Nx()
	sMax = sv[0]
	if len(sv) < nx { // fewer rows than columns: missing singular values are zero
		sMin = 0
	} else {
		sMin = sv[nx-1]
	}
	tol := rankTol(r, c, sMax)
	for _, v := range sv {
		if v > tol {
			rank++
		}
	}
	return rank, sMin, sMax, nil
}

// CheckObservable returns nil when rank O_T = nx (Assumption 1(i)), and otherwise an error giving
// the rank, the smallest singular value of O_T and its ratio to the largest.
func (s *LTI) CheckObservable(T int) error {
	rank, sMin, sMax, err := s.ObservabilityRank(T)
	if err != nil {
		return err
	}
	nx := s.Nx()
	if rank == nx {
		return nil
	}
	hint := ""
	if T*s.Ny() < nx {
		hint = fmt.Sprintf("; T*ny = %d < nx: take T >= %d", T*s.Ny(), (nx+s.Ny()-1)/s.Ny())
	}
	rel := 0.0
	if sMax > 0 {
		rel = sMin / sMax
	}
	return fmt.Errorf("dynamics: Assumption 1(i) fails: (A, C) is not observable over T=%d: rank O_T = %d < nx = %d "+
		"(smallest singular value %.3g, %.3g relative to the largest)%s", T, rank, nx, sMin, rel, hint)
}

// CheckNonsingularA returns nil when A is numerically nonsingular (Assumption 1(ii)), otherwise an
// error giving A's smallest singular value and its ratio to the largest.
func (s *LTI) CheckNonsingularA() error {
	sv, ok := singularValues(s.A)
	if !ok {
		return errors.New("dynamics: SVD of A did not converge")
	}
	nx := s.Nx()
	sMin, sMax := sv[nx-1], sv[0]
	if sMin > rankTol(nx, nx, sMax) && sMax > 0 {
		return nil
	}
	rel := 0.0
	if sMax > 0 {
		rel = sMin / sMax
	}
	return fmt.Errorf("dynamics: Assumption 1(ii) fails: A is singular (smallest singular value %.3g, %.3g relative to the largest)",
		sMin, rel)
}

// CheckAssumption1 checks Assumption 1 of Section 5.2: (i) rank O_T = nx and (ii) A nonsingular.
// Every failing part is reported (errors.Join), each with its smallest singular value.
func (s *LTI) CheckAssumption1(T int) error {
	return errors.Join(s.CheckObservable(T), s.CheckNonsingularA())
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}
