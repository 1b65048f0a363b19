package estimate

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// With some outputs missing, the control estimate is the least-squares solution over the rows
// that were observed: checked against a direct solve of O_obs x0 = Y_obs - C xu.
func TestControlEstimatorMissingOutputs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const T = 12
	e, err := NewControlEstimator(vehA, vehB, vehC, T)
	require.NoError(t, err)
	x0 := []float64{0.7, -0.2}
	x := append([]float64(nil), x0...)
	xu := []float64{0, 0}
	var rows [][]float64
	var rhs []float64
	Ak := mat.NewDense(2, 2, []float64{1, 0, 0, 1})
	missing := map[int]bool{1: true, 4: true, 5: true, 9: true}
	for s := 0; s < T; s++ {
		y := x[0] + 0.01*r.NormFloat64()
		u := []float64{r.NormFloat64()}
		var yh []float64
		if !missing[s] {
			yh = []float64{y}
			var h mat.Dense
			h.Mul(vehC, Ak)
			rows = append(rows, h.RawRowView(0))
			rhs = append(rhs, y-xu[0])
		}
		require.NoError(t, e.Observe(s, yh, u))
		// true state and the input-driven part
		x = []float64{x[0] + 0.1*x[1] + 0.005*u[0], x[1] + 0.1*u[0]}
		xu = []float64{xu[0] + 0.1*xu[1] + 0.005*u[0], xu[1] + 0.1*u[0]}
		var next mat.Dense
		next.Mul(Ak, vehA)
		Ak = &next
	}
	got := make([]float64, 2)
	require.True(t, e.Estimate(got))
	O := mat.NewDense(len(rows), 2, nil)
	for i, row := range rows {
		O.SetRow(i, row)
	}
	var want mat.VecDense
	require.NoError(t, want.SolveVec(O, mat.NewVecDense(len(rhs), rhs)))
	assert.InDeltaSlice(t, want.RawVector().Data, got, 1e-9)
	assert.InDeltaSlice(t, x0, got, 0.05)
}

// A missing first output leaves the scalar system unidentified until one arrives.
func TestControlEstimatorAllMissing(t *testing.T) {
	A := mat.NewDense(1, 1, []float64{1})
	C := mat.NewDense(1, 1, []float64{1})
	e, err := NewControlEstimator(A, nil, C, 5)
	require.NoError(t, err)
	require.NoError(t, e.Observe(0, nil, nil))
	dst := make([]float64, 1)
	assert.False(t, e.Estimate(dst))
	require.NoError(t, e.Observe(1, []float64{2}, nil))
	require.True(t, e.Estimate(dst))
	assert.Equal(t, 2.0, dst[0])
	assert.ErrorContains(t, e.Observe(2, []float64{1, 2}, nil), "want 1")
}

// ObservePartial with every entry received is Observe bit for bit; with gaps each agent's
// estimate is the mean of y_i(s) - u_i(s) over its own received steps, u built from the
// stand-ins given.
func TestNetworkEstimatorPartial(t *testing.T) {
	nbrs := [][]int{{1, 2}, {0, 2}, {0, 1, 3}, {2}}
	ws := [][]float64{{0.3, 0.2}, {0.3, 0.25}, {0.2, 0.25, 0.1}, {0.1}}
	full, err := NewNetworkEstimatorLists(nbrs, ws)
	require.NoError(t, err)
	part, err := NewNetworkEstimatorLists(nbrs, ws)
	require.NoError(t, err)
	gap, err := NewNetworkEstimatorLists(nbrs, ws)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	const T = 8
	u := make([]float64, 4)
	sum := make([]float64, 4)
	cnt := make([]int, 4)
	all := []bool{true, true, true, true}
	for s := 0; s < T; s++ {
		y := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		require.NoError(t, full.Observe(s, y))
		require.NoError(t, part.ObservePartial(s, y, all))
		have := []bool{s%2 == 0, true, s != 3, s > 0}
		require.NoError(t, gap.ObservePartial(s, y, have))
		for i := range y {
			if have[i] {
				sum[i] += y[i] - u[i]
				cnt[i]++
			}
		}
		for i := range y {
			for k, j := range nbrs[i] {
				u[i] += ws[i][k] * (y[j] - y[i])
			}
		}
	}
	a, b, c := make([]float64, 4), make([]float64, 4), make([]float64, 4)
	require.True(t, full.Estimate(a))
	require.True(t, part.Estimate(b))
	assert.Equal(t, a, b)
	require.True(t, gap.Estimate(c))
	for i := range c {
		assert.InDelta(t, sum[i]/float64(cnt[i]), c[i], 1e-12, "agent %d", i)
	}
	require.Error(t, gap.ObservePartial(T, make([]float64, 4), make([]bool, 3)))
	allocs := testing.AllocsPerRun(10, func() {
		gap.Reset()
		_ = gap.ObservePartial(0, a, all)
	})
	assert.Zero(t, allocs)
	// an agent never received has no estimate
	none, _ := NewNetworkEstimatorLists(nbrs, ws)
	require.NoError(t, none.ObservePartial(0, a, []bool{true, true, true, false}))
	assert.False(t, none.Estimate(c))
}
