package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// Top-level and nested field names, in the order the documentation lists them.
var (
	topFields        = []string{"name", "description", "kind", "steps", "runs", "seed", "plant", "controller", "graph", "x0", "privacy", "sweep", "transport", "faults", "audit"}
	plantFields      = []string{"A", "B", "C", "x0"}
	controllerFields = []string{"K", "L", "lqr", "observer", "reference", "xhat0"}
	lqrFields        = []string{"Q", "R"}
	stepRefFields    = []string{"before", "after", "at"}
	graphFields      = []string{"name", "n", "degree", "rows", "cols", "weight", "seed", "edges"}
	privacyFields    = []string{"mechanism", "epsilon", "delta", "mu", "adjacency", "noise", "calibration", "sampler", "model", "episodes", "run_epsilon"}
	modelFields      = []string{"A", "C"}
	sweepFields      = []string{"param", "values"}
	transportFields  = []string{"mode", "period", "timeout"}
)

// graphParams says which graph fields each named graph (dynamics.GraphNames) uses.
var graphParams = map[string][]string{
	"paper10":        {"n", "weight"},
	"ring":           {"n", "weight"},
	"path":           {"n", "weight"},
	"complete":       {"n", "weight"},
	"grid":           {"rows", "cols", "n", "weight"},
	"random-regular": {"n", "degree", "weight", "seed"},
}

// MaxSweepPoints bounds the number of scenarios a sweep expands to.
const MaxSweepPoints = 10_000

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func decodeScenario(data []byte, source string, d *decoder) *Scenario {
	root := parseDocument(data, d)
	if root == nil {
		return nil
	}
	top := d.mapping(root, "", topFields...)
	if top == nil {
		return nil
	}
	s := &Scenario{}

	// name, description
	if n := top.get("name"); n != nil {
		if v, ok := d.str(n, "name"); ok {
			if !nameRE.MatchString(v) || len(v) > 100 {
				d.add(n, "name", "%q is not a valid name (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters)", v)
			}
			s.Name = v
		}
	} else {
		base := strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
		if source == "" || !nameRE.MatchString(base) {
			d.missing(top, "name", "give the scenario a name (letters, digits, '.', '_' and '-')")
		}
		s.Name = base
	}
	if n := top.get("description"); n != nil {
		s.Description, _ = d.str(n, "description")
	}

	// kind, steps, runs, seed
	kindOK := false
	if n := top.get("kind"); n != nil {
		if v, ok := d.str(n, "kind"); ok {
			k, err := ParseKind(v)
			if err != nil {
				d.add(n, "kind", "%v", err)
			} else {
				s.Kind, kindOK = k, true
			}
		}
	} else {
		d.missing(top, "kind", "want "+joinNames(Kinds))
	}
	if n := top.get("steps"); n != nil {
		s.Steps, _ = d.intIn(n, "steps", 1, MaxSteps, " (the horizon T)")
	} else {
		d.missing(top, "steps", "the horizon T, an integer >= 1")
	}
	if n := top.get("runs"); n != nil {
		s.Runs, _ = d.intIn(n, "runs", 1, MaxRuns, " (Monte Carlo runs)")
	} else {
		d.missing(top, "runs", "the number of Monte Carlo runs, an integer >= 1")
	}
	if n := top.get("seed"); n != nil {
		s.Seed, _ = d.uint64v(n, "seed")
	}

	// sections
	if n := top.get("plant"); n != nil {
		s.Plant = d.plant(n)
	}
	if n := top.get("controller"); n != nil {
		s.Controller = d.controller(n, s.Plant, s.Steps)
	}
	if n := top.get("graph"); n != nil {
		s.Network = d.graph(n)
	}
	if n := top.get("x0"); n != nil {
		if v, ok := d.vector(n, "x0"); ok {
			s.X0 = v
			if s.Network != nil && s.Network.N > 0 && len(v) != s.Network.N {
				d.add(n, "x0", "%d entries, but the graph has %d nodes: give one initial value per node", len(v), s.Network.N)
			}
		}
	}
	var pr *rawPrivacy
	if n := top.get("privacy"); n != nil {
		pr = d.privacy(n, s.Plant)
	} else {
		d.missing(top, "privacy", "give privacy: {epsilon, delta, ...} (mechanism, noise and calibration have defaults)")
	}
	var sweeps []rawSweep
	if n := top.get("sweep"); n != nil {
		sweeps = d.sweeps(n)
	}
	if n := top.get("transport"); n != nil {
		s.Transport = d.transport(n)
	} else {
		s.Transport = TransportSpec{Mode: Lockstep}
	}

	// kind-dependent presence
	if kindOK {
		switch s.Kind {
		case CloudControl:
			if !top.has("plant") {
				d.missing(top, "plant", "kind cloud-control requires plant: {A, B, C, x0}")
			}
			if !top.has("controller") {
				d.missing(top, "controller", "kind cloud-control requires controller: {K, L, reference} or {lqr, observer, reference}")
			}
			if n := top.get("graph"); n != nil {
				d.add(n, "graph", "only for kind consensus (this scenario is cloud-control)")
			}
			if n := top.get("x0"); n != nil {
				d.add(n, "x0", "only for kind consensus (a cloud-control plant's initial state is plant.x0)")
			}
		case Consensus:
			if !top.has("graph") {
				d.missing(top, "graph", "kind consensus requires graph: a named graph {name: paper10, ...} or an edge list {n, edges}")
			}
			if !top.has("x0") {
				d.missing(top, "x0", "kind consensus requires x0, one initial value per node")
			}
			if n := top.get("plant"); n != nil {
				d.add(n, "plant", "only for kind cloud-control (consensus agents follow eq. 25)")
			}
			if n := top.get("controller"); n != nil {
				d.add(n, "controller", "only for kind cloud-control (consensus agents follow eq. 25)")
			}
			if pr != nil && pr.modelNode != nil {
				d.add(pr.modelNode, "privacy.model", "only for kind cloud-control (a consensus agent's private model is the scalar x_i)")
			}
		}
	}

	if n := top.get("audit"); n != nil {
		dim, what := 0, "the initial state the challenger sets"
		switch {
		case kindOK && s.Kind == CloudControl && s.Plant != nil:
			dim, what = s.Plant.Nx(), "the plant's initial state: plant.A is "+s.Plant.A.dims()
		case kindOK && s.Kind == Consensus && s.Network != nil && s.Network.N > 0:
			dim, what = s.Network.N, "one initial value per node of the graph"
		}
		s.Audit = d.audit(n, dim, what)
	}

	if pr != nil {
		s.Privacy = d.checkPrivacy(pr, sweeps)
		if k := s.Privacy.Episodes; k > 0 && s.Runs > k {
			d.warn("privacy.episodes is %d but runs is %d: the run releases the secret %d times, more than the whole-run budget privacy.run_epsilon covers (the report states what %d episodes give)", k, s.Runs, s.Runs, s.Runs)
		}
	}
	s.Faults = defaultFaults()
	if n := top.get("faults"); n != nil {
		kind := Kind("")
		if kindOK {
			kind = s.Kind
		}
		graphN := 0
		if s.Network != nil {
			graphN = s.Network.N
		}
		s.Faults = d.faults(n, kind, s.Steps, graphN)
	}
	d.checkFaultSweeps(s.Faults, s.Kind, sweeps)
	for _, sw := range sweeps {
		s.Sweeps = append(s.Sweeps, sw.Sweep)
	}
	s.Warnings = append(s.Warnings, d.warnings...)
	return s
}

