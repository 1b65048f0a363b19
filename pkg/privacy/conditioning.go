package privacy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// How fragile a sensitivity is. Definition 4's sensitivity is exact, but on a generic plant
// it can be set by a nearly singular free set D_{d_j}: it is then far above the block value and moves
// a lot when the model is rounded. Conditioning measures both and says when the calibration should not
// be trusted as written.
const (
	// PerturbationSize is the relative size of the model perturbations: 1e-4, the rounding of a
	// model written with four significant digits (a YAML file).
	PerturbationSize = 1e-4
	// FragileMinDet: a kept free set with |det D_{d_j}| below it is nearly singular. The dynamics'
	// D has unit blocks (-I), so a well-posed free set has |det| of the order of |det A|^t; 1e-6 is
	// far below that for the shipped plants (1 for the vehicle's position model, Ts = 0.1 for its
	// full state) and far above the zero tolerance of the enumeration (1e-10 relative).
	FragileMinDet = 1e-6
	// FragilePerturbation: a sensitivity that moves by more than 10% under 1e-4 relative changes of
	// the model is amplifying the rounding a thousandfold; the noise it calibrates is then a property
	// of the digits written, not of the plant.
	FragilePerturbation = 0.10
	// PerturbationBudget caps the flops spent on the perturbation figure (about two seconds on one
	// core); above it fewer directions are used, and none when even those do not fit.
	PerturbationBudget = 2e9
	// conditioningRandomDirections random-sign directions (all entries at once, as rounding does)
	// are added to the entry-wise ones, from the fixed seed conditioningSeed.
	conditioningRandomDirections = 4
	conditioningSeed             = 25
)

// Conditioning is how fragile a sensitivity is.
type Conditioning struct {
	// MinDet is the sensitivity's Sensitivity.MinDet: the smallest |det D_{d_j}| it kept.
	MinDet float64
	// Perturbation is the largest relative change |Delta'/Delta - 1| of the sensitivity over the
	// perturbed models (A, C) with entries scaled by 1 +- PerturbationSize; +Inf when a perturbed
	// model is refused (Err says why); NaN when not computed (Note says why).
	Perturbation float64
	// PerturbedBy names the perturbation that attains Perturbation, e.g. "A[0][1] x (1 - 1e-4)".
	PerturbedBy string
	// Directions is the number of perturbed models evaluated.
	Directions int
	// Err is the error of a refused perturbed model ("" when none).
	Err string
	// Note says why the perturbation figure is not computed or uses fewer directions ("" when all).
	Note string
	// Fragile is true when MinDet < FragileMinDet or Perturbation > FragilePerturbation; Reasons
	// states each in words with its number.
	Fragile bool
	Reasons []string
}

// perturbation is one perturbed model.
type perturbation struct {
	name string
	a, c []float64 // relative factors of each entry (row-major), 1 + s PerturbationSize
}

