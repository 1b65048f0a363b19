package dynamics

import (
	"errors"
	"fmt"
	"math"
)

// Reference is a reference trajectory x_r(t) for the tracking controller of eq. (24). At writes
// x_r(t) into dst (len(dst) = the state dimension) for the integer step index t. At must be a
// pure function of t: ObserverController tabulates the values of the steps it has run and
// reads them back in later episodes. Implementations in this package are pure and
// allocation-free.
type Reference interface {
	At(t int, dst []float64)
}

// Dimensioned is implemented by references that know their dimension; NewObserverController
// uses it to check the reference against the state dimension.
type Dimensioned interface {
	Dim() int
}

// TanhReference is the paper's vehicle reference (Section 5.3):
//
//	x_r(t) = (tanh(t), 1 - |tanh(t - 9)|)
//
// with t the integer step index (as the authors' code evaluates it, not t*Ts). Dimension 2.
type TanhReference struct{}

// tanhSaturates is the smallest integer k with math.Tanh(k) == 1 exactly in float64 (checked by
// a test); TanhReference skips the call beyond it, with bit-identical results.
const tanhSaturates = 20

// tanhInt returns math.Tanh(k) for an integer k, skipping the call where it saturates.
func tanhInt(k int) float64 {
	switch {
	case k >= tanhSaturates:
		return 1
	case k <= -tanhSaturates:
		return -1
	}
	return math.Tanh(float64(k))
}

// At implements Reference.
func (TanhReference) At(t int, dst []float64) {
	dst[0] = tanhInt(t)
	dst[1] = 1 - math.Abs(tanhInt(t-9))
}

// Dim returns 2.
func (TanhReference) Dim() int { return 2 }

// ZeroReference is x_r(t) = 0 in dimension N (regulation to the origin).
type ZeroReference struct{ N int }

// At implements Reference.
func (z ZeroReference) At(_ int, dst []float64) {
	for i := range dst[:z.N] {
		dst[i] = 0
	}
}

// Dim returns N.
func (z ZeroReference) Dim() int { return z.N }

// ConstantReference is x_r(t) = V for all t.
type ConstantReference struct{ V []float64 }

// At implements Reference.
func (c ConstantReference) At(_ int, dst []float64) { copy(dst, c.V) }

// Dim returns len(V).
func (c ConstantReference) Dim() int { return len(c.V) }

// StepReference is x_r(t) = Before for t < Time and After for t >= Time.
type StepReference struct {
	Before, After []float64
	Time          int
}

// At implements Reference.
func (s StepReference) At(t int, dst []float64) {
	if t < s.Time {
		copy(dst, s.Before)
	} else {
		copy(dst, s.After)
	}
}

// Dim returns len(Before) (NewStepReference guarantees len(Before) == len(After)).
func (s StepReference) Dim() int { return len(s.Before) }

// NewStepReference checks that before and after have the same length and finite entries.
func NewStepReference(before, after []float64, time int) (StepReference, error) {
	if len(before) != len(after) {
		return StepReference{}, fmt.Errorf("dynamics: step reference: before has length %d, after %d", len(before), len(after))
	}
	if len(before) == 0 {
		return StepReference{}, errors.New("dynamics: step reference: empty value")
	}
	if err := finiteVec("step reference before", before); err != nil {
		return StepReference{}, err
	}
	if err := finiteVec("step reference after", after); err != nil {
		return StepReference{}, err
	}
	return StepReference{Before: append([]float64(nil), before...), After: append([]float64(nil), after...), Time: time}, nil
}

func finiteVec(name string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("dynamics: %s[%d] = %v is not finite", name, i, x)
		}
	}
	return nil
}
