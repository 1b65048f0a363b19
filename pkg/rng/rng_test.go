package rng

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSamePathSameStream(t *testing.T) {
	a, b := New(42, Label("plant"), 3), New(42, Label("plant"), 3)
	for i := 0; i < 100; i++ {
		require.Equal(t, a.Uint64(), b.Uint64())
	}
}

func TestDifferentPathsDiffer(t *testing.T) {
	seen := map[uint64]string{}
	for _, c := range []struct {
		name string
		seed uint64
		path []uint64
	}{
		{"root", 1, nil}, {"a0", 1, []uint64{0}}, {"a1", 1, []uint64{1}}, {"a01", 1, []uint64{0, 1}},
		{"a10", 1, []uint64{1, 0}}, {"seed2", 2, []uint64{0}}, {"plant", 1, []uint64{Label("plant")}},
		{"cloud", 1, []uint64{Label("cloud")}},
	} {
		d := Derive(c.seed, c.path...)
		if prev, ok := seen[d]; ok {
			t.Fatalf("paths %s and %s collide", prev, c.name)
		}
		seen[d] = c.name
	}
}

func TestStreamsUncorrelated(t *testing.T) {
	// Pearson correlation of 1e5 uniform pairs from sibling streams: |r| < 5/sqrt(n) (5 sigma).
	a, b := New(7, 0), New(7, 1)
	const n = 100000
	var sa, sb, sab, saa, sbb float64
	for i := 0; i < n; i++ {
		x, y := a.Float64(), b.Float64()
		sa, sb, sab, saa, sbb = sa+x, sb+y, sab+x*y, saa+x*x, sbb+y*y
	}
	cov := sab/n - sa/n*sb/n
	vx, vy := saa/n-(sa/n)*(sa/n), sbb/n-(sb/n)*(sb/n)
	corr := cov / math.Sqrt(vx*vy)
	require.Less(t, math.Abs(corr), 5/math.Sqrt(n))
}

func TestFromCryptoVaries(t *testing.T) {
	require.NotEqual(t, FromCrypto(), FromCrypto())
}