// ModelConditioning measures the fragility of base, the sensitivity of the private model (A, C): its
// MinDet, and the largest relative change of eval(A', C') (which must recompute the same sensitivity
// for a perturbed model) against base.Value over deterministic perturbations: each nonzero entry of
// A and C in turn scaled by 1 + PerturbationSize and 1 - PerturbationSize, then
// conditioningRandomDirections models with every entry scaled by 1 +- PerturbationSize with signs
// from a fixed seed. costPerEval is the flops of one eval; the entry-wise directions are dropped when
// all of them exceed PerturbationBudget, and the figure is not computed when the random ones do too.
func ModelConditioning(A, C *mat.Dense, base Sensitivity, costPerEval float64, eval func(A, C *mat.Dense) (float64, error)) Conditioning {
	out := Conditioning{MinDet: base.MinDet, Perturbation: math.NaN()}
	ar, ac := A.Dims()
	cr, cc := C.Dims()
	na, nc := ar*ac, cr*cc
	var dirs []perturbation
	unit := func() perturbation {
		p := perturbation{a: make([]float64, na), c: make([]float64, nc)}
		for i := range p.a {
			p.a[i] = 1
		}
		for i := range p.c {
			p.c[i] = 1
		}
		return p
	}
	var entry []perturbation
	for _, s := range []float64{1, -1} {
		sign := "+"
		if s < 0 {
			sign = "-"
		}
		for i := 0; i < na; i++ {
			if A.At(i/ac, i%ac) == 0 {
				continue
			}
			p := unit()
			p.a[i] = 1 + s*PerturbationSize
			p.name = fmt.Sprintf("A[%d][%d] x (1 %s %g)", i/ac, i%ac, sign, PerturbationSize)
			entry = append(entry, p)
		}
		for i := 0; i < nc; i++ {
			if C.At(i/cc, i%cc) == 0 {
				continue
			}
			p := unit()
			p.c[i] = 1 + s*PerturbationSize
			p.name = fmt.Sprintf("C[%d][%d] x (1 %s %g)", i/cc, i%cc, sign, PerturbationSize)
			entry = append(entry, p)
		}
	}
	rnd := rand.New(rand.NewPCG(conditioningSeed, 0))
	var random []perturbation
	if na+nc > 1 {
		for d := 0; d < conditioningRandomDirections; d++ {
			p := unit()
			for i := range p.a {
				p.a[i] = 1 + PerturbationSize*float64(2*rnd.IntN(2)-1)
			}
			for i := range p.c {
				p.c[i] = 1 + PerturbationSize*float64(2*rnd.IntN(2)-1)
			}
			p.name = fmt.Sprintf("every entry x (1 +- %g), random signs %d (seed %d)", PerturbationSize, d+1, conditioningSeed)
			random = append(random, p)
		}
	}
	switch {
	case float64(len(entry)+len(random))*costPerEval <= PerturbationBudget:
		dirs = append(entry, random...)
	case float64(len(random))*costPerEval <= PerturbationBudget && len(random) > 0:
		dirs = random
		out.Note = fmt.Sprintf("entry-wise perturbations skipped: %d x %.3g flops exceed the budget of %.3g flops", len(entry)+len(random), costPerEval, float64(PerturbationBudget))
	default:
		out.Note = fmt.Sprintf("perturbation figure not computed: one recomputation costs %.3g flops, the budget is %.3g flops", costPerEval, float64(PerturbationBudget))
	}
	if !(base.Value > 0) {
		dirs, out.Note = nil, "perturbation figure not computed: no sensitivity value to compare with"
	}
	if len(dirs) > 0 {
		out.Perturbation = 0
		for _, p := range dirs {
			out.Directions++
			v, err := eval(scaleEntries(A, p.a), scaleEntries(C, p.c))
			rel := math.Inf(1)
			if err == nil {
				rel = math.Abs(v/base.Value - 1)
			} else if out.Err == "" {
				out.Err = fmt.Sprintf("%s: %v", p.name, err)
			}
			if !(rel <= out.Perturbation) {
				out.Perturbation, out.PerturbedBy = rel, p.name
			}
			if math.IsInf(rel, 1) {
				break
			}
		}
	}
	if out.MinDet > 0 && out.MinDet < FragileMinDet {
		out.Reasons = append(out.Reasons, fmt.Sprintf("a kept free set is nearly singular: smallest |det D_dj| = %.3g < %g", out.MinDet, FragileMinDet))
	}
	if out.Perturbation > FragilePerturbation {
		out.Reasons = append(out.Reasons, fmt.Sprintf("the sensitivity moves by %s under %g relative changes of A, C (%s) > %g%%",
			percent(out.Perturbation), PerturbationSize, out.PerturbedBy, 100*FragilePerturbation))
	}
	out.Fragile = len(out.Reasons) > 0
	return out
}

// Summary is the one-line statement of the figure: "smallest kept |det D_dj| = X; sensitivity moves
// by up to Y% under 1e-4 relative changes of A, C (N perturbed models)".
func (c Conditioning) Summary() string {
	s := fmt.Sprintf("smallest kept |det D_dj| = %.3g", c.MinDet)
	switch {
	case c.Directions == 0:
		s += "; " + c.Note
	default:
		s += fmt.Sprintf("; sensitivity moves by up to %s under %g relative changes of A, C (%d perturbed models)", percent(c.Perturbation), PerturbationSize, c.Directions)
		if c.Note != "" {
			s += "; " + c.Note
		}
	}
	return s
}

// Advice names what a user can change when the sensitivity is fragile.
func (c Conditioning) Advice() string {
	return "the calibration is fragile: " + strings.Join(c.Reasons, "; ") + ". Change `privacy.model` (protect a smaller, " +
		"better-conditioned subsystem, as the vehicle's position model A = 1, C = 1), `privacy.adjacency` (block: Theorem 3's " +
		"index sets, a weaker guarantee, named as such) or `steps` (a shorter horizon T keeps fewer nearly singular free sets)"
}

func percent(x float64) string {
	if math.IsInf(x, 1) {
		return "an unbounded amount (a perturbed model is refused)"
	}
	if 100*x >= 1000 {
		return fmt.Sprintf("%.0f%%", 100*x)
	}
	return fmt.Sprintf("%.3g%%", 100*x)
}

// scaleEntries returns M with entry i (row-major) multiplied by f[i].
func scaleEntries(M *mat.Dense, f []float64) *mat.Dense {
	r, c := M.Dims()
	out := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out.Set(i, j, M.At(i, j)*f[i*c+j])
		}
	}
	return out
}

// DynamicsCost is the flops of one DynamicsSensitivity (valueCost = n_x) or IIDSensitivity
// (valueCost its value's cost) for horizon T, state dimension nx and adjacency adj.
func DynamicsCost(adj Adjacency, T, nx int, valueCost float64) float64 {
	n := T * nx
	if adj == Block {
		return float64(n) * (float64(nx*nx) + valueCost)
	}
	return binomial(n, nx-1) * (float64(n*nx+nx*nx*nx) + valueCost)
}
