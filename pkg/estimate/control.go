package estimate

import (
	"fmt"
	"github.com/dpsim/dpsim/internal/rowmajor"

	"gonum.org/v1/gonum/mat"
)

// ControlEstimator is the eavesdropper's least-squares estimate of a plant's initial state x(0)
// from the transcript yhat(0..t), u(0..t-1) (Section 5, eqs. (19)-(20); docs/math.md section 4):
//
//	x0_hat = argmin_x0 sum_{s<=t} ||yhat(s) - C A^s x0 - C xu(s)||^2,  xu(s+1) = A xu(s) + B u(s), xu(0) = 0.
//
// It keeps the normal equations O_t'O_t and O_t'(Y - known), the row block C A^t and xu(t), so
// Observe costs O(ny nx^2 + nx nu) and never allocates. It holds up to T steps (t = 0..T-1).
// Reset makes it reusable for the next episode.
type ControlEstimator struct {
	nx, nu, ny, T int
	a, b, c       []float64 // row-major A (nx x nx), B (nx x nu), C (ny x nx)

	h, h2   []float64 // C A^t (ny x nx) and scratch
	xu, xu2 []float64 // input-driven state xu(t) and scratch
	g, rhs  []float64 // O_t'O_t (nx x nx), O_t'(Y - known) (nx)
	res     []float64 // yhat(t) - C xu(t)
	u       []float64 // u(0..T-1), T x nu
	next    int       // the t the next Observe must carry
	inputs  int       // u(0..inputs-1) recorded

	x0, x, x2, l, d []float64 // solver and trajectory scratch
	// vehicle: nx = 2, nu = 1, ny = 1 (the paper's vehicle), observed by observe211
	vehicle bool
}

// NewControlEstimator returns the estimator for the plant (A, B, C) over a horizon of T steps.
// B may be nil for a plant without input. Matrices are copied; errors name the offending dimension.
func NewControlEstimator(A, B, C *mat.Dense, T int) (*ControlEstimator, error) {
	if A == nil || C == nil {
		return nil, fmt.Errorf("estimate: control: A and C are required")
	}
	nx, ac := A.Dims()
	if nx == 0 || nx != ac {
		return nil, fmt.Errorf("estimate: control: A must be square and non-empty, got %dx%d", nx, ac)
	}
	ny, cc := C.Dims()
	if ny == 0 || cc != nx {
		return nil, fmt.Errorf("estimate: control: C is %dx%d but A is %dx%d (C needs %d columns)", ny, cc, nx, nx, nx)
	}
	nu := 0
	if B != nil {
		br, bc := B.Dims()
		if br != nx || bc == 0 {
			return nil, fmt.Errorf("estimate: control: B is %dx%d but A is %dx%d (B needs %d rows)", br, bc, nx, nx, nx)
		}
		nu = bc
	}
	if T < 1 {
		return nil, fmt.Errorf("estimate: control: horizon T must be >= 1, got %d", T)
	}
	e := &ControlEstimator{nx: nx, nu: nu, ny: ny, T: T, vehicle: nx == 2 && nu == 1 && ny == 1}
	var err error
	if e.a, err = rowmajor.Finite("estimate: A", A); err != nil {
		return nil, err
	}
	if e.c, err = rowmajor.Finite("estimate: C", C); err != nil {
		return nil, err
	}
	if B != nil {
		if e.b, err = rowmajor.Finite("estimate: B", B); err != nil {
			return nil, err
		}
	}
	e.h, e.h2 = make([]float64, ny*nx), make([]float64, ny*nx)
	e.xu, e.xu2 = make([]float64, nx), make([]float64, nx)
	e.g, e.rhs, e.res = make([]float64, nx*nx), make([]float64, nx), make([]float64, ny)
	e.u = make([]float64, T*nu)
	e.x0, e.x, e.x2 = make([]float64, nx), make([]float64, nx), make([]float64, nx)
	e.l, e.d = make([]float64, nx*nx), make([]float64, nx)
	e.Reset()
	return e, nil
}

// Reset forgets the transcript so the estimator can follow a new episode. It does not allocate.
func (e *ControlEstimator) Reset() {
	copy(e.h, e.c)
	clear(e.xu)
	clear(e.g)
	clear(e.rhs)
	e.next, e.inputs = 0, 0
}