// plant decodes plant: {A, B, C, x0} and checks the dimensions agree. It returns nil when
// A is unusable (so that later dimension checks are skipped rather than cascading).
func (d *decoder) plant(n *yaml.Node) *PlantSpec {
	f := d.mapping(n, "plant", plantFields...)
	if f == nil {
		return nil
	}
	p := &PlantSpec{}
	aOK := false
	if n := f.get("A"); n != nil {
		if m, ok := d.matrix(n, "plant.A", flatNone); ok {
			if m.Rows() != m.Cols() {
				d.add(n, "plant.A", "is %s, must be square (states x states)", m.dims())
			} else {
				p.A, aOK = m, true
			}
		}
	} else {
		d.missing(f, "A", "the state matrix, nx x nx")
	}
	nx := p.A.Rows()
	good := aOK
	if n := f.get("B"); n != nil {
		if m, ok := d.matrix(n, "plant.B", flatColumn); ok {
			p.B = m
			if aOK && m.Rows() != nx {
				d.add(n, "plant.B", "%d rows, plant.A is %s", m.Rows(), p.A.dims())
				good = false
			}
		} else {
			good = false
		}
	} else {
		d.missing(f, "B", "the input matrix, nx x nu (a flat list is one column)")
		good = false
	}
	if n := f.get("C"); n != nil {
		if m, ok := d.matrix(n, "plant.C", flatRow); ok {
			p.C = m
			if aOK && m.Cols() != nx {
				d.add(n, "plant.C", "%d columns, plant.A is %s", m.Cols(), p.A.dims())
				good = false
			}
		} else {
			good = false
		}
	} else {
		d.missing(f, "C", "the output matrix, ny x nx (a flat list is one row)")
		good = false
	}
	if n := f.get("x0"); n != nil {
		if v, ok := d.vector(n, "plant.x0"); ok {
			p.X0 = v
			if aOK && len(v) != nx {
				d.add(n, "plant.x0", "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), nx)
			}
		}
	} else if aOK {
		p.X0 = make([]float64, nx)
	}
	if !good {
		return nil
	}
	return p
}

// controller decodes controller: {K | lqr, L | observer, reference, xhat0}; p may be nil
// (plant missing or invalid), in which case dimensions are not checked.
func (d *decoder) controller(n *yaml.Node, p *PlantSpec, steps int) *ControllerSpec {
	f := d.mapping(n, "controller", controllerFields...)
	if f == nil {
		return nil
	}
	c := &ControllerSpec{}
	var nx, nu, ny int
	if p != nil {
		nx, nu, ny = p.Nx(), p.Nu(), p.Ny()
	}
	// K or lqr
	switch kn, ln := f.get("K"), f.get("lqr"); {
	case kn != nil && ln != nil:
		d.add(ln, "controller", "give K or lqr, not both")
	case kn == nil && ln == nil:
		d.missing(f, "K", "the feedback gain (nu x nx; a flat list is one row), or lqr: {Q, R} to derive it")
	case kn != nil:
		if m, ok := d.matrix(kn, "controller.K", flatRow); ok {
			c.K = m
			if p != nil && (m.Rows() != nu || m.Cols() != nx) {
				d.add(kn, "controller.K", "is %s, want %dx%d (inputs x states: plant.B is %s)", m.dims(), nu, nx, p.B.dims())
			}
		}
	default:
		c.LQR = d.lqr(ln, "controller.lqr", p, nx, nu, "inputs: plant.B is %s")
	}
	// L or observer
	switch kn, ln := f.get("L"), f.get("observer"); {
	case kn != nil && ln != nil:
		d.add(ln, "controller", "give L or observer, not both")
	case kn == nil && ln == nil:
		d.missing(f, "L", "the observer gain (nx x ny; a flat list is one column), or observer: {Q, R} to derive it")
	case kn != nil:
		if m, ok := d.matrix(kn, "controller.L", flatColumn); ok {
			c.L = m
			if p != nil && (m.Rows() != nx || m.Cols() != ny) {
				d.add(kn, "controller.L", "is %s, want %dx%d (states x outputs: plant.C is %s)", m.dims(), nx, ny, p.C.dims())
			}
		}
	default:
		c.Observer = d.lqr(ln, "controller.observer", p, nx, ny, "outputs: plant.C is %s")
	}
	if n := f.get("reference"); n != nil {
		c.Reference = d.reference(n, "controller.reference", p, steps)
	} else {
		c.Reference = ReferenceSpec{Kind: RefZero}
	}
	if n := f.get("xhat0"); n != nil {
		if v, ok := d.vector(n, "controller.xhat0"); ok {
			c.Xhat0 = v
			if p != nil && len(v) != nx {
				d.add(n, "controller.xhat0", "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), nx)
			}
		}
	} else if p != nil {
		c.Xhat0 = make([]float64, nx)
	}
	return c
}

// lqr decodes {Q, R}: Q is nx x nx, R is m x m (m inputs for the controller, outputs for
// the observer). Each may be a number q (q I), a flat list (diagonal) or rows.
func (d *decoder) lqr(n *yaml.Node, path string, p *PlantSpec, nx, m int, mWhy string) *LQRSpec {
	f := d.mapping(n, path, lqrFields...)
	if f == nil {
		return nil
	}
	out := &LQRSpec{}
	ok := true
	for _, key := range lqrFields {
		kn := f.get(key)
		if kn == nil {
			d.missing(f, key, "a weight: a number q (q times I), a flat list (the diagonal) or rows")
			ok = false
			continue
		}
		mtx, sh, good := d.matrixRaw(kn, f.sub(key))
		if !good {
			ok = false
			continue
		}
		if p == nil {
			continue
		}
		w := weightRaw{node: kn, path: f.sub(key), m: mtx, shape: sh}
		var full Matrix
		if key == "Q" {
			full, good = w.expand(d, nx, "states: plant.A is "+p.A.dims())
		} else {
			other := p.B
			if strings.HasPrefix(mWhy, "outputs") {
				other = p.C
			}
			full, good = w.expand(d, m, fmt.Sprintf(mWhy, other.dims()))
		}
		if !good {
			ok = false
			continue
		}
		if !d.checkWeight(full, kn, f.sub(key), key == "R") {
			ok = false
			continue
		}
		if key == "Q" {
			out.Q = full
		} else {
			out.R = full
		}
	}
	if !ok || p == nil {
		return nil
	}
	return out
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
	nx := 0
	if p != nil {
		nx = p.Nx()
	}
	checkLen := func(v []float64, n *yaml.Node, path string) {
		if nx > 0 && len(v) != nx {
			d.add(n, path, "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), nx)
		}
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		switch ReferenceKind(n.Value) {
		case RefTanh:
			if nx > 0 && nx != 2 {
				d.add(n, path, "tanh is the paper's 2-state profile (position, velocity), but plant.A is %s", p.A.dims())
			}
			return ReferenceSpec{Kind: RefTanh}
		case RefZero:
			return ReferenceSpec{Kind: RefZero}
		}
		d.add(n, path, "unknown reference %q (%s)", n.Value, allowed)
	case n.Kind == yaml.SequenceNode || isNumber(n):
		if v, ok := d.vector(n, path); ok {
			checkLen(v, n, path)
			return ReferenceSpec{Kind: RefConstant, Value: v}
		}
	case n.Kind == yaml.MappingNode:
		f := d.mapping(n, path, "step")
		if f == nil {
			break
		}
		sn := f.get("step")
		if sn == nil {
			d.missing(f, "step", "write {step: {before, after, at}}")
			break
		}
		sf := d.mapping(sn, path+".step", stepRefFields...)
		if sf == nil {
			break
		}
		r := ReferenceSpec{Kind: RefStep}
		for _, key := range []string{"before", "after"} {
			vn := sf.get(key)
			if vn == nil {
				d.missing(sf, key, "a vector, one entry per state")
				continue
			}
			if v, ok := d.vector(vn, sf.sub(key)); ok {
				checkLen(v, vn, sf.sub(key))
				if key == "before" {
					r.Before = v
				} else {
					r.After = v
				}
			}
		}
		if an := sf.get("at"); an != nil {
			hi := int64(MaxSteps)
			why := " (the first step with the after value)"
			if steps > 0 {
				hi = int64(steps - 1)
				why = fmt.Sprintf(" (the last step is %d; steps = %d)", steps-1, steps)
			}
			r.At, _ = d.intIn(an, sf.sub("at"), 0, hi, why)
		} else {
			d.missing(sf, "at", "the first step with the after value, an integer >= 0")
		}
		return r
	default:
		d.add(n, path, "want a reference, got %s (%s)", describe(n), allowed)
	}
	return ReferenceSpec{}
}

// graph decodes a named graph {name, n, degree, rows, cols, weight, seed} or an edge list
// {n, edges, weight}. It returns nil when unusable.
func (d *decoder) graph(n *yaml.Node) *GraphSpec {
	f := d.mapping(n, "graph", graphFields...)
	if f == nil {
		return nil
	}
	nameN, edgesN := f.get("name"), f.get("edges")
	switch {
	case nameN != nil && edgesN != nil:
		d.add(edgesN, "graph", "give name (a named graph) or edges (an edge list), not both")
		return nil
	case nameN == nil && edgesN == nil:
		d.add(f.node, "graph", "missing name (a named graph: %s) or edges (an edge list [[i, j, w], ...], nodes from 1)", strings.Join(dynamics.GraphNames, ", "))
		return nil
	case nameN != nil:
		return d.namedGraph(f, nameN)
	default:
		return d.edgeList(f, edgesN)
	}
}

func (d *decoder) graphWeight(f *fields) (float64, bool) {
	wn := f.get("weight")
	if wn == nil {
		return 0, true
	}
	w, ok := d.float(wn, "graph.weight")
	if ok && w <= 0 {
		d.add(wn, "graph.weight", "%s must be > 0", wn.Value)
		return 0, false
	}
	return w, ok
}

func (d *decoder) namedGraph(f *fields, nameN *yaml.Node) *GraphSpec {
	name, ok := d.str(nameN, "graph.name")
	if !ok {
		return nil
	}
	params, known := graphParams[name]
	if !known {
		d.add(nameN, "graph.name", "unknown graph %q (allowed: %s; or an edge list {n, edges})", name, strings.Join(dynamics.GraphNames, ", "))
		return nil
	}
	good := true
	for _, key := range graphFields {
		if key == "name" || !f.has(key) || contains(params, key) {
			continue
		}
		users := []string{}
		for _, g := range dynamics.GraphNames {
			if contains(graphParams[g], key) {
				users = append(users, g)
			}
		}
		d.add(f.get(key), f.sub(key), "not used by graph %s (only by %s)", name, strings.Join(users, ", "))
		good = false
	}
	g := &GraphSpec{Name: name}
	getInt := func(key string, lo int64, why string) (int, bool) {
		if kn := f.get(key); kn != nil {
			return d.intIn(kn, f.sub(key), lo, MaxNodes, why)
		}
		return 0, true
	}
	var okN, okD, okR, okC bool
	g.N, okN = getInt("n", 1, " (nodes)")
	g.Degree, okD = getInt("degree", 1, " (the degree of every node)")
	g.Rows, okR = getInt("rows", 1, " (grid rows)")
	g.Cols, okC = getInt("cols", 1, " (grid columns)")
	w, okW := d.graphWeight(f)
	good = good && okN && okD && okR && okC && okW
	if sn := f.get("seed"); sn != nil {
		var okS bool
		g.Seed, okS = d.uint64v(sn, "graph.seed")
		good = good && okS
	} else if name == "random-regular" {
		g.Seed = 1
	}
	if !good {
		return nil
	}
	nn := f.get("n")
	requireN := func(lo int, why string) bool {
		if nn == nil {
			d.missing(f, "n", fmt.Sprintf("graph %s needs n, the number of nodes (>= %d)", name, lo))
			return false
		}
		if g.N < lo {
			d.add(nn, "graph.n", "%d is too small for graph %s: %s", g.N, name, why)
			return false
		}
		return true
	}
	maxDeg := 0
	switch name {
	case "paper10":
		if nn != nil && g.N != 10 {
			d.add(nn, "graph.n", "%d, but paper10 has 10 nodes (leave n out)", g.N)
			return nil
		}
		g.N, maxDeg = 10, 4
		if f.get("weight") == nil {
			w = 0.25 // the paper's weight (Section 6.3)
		}
	case "ring":
		if !requireN(3, "a ring needs at least 3 nodes") {
			return nil
		}
		maxDeg = 2
	case "path":
		if !requireN(2, "a path needs at least 2 nodes") {
			return nil
		}
		maxDeg = min(2, g.N-1)
	case "complete":
		if !requireN(2, "a complete graph needs at least 2 nodes") {
			return nil
		}
		maxDeg = g.N - 1
	case "grid":
		rn, cn := f.get("rows"), f.get("cols")
		if rn == nil || cn == nil {
			if rn == nil {
				d.missing(f, "rows", "graph grid needs rows and cols")
			}
			if cn == nil {
				d.missing(f, "cols", "graph grid needs rows and cols")
			}
			return nil
		}
		if g.Rows*g.Cols < 2 || g.Rows*g.Cols > MaxNodes {
			d.add(rn, "graph", "grid %dx%d has %d nodes, want 2..%d", g.Rows, g.Cols, g.Rows*g.Cols, MaxNodes)
			return nil
		}
		if nn != nil && g.N != g.Rows*g.Cols {
			d.add(nn, "graph.n", "%d, but a %dx%d grid has %d nodes (leave n out)", g.N, g.Rows, g.Cols, g.Rows*g.Cols)
			return nil
		}
		g.N = g.Rows * g.Cols
		maxDeg = min(2, g.Rows-1) + min(2, g.Cols-1)
	case "random-regular":
		if !requireN(3, "a random regular graph needs at least 3 nodes") {
			return nil
		}
		dn := f.get("degree")
		if dn == nil {
			d.missing(f, "degree", "graph random-regular needs degree, the degree of every node (2..n-1)")
			return nil
		}
		if g.Degree < 2 || g.Degree >= g.N {
			d.add(dn, "graph.degree", "%d must be in 2..%d (n - 1) for a connected regular graph on %d nodes", g.Degree, g.N-1, g.N)
			return nil
		}
		if g.N*g.Degree%2 != 0 {
			d.add(dn, "graph.degree", "%d with n = %d: n * degree must be even for a regular graph", g.Degree, g.N)
			return nil
		}
		maxDeg = g.Degree
	}
	edges := 0
	switch name {
	case "complete":
		edges = g.N * (g.N - 1) / 2
	case "random-regular":
		edges = g.N * g.Degree / 2
	}
	if edges > MaxEdges {
		d.add(nameN, "graph", "%s on %d nodes has %d edges, more than the %d allowed", name, g.N, edges, MaxEdges)
		return nil
	}
	if w == 0 {
		w = 1 / float64(maxDeg+1)
	}
	g.Weight = w
	return g
}

func (d *decoder) edgeList(f *fields, edgesN *yaml.Node) *GraphSpec {
	nn := f.get("n")
	if nn == nil {
		d.missing(f, "n", "an edge list needs n, the number of nodes (edges count nodes from 1 to n)")
		return nil
	}
	nodes, okN := d.intIn(nn, "graph.n", 2, MaxNodes, " (nodes)")
	w, okW := d.graphWeight(f)
	if !okN || !okW {
		return nil
	}
	if edgesN.Kind != yaml.SequenceNode || len(edgesN.Content) == 0 {
		if edgesN.Kind == yaml.SequenceNode {
			d.add(edgesN, "graph.edges", "empty: want at least one edge [i, j] or [i, j, w]")
		} else {
			d.add(edgesN, "graph.edges", "want a list of edges [i, j] or [i, j, w], got %s", describe(edgesN))
		}
		return nil
	}
	g := &GraphSpec{N: nodes}
	type pair struct{ i, j int }
	seen := map[pair]int{}
	explicit := make([]bool, 0, len(edgesN.Content))
	good := true
	for k, en := range edgesN.Content {
		en = resolve(en)
		p := index("graph.edges", k)
		if en.Kind != yaml.SequenceNode || (len(en.Content) != 2 && len(en.Content) != 3) {
			d.add(en, p, "want an edge [i, j] or [i, j, w] (nodes from 1 to %d), got %s", nodes, describeEdge(en))
			good = false
			continue
		}
		var ij [2]int
		ok := true
		for t := range 2 {
			c := resolve(en.Content[t])
			v, isInt := d.integer(c, index(p, t))
			if !isInt {
				ok = false
				continue
			}
			if v < 1 || v > int64(nodes) {
				d.add(c, index(p, t), "node %s out of range 1..%d (nodes count from 1)", c.Value, nodes)
				ok = false
				continue
			}
			ij[t] = int(v) - 1
		}
		ew, hasW := 0.0, len(en.Content) == 3
		if hasW {
			c := resolve(en.Content[2])
			v, isNum := d.float(c, index(p, 2))
			switch {
			case !isNum:
				ok = false
			case v <= 0:
				d.add(c, index(p, 2), "weight %s must be > 0", c.Value)
				ok = false
			default:
				ew = v
			}
		}
		if !ok {
			good = false
			continue
		}
		if ij[0] == ij[1] {
			d.add(en, p, "self-loop on node %d: an edge joins two different nodes", ij[0]+1)
			good = false
			continue
		}
		key := pair{min(ij[0], ij[1]), max(ij[0], ij[1])}
		if first, dup := seen[key]; dup {
			d.add(en, p, "edge %d-%d repeats graph.edges[%d] (edges are undirected: list each once)", key.i+1, key.j+1, first)
			good = false
			continue
		}
		seen[key] = k
		g.Edges = append(g.Edges, Edge{I: ij[0], J: ij[1], W: ew})
		explicit = append(explicit, hasW)
	}
	if !good {
		return nil
	}
	// default weight: 1/(max degree + 1), so that sum_j w_ij < 1 (Section 6)
	deg := make([]int, nodes)
	for _, e := range g.Edges {
		deg[e.I]++
		deg[e.J]++
	}
	if w == 0 {
		maxDeg := 0
		for _, k := range deg {
			maxDeg = max(maxDeg, k)
		}
		w = 1 / float64(maxDeg+1)
	}
	g.Weight = w
	for k := range g.Edges {
		if !explicit[k] {
			g.Edges[k].W = w
		}
	}
	// connected?
	adj := make([][]int, nodes)
	for _, e := range g.Edges {
		adj[e.I] = append(adj[e.I], e.J)
		adj[e.J] = append(adj[e.J], e.I)
	}
	seenNode := make([]bool, nodes)
	stack := []int{0}
	seenNode[0] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range adj[v] {
			if !seenNode[u] {
				seenNode[u] = true
				stack = append(stack, u)
			}
		}
	}
	for v, ok := range seenNode {
		if !ok {
			d.add(edgesN, "graph.edges", "the graph is not connected: node %d cannot be reached from node 1 (consensus needs a connected graph)", v+1)
			return nil
		}
	}
	return g
}

func describeEdge(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("a list of %d entries", len(n.Content))
	}
	return describe(n)
}

// rawPrivacy is the privacy section as written: presence matters for defaults, for the
// mechanism-dependent rules and for sweeps.
type rawPrivacy struct {
	spec      PrivacySpec
	f         *fields
	set       map[string]bool // fields given in the file with a usable value
	bad       map[string]bool // fields given with an unusable value (already reported)
	modelNode *yaml.Node
}

func (d *decoder) privacy(n *yaml.Node, p *PlantSpec) *rawPrivacy {
	f := d.mapping(n, "privacy", privacyFields...)
	if f == nil {
		return nil
	}
	r := &rawPrivacy{f: f, set: map[string]bool{}, bad: map[string]bool{}}
	r.spec = PrivacySpec{Mechanism: privacy.Gaussian, Mu: 1, Adjacency: privacy.Manifold, Noise: noise.Structured, Calibration: privacy.Tight, Sampler: noise.SamplerSecure}
	mark := func(key string, ok bool) {
		if ok {
			r.set[key] = true
		} else {
			r.bad[key] = true
		}
	}
	if kn := f.get("mechanism"); kn != nil {
		v, ok := d.str(kn, "privacy.mechanism")
		if ok {
			m, err := privacy.ParseMechanism(v)
			if err != nil {
				d.add(kn, "privacy.mechanism", "%v", err)
				ok = false
			}
			r.spec.Mechanism = m
		}
		mark("mechanism", ok)
	}
	for _, key := range []string{"epsilon", "delta", "mu", "run_epsilon"} {
		kn := f.get(key)
		if kn == nil {
			continue
		}
		v, ok := d.float(kn, f.sub(key))
		switch key {
		case "epsilon":
			r.spec.Epsilon = v
		case "delta":
			r.spec.Delta = v
		case "mu":
			r.spec.Mu = v
		case "run_epsilon":
			r.spec.RunEpsilon = v
		}
		mark(key, ok)
	}
	if kn := f.get("episodes"); kn != nil {
		v, ok := d.intIn(kn, f.sub("episodes"), 1, privacy.MaxEpisodes, " (the episodes of one secret that privacy.run_epsilon covers)")
		r.spec.Episodes = v
		mark("episodes", ok)
	}
	for _, key := range []string{"adjacency", "noise", "calibration", "sampler"} {
		kn := f.get(key)
		if kn == nil {
			continue
		}
		v, ok := d.str(kn, f.sub(key))
		if ok {
			if err := setName(&r.spec, key, v); err != nil {
				d.add(kn, f.sub(key), "%v", err)
				ok = false
			}
		}
		mark(key, ok)
	}
	if mn := f.get("model"); mn != nil {
		r.modelNode = mn
		r.spec.Model = d.model(mn, p)
	}
	return r
}

// setName parses and sets a named privacy parameter (adjacency, noise, calibration, sampler).
func setName(p *PrivacySpec, key, v string) error {
	switch key {
	case "adjacency":
		a, err := privacy.ParseAdjacency(v)
		p.Adjacency = a
		return err
	case "noise":
		k, err := noise.ParseKind(v)
		p.Noise = k
		return err
	case "calibration":
		c, err := privacy.ParseCalibration(v)
		p.Calibration = c
		return err
	case "sampler":
		s, err := noise.ParseSampler(v)
		p.Sampler = s
		return err
	}
	return fmt.Errorf("unknown parameter %q", key)
}

// model decodes the private subsystem {A, C}; its C must have one row per plant output
// (the noise gamma(t) = C_m A_m^t sqrt(Sigma) eta is added to the plant's output).
func (d *decoder) model(n *yaml.Node, p *PlantSpec) *ModelSpec {
	f := d.mapping(n, "privacy.model", modelFields...)
	if f == nil {
		return nil
	}
	m := &ModelSpec{}
	good := true
	if an := f.get("A"); an != nil {
		if a, ok := d.matrix(an, "privacy.model.A", flatNone); ok {
			if a.Rows() != a.Cols() {
				d.add(an, "privacy.model.A", "is %s, must be square", a.dims())
				good = false
			}
			m.A = a
		} else {
			good = false
		}
	} else {
		d.missing(f, "A", "the private subsystem's state matrix (e.g. 1 for the vehicle's position)")
		good = false
	}
	if cn := f.get("C"); cn != nil {
		if c, ok := d.matrix(cn, "privacy.model.C", flatRow); ok {
			m.C = c
			if good && c.Cols() != m.A.Rows() {
				d.add(cn, "privacy.model.C", "%d columns, privacy.model.A is %s", c.Cols(), m.A.dims())
				good = false
			}
			if p != nil && c.Rows() != p.Ny() {
				d.add(cn, "privacy.model.C", "%d rows, plant.C is %s: the model needs one row per plant output (its noise is added to the outputs)", c.Rows(), p.C.dims())
				good = false
			}
		} else {
			good = false
		}
	} else {
		d.missing(f, "C", "the private subsystem's output matrix, one row per plant output")
		good = false
	}
	if !good {
		return nil
	}
	return m
}

// rawSweep is a decoded sweep with the nodes of its values, for messages.
type rawSweep struct {
	Sweep
	path   string
	values []*yaml.Node
}

// sweeps decodes sweep: {param, values} or a list of such (a product, first outermost).
func (d *decoder) sweeps(n *yaml.Node) []rawSweep {
	var items []*yaml.Node
	var paths []string
	switch n.Kind {
	case yaml.MappingNode:
		items, paths = []*yaml.Node{n}, []string{"sweep"}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.add(n, "sweep", "empty list: want {param, values} or a list of them")
			return nil
		}
		for i, c := range n.Content {
			items = append(items, resolve(c))
			paths = append(paths, index("sweep", i))
		}
	default:
		d.add(n, "sweep", "want {param, values} or a list of them, got %s", describe(n))
		return nil
	}
	var out []rawSweep
	good := true
	firstParam := map[SweepParam]string{}
	total := 1
	for i, it := range items {
		sw, ok := d.sweep(it, paths[i])
		if !ok {
			good = false
			continue
		}
		if first, dup := firstParam[sw.Param]; dup {
			d.add(it, paths[i]+".param", "%s is already swept by %s", sw.Param, first)
			good = false
			continue
		}
		firstParam[sw.Param] = paths[i]
		total *= sw.Len()
		if total > MaxSweepPoints {
			d.add(it, "sweep", "expands to more than %d scenarios", MaxSweepPoints)
			return nil
		}
		out = append(out, sw)
	}
	if !good {
		return nil
	}
	return out
}

