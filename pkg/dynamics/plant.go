package dynamics

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dpsim/dpsim/internal/rowmajor"

	"gonum.org/v1/gonum/mat"
)

// Plant is the simulation core of the plant of eq. (16): x(t+1) = A x(t) + B u(t), y(t) = C x(t).
// It keeps row-major copies of the matrices and preallocated buffers, so Output, Step and Reset do
// not allocate. A Plant is not safe for concurrent use.
type Plant struct {
	nx, nu, ny int
	a, b, c    []float64 // row-major A (nx x nx), B (nx x nu), C (ny x nx)
	x, xn      []float64
}

// NewPlant returns the plant of sys started at x0 (nil x0 means the origin). It panics if x0 is
// non-nil with a length other than sys.Nx() (a programming error; validate user data with
// sys.CheckState first).
func NewPlant(sys *LTI, x0 []float64) *Plant {
	p := &Plant{
		nx: sys.Nx(), nu: sys.Nu(), ny: sys.Ny(),
		a: rowmajor.Copy(sys.A), c: rowmajor.Copy(sys.C),
	}
	if sys.B != nil {
		p.b = rowmajor.Copy(sys.B)
	}
	p.x = make([]float64, p.nx)
	p.xn = make([]float64, p.nx)
	p.Reset(x0)
	return p
}

// CheckState returns an error unless v is nil or has length Nx with finite entries.
func (s *LTI) CheckState(v []float64) error {
	if v == nil {
		return nil
	}
	if len(v) != s.Nx() {
		return fmt.Errorf("dynamics: state has length %d, want nx=%d", len(v), s.Nx())
	}
	return finiteVec("state", v)
}

// Nx is the state dimension.
func (p *Plant) Nx() int { return p.nx }

// Nu is the input dimension.
func (p *Plant) Nu() int { return p.nu }

// Ny is the output dimension.
func (p *Plant) Ny() int { return p.ny }

// Reset sets the state to x0 (nil: the origin). It panics if len(x0) is not Nx.
func (p *Plant) Reset(x0 []float64) {
	if x0 == nil {
		clear(p.x)
		return
	}
	if len(x0) != p.nx {
		panic(fmt.Sprintf("dynamics: plant state has length %d, want nx=%d", len(x0), p.nx))
	}
	copy(p.x, x0)
}

// Output writes y(t) = C x(t) into dst (len >= Ny). Eq. (16).
func (p *Plant) Output(dst []float64) {
	nx := p.nx
	if nx == 2 && p.ny == 1 { // written out: the loop's operations in its order, bit for bit
		c, x := p.c[:2], p.x[:2]
		var acc float64
		acc += c[0] * x[0]
		acc += c[1] * x[1]
		dst[0] = acc
		return
	}
	x := p.x[:nx]
	for i := 0; i < p.ny; i++ {
		row := p.c[i*nx : (i+1)*nx]
		var acc float64
		for j, v := range row {
			acc += v * x[j]
		}
		dst[i] = acc
	}
}

// Step advances x(t+1) = A x(t) + B u(t) (eq. 16); u must have length >= Nu. No allocation.
func (p *Plant) Step(u []float64) {
	nx, nu := p.nx, p.nu
	if nx == 2 && nu == 1 { // written out: the loop's operations in its order, bit for bit
		x, a, b := p.x[:2], p.a[:4], p.b[:2]
		x0, x1, u0 := x[0], x[1], u[0]
		x[0], x[1] = row21(a[0], a[1], b[0], x0, x1, u0), row21(a[2], a[3], b[1], x0, x1, u0)
		return
	}
	x := p.x[:nx]
	for i := 0; i < nx; i++ {
		row := p.a[i*nx : (i+1)*nx]
		var acc float64
		for j, v := range row {
			acc += v * x[j]
		}
		if nu > 0 {
			brow := p.b[i*nu : (i+1)*nu]
			for j, v := range brow {
				acc += v * u[j]
			}
		}
		p.xn[i] = acc
	}
	copy(p.x, p.xn)
}

// State returns the current state x(t) as a view into the plant (no copy): do not modify it;
// its contents change with Step and Reset.
func (p *Plant) State() []float64 { return p.x }