// Dims returns (nx, nu, ny).
func (e *ControlEstimator) Dims() (nx, nu, ny int) { return e.nx, e.nu, e.ny }

// Steps returns how many outputs have been observed (t+1 after Observe(t, ...)).
func (e *ControlEstimator) Steps() int { return e.next }

// Observe adds step t of the transcript: yhat(t) (length ny) and u(t) (length nu), the input applied
// after yhat(t) was published. t must be 0, 1, 2, ... in order and below T. u may be nil at the last
// observed step (the input is not yet known); a later Observe then fails because u(t) is missing.
// yhat may be nil for a missing output (the eavesdropper did not receive yhat(t)): the step still
// advances C A^t and xu(t), but its rows are left out of the least squares.
// Errors (out-of-order step, wrong length, non-finite value) leave the estimator unchanged.
// Observe never allocates on success.
func (e *ControlEstimator) Observe(t int, yhat, u []float64) error {
	if err := e.checkStep(t, yhat, u); err != nil {
		return err
	}
	if e.vehicle {
		e.observe211(t, yhat, u)
		return nil
	}
	nx, ny, nu := e.nx, e.ny, e.nu
	if yhat == nil {
		ny = 0 // a missing output: no rows this step
	}
	// Residual yhat(t) - C xu(t): the output with the known input-driven part removed.
	for i := 0; i < ny; i++ {
		v := yhat[i]
		for k := 0; k < nx; k++ {
			v -= e.c[i*nx+k] * e.xu[k]
		}
		e.res[i] = v
	}
	// Normal equations: G += H'H, rhs += H' res with H = C A^t.
	h := e.h
	for i := 0; i < ny; i++ {
		row := h[i*nx : i*nx+nx]
		ri := e.res[i]
		for j, hj := range row {
			if hj == 0 {
				continue
			}
			e.rhs[j] += hj * ri
			gj := e.g[j*nx : j*nx+nx]
			for k, hk := range row {
				gj[k] += hj * hk
			}
		}
	}
	// H <- H A for step t+1 (whether or not yhat(t) came).
	for i := 0; i < e.ny; i++ {
		for j := 0; j < nx; j++ {
			var v float64
			for k := 0; k < nx; k++ {
				v += h[i*nx+k] * e.a[k*nx+j]
			}
			e.h2[i*nx+j] = v
		}
	}
	e.h, e.h2 = e.h2, e.h
	// xu(t+1) = A xu(t) + B u(t), when u(t) is known (or the plant has no input).
	if len(u) == nu {
		copy(e.u[t*nu:t*nu+nu], u)
		for i := 0; i < nx; i++ {
			var v float64
			for k := 0; k < nx; k++ {
				v += e.a[i*nx+k] * e.xu[k]
			}
			for k := 0; k < nu; k++ {
				v += e.b[i*nu+k] * u[k]
			}
			e.xu2[i] = v
		}
		e.xu, e.xu2 = e.xu2, e.xu
		e.inputs++
	}
	e.next++
	return nil
}

// checkStep returns why step t of the transcript cannot be observed (nil: it can).
func (e *ControlEstimator) checkStep(t int, yhat, u []float64) error {
	if t == e.next && t < e.T && e.inputs >= t && (yhat == nil || len(yhat) == e.ny) && (len(u) == 0 || len(u) == e.nu) &&
		finite(yhat) < 0 && finite(u) < 0 {
		return nil // the usual step: small enough to inline into Observe
	}
	return e.stepError(t, yhat, u)
}

// stepError is checkStep's error: which of its conditions step t breaks. Not inlined, so that
// checkStep is.
//
//go:noinline
func (e *ControlEstimator) stepError(t int, yhat, u []float64) error {
	switch {
	case t != e.next:
		return fmt.Errorf("estimate: control: step %d out of order (expected %d)", t, e.next)
	case t >= e.T:
		return fmt.Errorf("estimate: control: step %d beyond the horizon T = %d", t, e.T)
	case e.inputs < t:
		return fmt.Errorf("estimate: control: u(%d) was never given, cannot use step %d", e.inputs, t)
	case yhat != nil && len(yhat) != e.ny:
		return fmt.Errorf("estimate: control: step %d: yhat has %d values, want %d", t, len(yhat), e.ny)
	case len(u) != 0 && len(u) != e.nu:
		return fmt.Errorf("estimate: control: step %d: u has %d values, want %d", t, len(u), e.nu)
	}
	if k := finite(yhat); k >= 0 {
		return fmt.Errorf("estimate: control: step %d: yhat[%d] = %v is not finite", t, k, yhat[k])
	}
	if k := finite(u); k >= 0 {
		return fmt.Errorf("estimate: control: step %d: u[%d] = %v is not finite", t, k, u[k])
	}
	return nil
}

