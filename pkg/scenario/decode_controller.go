package scenario

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gopkg.in/yaml.v3"
)

var (
	controllerFields = []string{"K", "L", "lqr", "observer", "reference", "xhat0"}
	lqrFields        = []string{"Q", "R"}
	stepRefFields    = []string{"before", "after", "at"}
)

// controllerDoc is the controller section while it is decoded; p is nil when the plant is
// missing or invalid (then dimensions are not checked).
type controllerDoc struct {
	c     *ControllerSpec
	p     *PlantSpec
	steps int
}

// controllerTable is controller: {K | lqr, L | observer, reference, xhat0}, in the order
// it is decoded (the file lists K, L, lqr, observer, ...: controllerFields).
var controllerTable = []field[controllerDoc]{
	{key: "K", or: "lqr", need: "the feedback gain (nu x nx; a flat list is one row), or lqr: {Q, R} to derive it", set: setGainK},
	{key: "lqr", or: "K", set: func(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
		t.c.LQR = d.lqr(n, path, t.p, func(p *PlantSpec) (int, string) { return p.Nu(), "inputs: plant.B is " + p.B.dims() })
		return true
	}},
	{key: "L", or: "observer", need: "the observer gain (nx x ny; a flat list is one column), or observer: {Q, R} to derive it", set: setGainL},
	{key: "observer", or: "L", set: func(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
		t.c.Observer = d.lqr(n, path, t.p, func(p *PlantSpec) (int, string) { return p.Ny(), "outputs: plant.C is " + p.C.dims() })
		return true
	}},
	{key: "reference", set: func(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
		t.c.Reference = d.reference(n, path, t.p, t.steps)
		return true
	}},
	{key: "xhat0", set: func(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
		if v, ok := d.vector(n, path); ok {
			t.c.Xhat0 = v
			if p := t.p; p != nil && len(v) != p.Nx() {
				d.add(n, path, "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), p.Nx())
			}
		}
		return true
	}, absent: func(_ *decoder, t *controllerDoc, _ *fields) bool {
		if t.p != nil {
			t.c.Xhat0 = make([]float64, t.p.Nx())
		}
		return true
	}},
}

func setGainK(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
	m, ok := d.matrix(n, path, flatRow)
	if !ok {
		return false
	}
	t.c.K = m
	if p := t.p; p != nil && (m.Rows() != p.Nu() || m.Cols() != p.Nx()) {
		d.add(n, path, "is %s, want %dx%d (inputs x states: plant.B is %s)", m.dims(), p.Nu(), p.Nx(), p.B.dims())
	}
	return true
}

func setGainL(d *decoder, t *controllerDoc, n *yaml.Node, path string) bool {
	m, ok := d.matrix(n, path, flatColumn)
	if !ok {
		return false
	}
	t.c.L = m
	if p := t.p; p != nil && (m.Rows() != p.Nx() || m.Cols() != p.Ny()) {
		d.add(n, path, "is %s, want %dx%d (states x outputs: plant.C is %s)", m.dims(), p.Nx(), p.Ny(), p.C.dims())
	}
	return true
}

// controller decodes controller: {K | lqr, L | observer, reference, xhat0}; p may be nil
// (plant missing or invalid), in which case dimensions are not checked.
func (d *decoder) controller(n *yaml.Node, p *PlantSpec, steps int) *ControllerSpec {
	t := &controllerDoc{c: &ControllerSpec{Reference: ReferenceSpec{Kind: RefZero}}, p: p, steps: steps}
	if f, _ := section(d, n, "controller", t, controllerTable, controllerFields...); f == nil {
		return nil
	}
	return t.c
}

// lqrDoc is an LQR design's weights while they are decoded: Q is nx x nx, R is m x m with
// m and its explanation from dim (inputs for the controller, outputs for the observer).
type lqrDoc struct {
	out *LQRSpec
	p   *PlantSpec
	dim func(*PlantSpec) (int, string)
}

const weightHelp = "a weight: a number q (q times I), a flat list (the diagonal) or rows"

var lqrTable = []field[lqrDoc]{
	{key: "Q", need: weightHelp, set: func(d *decoder, t *lqrDoc, n *yaml.Node, path string) bool {
		return d.weight(n, path, t.p, &t.out.Q, false, func(p *PlantSpec) (int, string) { return p.Nx(), "states: plant.A is " + p.A.dims() })
	}},
	{key: "R", need: weightHelp, set: func(d *decoder, t *lqrDoc, n *yaml.Node, path string) bool {
		return d.weight(n, path, t.p, &t.out.R, true, t.dim)
	}},
}

// lqr decodes {Q, R}. Each may be a number q (q I), a flat list (diagonal) or rows. It
// returns nil when a weight is unusable or the plant is unknown.
func (d *decoder) lqr(n *yaml.Node, path string, p *PlantSpec, dim func(*PlantSpec) (int, string)) *LQRSpec {
	t := &lqrDoc{out: &LQRSpec{}, p: p, dim: dim}
	if f, good := section(d, n, path, t, lqrTable); f == nil || !good || p == nil {
		return nil
	}
	return t.out
}

// weight decodes one LQR weight into *into: expanded to the size dim gives (when the plant
// is known) and checked symmetric and positive (semi)definite.
func (d *decoder) weight(n *yaml.Node, path string, p *PlantSpec, into *Matrix, definite bool, dim func(*PlantSpec) (int, string)) bool {
	mtx, sh, ok := d.matrixRaw(n, path)
	if !ok {
		return false
	}
	if p == nil {
		return true
	}
	size, why := dim(p)
	full, ok := weightRaw{node: n, path: path, m: mtx, shape: sh}.expand(d, size, why)
	if !ok || !d.checkWeight(full, n, path, definite) {
		return false
	}
	*into = full
	return true
}

// checkWeight requires a symmetric weight, positive semidefinite (Q) or definite (R).
func (d *decoder) checkWeight(m Matrix, n *yaml.Node, path string, definite bool) bool {
	k := m.Rows()
	scale := 0.0
	for i := range k {
		for j := range k {
			scale = math.Max(scale, math.Abs(m[i][j]))
		}
	}
	tol := 1e-12 * math.Max(1, scale)
	for i := range k {
		for j := i + 1; j < k; j++ {
			if math.Abs(m[i][j]-m[j][i]) > tol {
				d.add(n, path, "not symmetric: entry [%d][%d] = %g but [%d][%d] = %g", i, j, m[i][j], j, i, m[j][i])
				return false
			}
		}
	}
	sym := mat.NewSymDense(k, nil)
	for i := range k {
		for j := i; j < k; j++ {
			sym.SetSym(i, j, m[i][j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, false) {
		d.add(n, path, "eigenvalues could not be computed")
		return false
	}
	lo := eig.Values(nil)[0]
	switch {
	case definite && lo <= tol:
		d.add(n, path, "must be positive definite (smallest eigenvalue %g)", lo)
		return false
	case !definite && lo < -tol:
		d.add(n, path, "must be positive semidefinite (smallest eigenvalue %g)", lo)
		return false
	}
	return true
}

// reference decodes tanh | zero | a constant vector | {step: {before, after, at}}.
func (d *decoder) reference(n *yaml.Node, path string, p *PlantSpec, steps int) ReferenceSpec {
	const allowed = "allowed: tanh, zero, a constant vector such as [1, 0], or {step: {before, after, at}}"
	t := &refDoc{r: ReferenceSpec{Kind: RefStep}, p: p, steps: steps}
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		switch ReferenceKind(n.Value) {
		case RefTanh:
			if p != nil && p.Nx() > 0 && p.Nx() != 2 {
				d.add(n, path, "tanh is the paper's 2-state profile (position, velocity), but plant.A is %s", p.A.dims())
			}
			return ReferenceSpec{Kind: RefTanh}
		case RefZero:
			return ReferenceSpec{Kind: RefZero}
		}
		d.add(n, path, "unknown reference %q (%s)", n.Value, allowed)
	case n.Kind == yaml.SequenceNode || isNumber(n):
		if v, ok := d.vector(n, path); ok {
			t.checkLen(d, v, n, path)
			return ReferenceSpec{Kind: RefConstant, Value: v}
		}
	case n.Kind == yaml.MappingNode:
		if _, ok := section(d, n, path, t, refStepTable); ok {
			return t.r
		}
	default:
		d.add(n, path, "want a reference, got %s (%s)", describe(n), allowed)
	}
	return ReferenceSpec{}
}

// refDoc is a step reference while it is decoded.
type refDoc struct {
	r     ReferenceSpec
	p     *PlantSpec
	steps int
}

// checkLen requires one entry per state of the plant (when known).
func (t *refDoc) checkLen(d *decoder, v []float64, n *yaml.Node, path string) {
	if p := t.p; p != nil && p.Nx() > 0 && len(v) != p.Nx() {
		d.add(n, path, "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), p.Nx())
	}
}

// refStepTable is {step: {...}}; a step that is a mapping counts as usable even when its
// fields are not (they are reported), as the reference then is a step.
var refStepTable = []field[refDoc]{
	{key: "step", need: "write {step: {before, after, at}}", set: func(d *decoder, t *refDoc, n *yaml.Node, path string) bool {
		f, _ := section(d, n, path, t, stepTable, stepRefFields...)
		return f != nil
	}},
}

var stepTable = []field[refDoc]{
	{key: "before", need: "a vector, one entry per state", set: func(d *decoder, t *refDoc, n *yaml.Node, path string) bool {
		return t.setVector(d, &t.r.Before, n, path)
	}},
	{key: "after", need: "a vector, one entry per state", set: func(d *decoder, t *refDoc, n *yaml.Node, path string) bool {
		return t.setVector(d, &t.r.After, n, path)
	}},
	{key: "at", need: "the first step with the after value, an integer >= 0", set: func(d *decoder, t *refDoc, n *yaml.Node, path string) bool {
		hi := int64(MaxSteps)
		why := " (the first step with the after value)"
		if t.steps > 0 {
			hi = int64(t.steps - 1)
			why = fmt.Sprintf(" (the last step is %d; steps = %d)", t.steps-1, t.steps)
		}
		t.r.At, _ = d.intIn(n, path, 0, hi, why)
		return true
	}},
}

func (t *refDoc) setVector(d *decoder, into *[]float64, n *yaml.Node, path string) bool {
	v, ok := d.vector(n, path)
	if ok {
		t.checkLen(d, v, n, path)
		*into = v
	}
	return ok
}

// weightRaw is an LQR weight as written: q (q times I), a flat list (diagonal) or rows.
type weightRaw struct {
	node  *yaml.Node
	path  string
	m     Matrix
	shape shape
}

// expand builds the n x n weight matrix, reporting a size mismatch against want (the
// explanation of n).
func (w weightRaw) expand(d *decoder, n int, want string) (Matrix, bool) {
	out := make(Matrix, n)
	switch w.shape {
	case shapeScalar:
		for i := range out {
			out[i] = make([]float64, n)
			out[i][i] = w.m[0][0]
		}
	case shapeFlat:
		if len(w.m[0]) != n {
			d.add(w.node, w.path, "%d diagonal entries, want %d (%s)", len(w.m[0]), n, want)
			return nil, false
		}
		for i := range out {
			out[i] = make([]float64, n)
			out[i][i] = w.m[0][i]
		}
	default:
		if w.m.Rows() != n || w.m.Cols() != n {
			d.add(w.node, w.path, "is %s, want %dx%d (%s)", w.m.dims(), n, n, want)
			return nil, false
		}
		out = w.m.clone()
	}
	return out, true
}