func (d *decoder) sweep(n *yaml.Node, path string) (rawSweep, bool) {
	f := d.mapping(n, path, sweepFields...)
	if f == nil {
		return rawSweep{}, false
	}
	sw := rawSweep{path: path}
	pn, vn := f.get("param"), f.get("values")
	good := true
	if pn == nil {
		d.missing(f, "param", "the swept parameter: "+joinNames(SweepParams))
		good = false
	} else if v, ok := d.str(pn, f.sub("param")); ok {
		sw.Param = SweepParam(v)
		if !contains(namesOf(SweepParams), v) {
			d.add(pn, f.sub("param"), "unknown parameter %q (allowed: %s)", v, joinNames(SweepParams))
			good = false
		}
	} else {
		good = false
	}
	if vn == nil {
		d.missing(f, "values", "the list of values to sweep")
		return sw, false
	}
	if vn.Kind != yaml.SequenceNode || len(vn.Content) == 0 {
		d.add(vn, f.sub("values"), "want a non-empty list of values, got %s", describe(vn))
		return sw, false
	}
	if !good {
		return sw, false
	}
	vp := f.sub("values")
	seen := map[string]int{}
	for i, c := range vn.Content {
		c = resolve(c)
		p := index(vp, i)
		var key string
		if sw.Param.numeric() {
			v, ok := d.float(c, p)
			if !ok {
				good = false
				continue
			}
			sw.Numbers = append(sw.Numbers, v)
			key = fmt.Sprint(v)
		} else {
			v, ok := d.str(c, p)
			if !ok {
				good = false
				continue
			}
			switch sw.Param {
			case SweepMissingPlant:
				if !contains(namesOf(PlantMissingRules), v) {
					d.add(c, p, "unknown rule %q (allowed: %s)", v, joinNames(PlantMissingRules))
					good = false
					continue
				}
			case SweepMissingAgent:
				if !contains(namesOf(AgentMissingRules), v) {
					d.add(c, p, "unknown rule %q (allowed: %s)", v, joinNames(AgentMissingRules))
					good = false
					continue
				}
			default:
				var probe PrivacySpec
				if err := setName(&probe, string(sw.Param), v); err != nil {
					d.add(c, p, "%v", err)
					good = false
					continue
				}
			}
			sw.Names = append(sw.Names, v)
			key = v
		}
		if first, dup := seen[key]; dup {
			d.add(c, p, "%s repeats %s", c.Value, index(vp, first))
			good = false
			continue
		}
		seen[key] = i
		sw.values = append(sw.values, c)
	}
	return sw, good
}