// observe211 is Observe's update for nx = 2, ny = 1, nu = 1 (the paper's vehicle), written out:
// the loops' operations in their order (sums from 0, left to right, the same zero skips), so
// the same float64 results bit for bit, without loops or bounds checks. C A^t is updated in
// place (the loops alternate two buffers).
func (e *ControlEstimator) observe211(t int, yhat, u []float64) {
	a, c, h, xu := e.a[:4], e.c[:2], e.h[:2], e.xu[:2]
	h0, h1 := h[0], h[1]
	if yhat != nil {
		// Residual yhat(t) - C xu(t), then G += H'H, rhs += H' res (H = C A^t, one row).
		v := yhat[0]
		v -= c[0] * xu[0]
		v -= c[1] * xu[1]
		e.res[0] = v
		g, rhs := e.g[:4], e.rhs[:2]
		if h0 != 0 {
			rhs[0] += h0 * v
			g[0] += h0 * h0
			g[1] += h0 * h1
		}
		if h1 != 0 {
			rhs[1] += h1 * v
			g[2] += h1 * h0
			g[3] += h1 * h1
		}
	}
	var n0, n1 float64 // H A
	n0 += h0 * a[0]
	n0 += h1 * a[2]
	n1 += h0 * a[1]
	n1 += h1 * a[3]
	h[0], h[1] = n0, n1
	if len(u) == 1 { // xu(t+1) = A xu(t) + B u(t)
		b, u0 := e.b[:2], u[0]
		e.u[t] = u0
		var x0, x1 float64
		x0 += a[0] * xu[0]
		x0 += a[1] * xu[1]
		x0 += b[0] * u0
		x1 += a[2] * xu[0]
		x1 += a[3] * xu[1]
		x1 += b[1] * u0
		xu[0], xu[1] = x0, x1
		e.inputs++
	}
	e.next++
}

// Estimate writes x0_hat into dst (length nx) and reports whether O_t'O_t is invertible (false until
// enough steps were observed, e.g. t >= nx-1 for an observable single-output plant; see MinPivot).
// It costs O(nx^3) and does not allocate. It panics if len(dst) != nx.
func (e *ControlEstimator) Estimate(dst []float64) bool {
	if len(dst) != e.nx {
		panic("estimate: ControlEstimator.Estimate: len(dst) != nx")
	}
	if e.next == 0 {
		return false
	}
	return solveSPD(e.nx, e.g, e.rhs, dst, e.l, e.d)
}

// Trajectory writes the implied state x_hat(t) = A^t x0_hat + xu(t) into dst (length nx), for
// 0 <= t <= (number of inputs given), by running the model forward from x0_hat with the recorded u.
// It reports false when the estimate does not exist yet or t is out of range. Cost O(t (nx^2 + nx nu)),
// no allocation. It panics if len(dst) != nx.
func (e *ControlEstimator) Trajectory(t int, dst []float64) bool {
	if len(dst) != e.nx {
		panic("estimate: ControlEstimator.Trajectory: len(dst) != nx")
	}
	if t < 0 || t > e.inputs || !e.Estimate(e.x0) {
		return false
	}
	nx, nu := e.nx, e.nu
	x, x2 := e.x, e.x2
	copy(x, e.x0)
	for s := 0; s < t; s++ {
		u := e.u[s*nu : s*nu+nu]
		for i := 0; i < nx; i++ {
			var v float64
			for k := 0; k < nx; k++ {
				v += e.a[i*nx+k] * x[k]
			}
			for k := 0; k < nu; k++ {
				v += e.b[i*nu+k] * u[k]
			}
			x2[i] = v
		}
		x, x2 = x2, x
	}
	copy(dst, x)
	return true
}

// Information returns a copy of O_t'O_t. Under i.i.d. output noise of variance s^2 per component the
// estimate's error covariance is s^2 (O_t'O_t)^{-1}. It allocates.
func (e *ControlEstimator) Information() *mat.SymDense {
	return mat.NewSymDense(e.nx, append([]float64(nil), e.g...))
}
