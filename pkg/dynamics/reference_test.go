package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReferences(t *testing.T) {
	step, err := NewStepReference([]float64{1, 2}, []float64{3, 4}, 5)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		ref  Reference
		t    int
		want []float64
	}{
		{"tanh t=0", TanhReference{}, 0, []float64{0, 1 - math.Tanh(9)}},
		{"tanh t=9 (velocity peak)", TanhReference{}, 9, []float64{math.Tanh(9), 1}},
		{"tanh t=10", TanhReference{}, 10, []float64{math.Tanh(10), 1 - math.Tanh(1)}},
		{"tanh t=100", TanhReference{}, 100, []float64{1, 0}},
		{"zero", ZeroReference{N: 3}, 4, []float64{0, 0, 0}},
		{"constant", ConstantReference{V: []float64{1.5, -2}}, 99, []float64{1.5, -2}},
		{"step before", step, 4, []float64{1, 2}},
		{"step at", step, 5, []float64{3, 4}},
		{"step after", step, 50, []float64{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float64, len(tc.want))
			for i := range dst {
				dst[i] = 42
			}
			tc.ref.At(tc.t, dst)
			require.InDeltaSlice(t, tc.want, dst, 1e-15)
			require.Equal(t, len(tc.want), tc.ref.(Dimensioned).Dim())
			require.Zero(t, testing.AllocsPerRun(100, func() { tc.ref.At(tc.t, dst) }))
		})
	}
	_, err = NewStepReference([]float64{1}, []float64{1, 2}, 0)
	require.ErrorContains(t, err, "before has length 1, after 2")
	_, err = NewStepReference([]float64{math.Inf(1)}, []float64{1}, 0)
	require.ErrorContains(t, err, "not finite")
	_, err = NewStepReference(nil, nil, 0)
	require.ErrorContains(t, err, "empty")
}

// The saturation shortcut of TanhReference is bit-identical to math.Tanh.
func TestTanhShortcutExact(t *testing.T) {
	require.Less(t, math.Tanh(tanhSaturates-1), 1.0)
	dst := make([]float64, 2)
	for k := -100; k <= 400; k++ {
		TanhReference{}.At(k, dst)
		require.Equal(t, math.Tanh(float64(k)), dst[0], "t=%d", k)
		require.Equal(t, 1-math.Abs(math.Tanh(float64(k)-9)), dst[1], "t=%d", k)
	}
}