// ObserverController is the cloud-side output-feedback tracking controller of eq. (24):
//
//	u(t)      = -K (x^(t) - x_r(t))
//	x^(t+1)   = A x^(t) + B u(t) + L (y^(t) - C x^(t))
//
// (the paper writes -K_P' with K_P a column; here K is nu x nx, the MATLAB dlqr convention, so
// the paper's K_P' = [3.4240 4.3095] is K). Step is pure given the state and allocation-free.
type ObserverController struct {
	nx, nu, ny    int
	a, b, c, k, l []float64 // row-major A, B, C, K (nu x nx), L (nx x ny)
	ref           Reference
	xhat, xn, r   []float64
	e, innov      []float64
	// refTab holds x_r(0), x_r(1), ... row by row (nx values a step), filled the first time a
	// step is asked for: a Reference is a pure function of t, so every later episode reads the
	// same float64 values instead of recomputing them (tanh: an exp per step of every episode).
	refTab []float64
	// vehicle: nx = 2, nu = 1, ny = 1 (the paper's vehicle), stepped by step211
	vehicle bool
}

// refTabSteps bounds the steps whose reference is tabulated (16 KiB a state dimension);
// beyond it, Reference.At is called at every step.
const refTabSteps = 1 << 11

// NewObserverController builds the controller of eq. (24) for sys with gains K (nu x nx) and
// L (nx x ny), reference ref (nil: the zero reference) and initial estimate xhat0 (nil: the origin).
func NewObserverController(sys *LTI, K, L *mat.Dense, ref Reference, xhat0 []float64) (*ObserverController, error) {
	if sys == nil {
		return nil, errors.New("dynamics: observer-controller: system is nil")
	}
	nx, nu, ny := sys.Nx(), sys.Nu(), sys.Ny()
	if nu == 0 {
		return nil, errors.New("dynamics: observer-controller: the system has no input matrix B")
	}
	if K == nil || K.IsEmpty() {
		return nil, errors.New("dynamics: observer-controller: gain K is missing")
	}
	if L == nil || L.IsEmpty() {
		return nil, errors.New("dynamics: observer-controller: observer gain L is missing")
	}
	if r, c := K.Dims(); r != nu || c != nx {
		return nil, fmt.Errorf("dynamics: observer-controller: K must be nu x nx = %dx%d (u = -K x), got %dx%d", nu, nx, r, c)
	}
	if r, c := L.Dims(); r != nx || c != ny {
		return nil, fmt.Errorf("dynamics: observer-controller: L must be nx x ny = %dx%d, got %dx%d", nx, ny, r, c)
	}
	if err := checkFinite("K", K); err != nil {
		return nil, err
	}
	if err := checkFinite("L", L); err != nil {
		return nil, err
	}
	if ref == nil {
		ref = ZeroReference{N: nx}
	}
	if d, ok := ref.(Dimensioned); ok && d.Dim() != nx {
		return nil, fmt.Errorf("dynamics: observer-controller: reference has dimension %d, want nx=%d", d.Dim(), nx)
	}
	if err := sys.CheckState(xhat0); err != nil {
		return nil, fmt.Errorf("dynamics: observer-controller: initial estimate: %w", err)
	}
	c := &ObserverController{
		nx: nx, nu: nu, ny: ny,
		a: rowmajor.Copy(sys.A), b: rowmajor.Copy(sys.B), c: rowmajor.Copy(sys.C), k: rowmajor.Copy(K), l: rowmajor.Copy(L),
		ref:  ref,
		xhat: make([]float64, nx), xn: make([]float64, nx), r: make([]float64, nx),
		e: make([]float64, nx), innov: make([]float64, ny),
		vehicle: nx == 2 && nu == 1 && ny == 1,
	}
	c.Reset(xhat0)
	return c, nil
}

// Reset sets the estimate to xhat0 (nil: the origin). It panics if len(xhat0) is not Nx.
func (c *ObserverController) Reset(xhat0 []float64) {
	if xhat0 == nil {
		clear(c.xhat)
		return
	}
	if len(xhat0) != c.nx {
		panic(fmt.Sprintf("dynamics: estimate has length %d, want nx=%d", len(xhat0), c.nx))
	}
	copy(c.xhat, xhat0)
}

