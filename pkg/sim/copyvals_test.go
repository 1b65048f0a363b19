package sim

import (
	"slices"
	"testing"
)

// copyVals is copy for every pair of lengths, short (the loop) and long (copy itself).
func TestCopyValsIsCopy(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 8, 9, 20} {
		for _, m := range []int{0, 1, 2, n, n + 3} {
			src := make([]float64, n)
			for i := range src {
				src[i] = float64(i) + 0.5
			}
			want, got := make([]float64, m), make([]float64, m)
			for i := range want {
				want[i], got[i] = -1, -1
			}
			copy(want, src)
			copyVals(got, src)
			if !slices.Equal(want, got) {
				t.Fatalf("src %d, dst %d values: copy gives %v, copyVals %v", n, m, want, got)
			}
		}
	}
}