func namesOf[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func (d *decoder) transport(n *yaml.Node) TransportSpec {
	t := TransportSpec{Mode: Lockstep}
	f := d.mapping(n, "transport", transportFields...)
	if f == nil {
		return t
	}
	if mn := f.get("mode"); mn != nil {
		if v, ok := d.str(mn, "transport.mode"); ok {
			switch TransportMode(v) {
			case Lockstep, Realtime:
				t.Mode = TransportMode(v)
			default:
				d.add(mn, "transport.mode", "unknown mode %q (allowed: lockstep, realtime)", v)
			}
		}
	}
	if pn := f.get("period"); pn != nil {
		if isNumber(pn) {
			d.add(pn, "transport.period", "want a duration with a unit such as 100ms or 1s, got number %s", pn.Value)
		} else if v, ok := d.str(pn, "transport.period"); ok {
			p, err := time.ParseDuration(v)
			switch {
			case err != nil:
				d.add(pn, "transport.period", "%q is not a duration (write e.g. 100ms or 1s)", v)
			case p <= 0:
				d.add(pn, "transport.period", "%s must be > 0", v)
			default:
				t.Period = p
			}
		}
	} else if t.Mode == Realtime {
		d.missing(f, "period", "mode realtime needs period, the wall-clock time of one step (e.g. 100ms)")
	}
	if tn := f.get("timeout"); tn != nil {
		if v, ok := d.durationIn(tn, "transport.timeout", time.Millisecond, time.Hour); ok {
			t.Timeout = v
		}
	}
	return t
}