// Estimate returns the current estimate x^(t) as a view (no copy): do not modify it.
func (c *ObserverController) Estimate() []float64 { return c.xhat }

// refAt returns x_r(t) (a view): from the table when step t was seen before, else from the
// Reference (tabulated when t is the next step of the table).
func (c *ObserverController) refAt(t int) []float64 {
	nx := c.nx
	if t >= 0 && (t+1)*nx <= len(c.refTab) {
		return c.refTab[t*nx : (t+1)*nx : (t+1)*nx]
	}
	if t*nx != len(c.refTab) || t >= refTabSteps {
		c.ref.At(t, c.r)
		return c.r
	}
	n := len(c.refTab)
	c.refTab = slices.Grow(c.refTab, nx)[:n+nx]
	r := c.refTab[n : n+nx : n+nx]
	c.ref.At(t, r)
	return r
}

// Step writes u(t) = -K (x^(t) - x_r(t)) into u (len >= Nu) from the received output y^(t)
// (len >= Ny) and advances x^(t+1) = A x^ + B u + L (y^ - C x^), eq. (24). No allocation (as long
// as the reference's At does not allocate) but when the reference table grows: at the first
// steps the controller ever runs, amortised.
func (c *ObserverController) Step(t int, yhat []float64, u []float64) {
	r := c.refAt(t)
	if c.vehicle {
		c.step211(r, yhat, u)
		return
	}
	c.stepAny(r, yhat, u)
}

// step211 is stepAny for nx = 2, nu = 1, ny = 1, written out: the same operations in the same
// order (sums from 0, left to right), so the same float64 results bit for bit, without loops or
// bounds checks.
func (c *ObserverController) step211(r, yhat, u []float64) {
	xh, a, b, cc, k, l := c.xhat[:2], c.a[:4], c.b[:2], c.c[:2], c.k[:2], c.l[:2]
	x0, x1 := xh[0], xh[1]
	e0, e1 := x0-r[0], x1-r[1]
	var acc float64
	acc += k[0] * e0
	acc += k[1] * e1
	u0 := -acc
	u[0] = u0
	innov := yhat[0]
	innov -= cc[0] * x0
	innov -= cc[1] * x1
	n0 := row21(a[0], a[1], b[0], x0, x1, u0)
	n0 += l[0] * innov
	n1 := row21(a[2], a[3], b[1], x0, x1, u0)
	n1 += l[1] * innov
	xh[0], xh[1] = n0, n1
}

// row21 is the row (a0 a1 | b) of [A B] times (x0, x1, u), summed as the loops sum it: from 0,
// left to right (0 + a0 x0 is a0 x0 but for its sign when it is -0: the sum keeps the loops'
// +0).
func row21(a0, a1, b, x0, x1, u float64) float64 {
	var acc float64
	acc += a0 * x0
	acc += a1 * x1
	acc += b * u
	return acc
}

// stepAny is Step for any dimensions, with x_r(t) in r.
func (c *ObserverController) stepAny(r, yhat []float64, u []float64) {
	nx, nu, ny := c.nx, c.nu, c.ny
	xh := c.xhat[:nx]
	e := c.e[:nx]
	for i := range e {
		e[i] = xh[i] - r[i]
	}
	for j := 0; j < nu; j++ {
		row := c.k[j*nx : (j+1)*nx]
		var acc float64
		for i, v := range row {
			acc += v * e[i]
		}
		u[j] = -acc
	}
	innov := c.innov[:ny]
	for i := 0; i < ny; i++ {
		row := c.c[i*nx : (i+1)*nx]
		acc := yhat[i]
		for j, v := range row {
			acc -= v * xh[j]
		}
		innov[i] = acc
	}
	for i := 0; i < nx; i++ {
		var acc float64
		row := c.a[i*nx : (i+1)*nx]
		for j, v := range row {
			acc += v * xh[j]
		}
		brow := c.b[i*nu : (i+1)*nu]
		for j, v := range brow {
			acc += v * u[j]
		}
		lrow := c.l[i*ny : (i+1)*ny]
		for j, v := range lrow {
			acc += v * innov[j]
		}
		c.xn[i] = acc
	}
	copy(c.xhat, c.xn)
}
