package john

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The exact method solves the John ellipsoid problem of a symmetric polytope to machine
// accuracy through its dual, the D-optimal design problem
//
//	maximise log det M(u),  M(u) = A^T diag(u) A,  u in the unit simplex,
//
// whose optimum satisfies max_i g_i(u) = d, g_i(u) = a_i^T M(u)^{-1} a_i (Kiefer-Wolfowitz).
// With w = d u, Q(w) = d M(u) and h_i(w) = g_i(u) / d: the John ellipsoid's weights are d u*
// and max h_i = 1 exactly. The Wolfe-Atwood method (Frank-Wolfe with away steps; Todd and
// Yildirim's analysis of Khachiyan's algorithm) moves weight toward the row of largest g
// (add step) or away from the supported row of smallest g (away step) with the exact line
// search, updating M^{-1} and every g_i by a rank-one formula in O(n d) per iteration, and
// converges linearly. A convergence certificate comes for free: log det M* - log det M(u)
// <= d ln(max_i g_i / d), so max_i h_i <= 1 + xi bounds the log det gap by d ln(1 + xi).

// initialDesign picks d rows that span R^d, greedily (Kumar and Yildirim's initialisation,
// here as pivoted Gram-Schmidt): each the row with the largest component orthogonal to those
// picked. Wolfe-Atwood starts from equal weights on them: a start on all n rows would need
// about n away steps to drop the rows the optimum does not use (minutes for n = 1e5), one
// on d rows adds the few it needs. O(n d^2).
func initialDesign(A *mat.Dense) ([]int, error) {
	n, d := A.Dims()
	r2 := make([]float64, n) // squared norm of each row's component orthogonal to the picked
	top := 0.0
	for i := 0; i < n; i++ {
		row := A.RawRowView(i)
		for _, v := range row {
			r2[i] += v * v
		}
		top = math.Max(top, r2[i])
	}
	basis := make([][]float64, 0, d)
	picked := make([]int, 0, d)
	for k := 0; k < d; k++ {
		best := -1
		for i := range r2 {
			if best < 0 || r2[i] > r2[best] {
				best = i
			}
		}
		if !(r2[best] > 1e-12*top) {
			return nil, errors.New("A^T diag(u) A is not positive definite: A needs rank d")
		}
		q := append([]float64(nil), A.RawRowView(best)...)
		for _, b := range basis {
			c := dot(b, q)
			for j := range q {
				q[j] -= c * b[j]
			}
		}
		norm := math.Sqrt(dot(q, q))
		for j := range q {
			q[j] /= norm
		}
		basis = append(basis, q)
		picked = append(picked, best)
		for i := range r2 {
			c := dot(q, A.RawRowView(i))
			r2[i] -= c * c
		}
		r2[best] = math.Inf(-1)
	}
	return picked, nil
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// waRefresh is how often M^{-1} and g are recomputed from scratch against rounding drift.
const waRefresh = 200

// wolfeAtwood returns weights w (sum d) with max_i h_i(w) <= 1 + xi (checked in exact
// arithmetic by the caller), and the iterations taken; maxIter bounds them. observe, if not
// nil, sees max_i h_i of every iterate (0, 1, ..., iters) from the updated g: exact to
// rounding, refreshed from scratch every waRefresh iterations.
func wolfeAtwood(A *mat.Dense, xi float64, maxIter int, observe func(iter int, maxH float64)) (w []float64, iters int, err error) {
	n, d := A.Dims()
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	minv := mat.NewDense(d, d, nil)
	g := make([]float64, n)
	ma := make([]float64, d) // M^{-1} a_j
	c := make([]float64, n)  // a_i^T M^{-1} a_j
	refresh := func() error {
		m := mat.NewSymDense(d, nil)
		for i := 0; i < n; i++ {
			if u[i] == 0 {
				continue
			}
			row := A.RawRowView(i)
			m.SymRankOne(m, u[i], mat.NewVecDense(d, row))
		}
		var ch mat.Cholesky
		if !ch.Factorize(m) {
			return errors.New("A^T diag(u) A is not positive definite: A needs rank d")
		}
		if err := ch.InverseTo(m); err != nil {
			return err
		}
		minv.Copy(m)
		for i := 0; i < n; i++ {
			row := A.RawRowView(i)
			g[i] = quad(minv, row)
		}
		return nil
	}
	if err := refresh(); err != nil {
		return nil, 0, err
	}
	fd := float64(d)
	target := fd * (1 + xi)
	// The uniform weights are kept when they are already optimal (a symmetric polytope such
	// as the cube or the cross-polytope, whose optimal weights are not unique: this is the
	// canonical answer). Otherwise the iteration starts from d spanning rows (initialDesign).
	if maxOf(g) > target {
		start, err := initialDesign(A)
		if err != nil {
			return nil, 0, err
		}
		for i := range u {
			u[i] = 0
		}
		for _, i := range start {
			u[i] = 1 / fd
		}
		if err := refresh(); err != nil {
			return nil, 0, err
		}
	}
	for iters = 0; iters < maxIter; iters++ {
		j, k := 0, -1
		for i := range g {
			if g[i] > g[j] {
				j = i
			}
			if u[i] > 0 && (k < 0 || g[i] < g[k]) {
				k = i
			}
		}
		if observe != nil {
			observe(iters, g[j]/fd)
		}
		if g[j] <= target {
			break
		}
		add := g[j]-fd >= fd-g[k] || u[k] >= 1
		var lambda float64
		idx := j
		if add {
			kap := g[j]
			lambda = (kap/fd - 1) / (kap - 1)
		} else {
			idx = k
			kap := g[k]
			lambda = math.Min((1-kap/fd)/(kap-1), u[k]/(1-u[k]))
			if kap <= 1 { // cannot happen for a design with rank d (g_i >= ... ); guard the division
				lambda = u[k] / (1 - u[k])
			}
			lambda = -lambda
		}
		if lambda == 0 || math.IsNaN(lambda) {
			break
		}
		// u <- (1 - lambda) u + lambda e_idx (away: lambda < 0)
		for i := range u {
			u[i] *= 1 - lambda
		}
		u[idx] += lambda
		if u[idx] < 1e-300 {
			u[idx] = 0
		}
		// M' = (1 - lambda) M + lambda a a^T:
		// M'^{-1} = (M^{-1} - lambda M^{-1} a a^T M^{-1} / (1 - lambda + lambda g)) / (1 - lambda)
		a := A.RawRowView(idx)
		gi := g[idx]
		for r := 0; r < d; r++ {
			s := 0.0
			for cc := 0; cc < d; cc++ {
				s += minv.At(r, cc) * a[cc]
			}
			ma[r] = s
		}
		den := 1 - lambda + lambda*gi
		for i := 0; i < n; i++ {
			row := A.RawRowView(i)
			s := 0.0
			for r := 0; r < d; r++ {
				s += row[r] * ma[r]
			}
			c[i] = s
		}
		for i := range g {
			g[i] = (g[i] - lambda*c[i]*c[i]/den) / (1 - lambda)
		}
		for r := 0; r < d; r++ {
			for cc := 0; cc < d; cc++ {
				minv.Set(r, cc, (minv.At(r, cc)-lambda*ma[r]*ma[cc]/den)/(1-lambda))
			}
		}
		if (iters+1)%waRefresh == 0 {
			if err := refresh(); err != nil {
				return nil, iters, err
			}
		}
	}
	if err := refresh(); err != nil {
		return nil, iters, err
	}
	if observe != nil && iters == maxIter {
		observe(iters, maxOf(g)/fd)
	}
	w = make([]float64, n)
	for i := range u {
		w[i] = fd * u[i]
	}
	return w, iters, nil
}

// shareDuplicates gives rows that are the same constraint (equal up to sign: |a^T x| <= 1 and
// |-a^T x| <= 1 are one) equal shares of their total weight. The optimum is not unique among
// such copies - only their sum matters to Q - and the symmetric split is the canonical one
// (the fixed-point iteration's), so the output does not depend on the row order.
func shareDuplicates(A *mat.Dense, w []float64) {
	n, d := A.Dims()
	groups := map[string][]int{}
	key := make([]byte, 0, 8*d)
	for i := 0; i < n; i++ {
		row := A.RawRowView(i)
		sign := 1.0
		for _, x := range row {
			if x != 0 {
				if x < 0 {
					sign = -1
				}
				break
			}
		}
		key = key[:0]
		for _, x := range row {
			v := math.Float64bits(sign*x + 0) // +0 folds -0 into 0
			for b := 0; b < 8; b++ {
				key = append(key, byte(v>>(8*b)))
			}
		}
		groups[string(key)] = append(groups[string(key)], i)
	}
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		tot := 0.0
		for _, i := range g {
			tot += w[i]
		}
		for _, i := range g {
			w[i] = tot / float64(len(g))
		}
	}
}

// quad returns x^T S x.
func quad(s *mat.Dense, x []float64) float64 {
	d := len(x)
	t := 0.0
	for r := 0; r < d; r++ {
		v := 0.0
		for c := 0; c < d; c++ {
			v += s.At(r, c) * x[c]
		}
		t += x[r] * v
	}
	return t
}

// errNotCertified is returned when the exact evaluation of the Wolfe-Atwood weights misses
// the target (rounding) after the iteration bound.
var errNotCertified = fmt.Errorf("the Wolfe-Atwood weights do not reach the target in exact evaluation")

// ExactTrace runs the exact method's Wolfe-Atwood iteration from its start (initialDesign) until
// max_i h_i <= 1 + xi (or maxIter iterations) and returns max_i h_i after every iteration
// (Iteration 0 is the start: the uniform weights if they are optimal, else equal weights on d
// spanning rows). Unlike the fixed-point iteration (Config.Trace) the sequence need
// not decrease: an away step can raise the largest leverage while it raises log det Q. Each
// iteration costs O(n d).
func ExactTrace(A *mat.Dense, xi float64, maxIter int) ([]TracePoint, error) {
	n, d := A.Dims()
	if n < d || d == 0 {
		return nil, fmt.Errorf("john: A is %d x %d: need n >= d >= 1", n, d)
	}
	if !(xi >= MinXiExact && xi <= MaxXi) || maxIter < 1 {
		return nil, fmt.Errorf("john: exact trace: xi = %g (in [%g, %g]) and max-iter %d (>= 1)", xi, MinXiExact, MaxXi, maxIter)
	}
	var out []TracePoint
	_, _, err := wolfeAtwood(mat.DenseCopyOf(A), xi, maxIter, func(it int, mh float64) {
		out = append(out, TracePoint{Iteration: it, MaxLeverage: mh})
	})
	if err != nil {
		return nil, fmt.Errorf("john: %w", err)
	}
	return out, nil
}
