package rng

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSamePathSameStream(t *testing.T) {
	a, b := New(42, Label("plant"), 3), New(42, Label("plant"), 3)
	for i := 0; i < 100; i++ {
		require.Equal(t, a.Uint64(), b.Uint64())
	}
}

// Reseed puts a kept source where New starts, whatever it drew before.
func TestReseedIsNew(t *testing.T) {
	var p rand.PCG
	r := rand.New(&p)
	for ep := uint64(0); ep < 3; ep++ {
		Reseed(&p, 42, Label("agent"), 7, ep)
		want := New(42, Label("agent"), 7, ep)
		for i := 0; i < 50; i++ {
			require.Equal(t, want.NormFloat64(), r.NormFloat64(), "episode %d draw %d", ep, i)
		}
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { Reseed(&p, 42, 1, 2, 3) }))
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

// At is a pure function of (key, k), uniform in [0, 1): the mean and the fraction below 1/4
// of 10^5 draws are within 5 standard errors, and other keys give other draws.
func TestAt(t *testing.T) {
	key := Derive(1, Label("x"), 2)
	const n = 100000
	var sum float64
	below := 0
	for k := uint64(0); k < n; k++ {
		v := At(key, k)
		if v < 0 || v >= 1 {
			t.Fatalf("draw %d = %v outside [0, 1)", k, v)
		}
		if v != At(key, k) {
			t.Fatal("At is not a pure function")
		}
		sum += v
		if v < 0.25 {
			below++
		}
		if o := OpenAt(key, k); o <= 0 || o >= 1 {
			t.Fatalf("OpenAt %v outside (0, 1)", o)
		}
	}
	if m := sum / n; m < 0.5-5*0.2887/316.2 || m > 0.5+5*0.2887/316.2 {
		t.Errorf("mean %v", m)
	}
	if f := float64(below) / n; f < 0.25-5*0.433/316.2 || f > 0.25+5*0.433/316.2 {
		t.Errorf("fraction below 1/4: %v", f)
	}
	if At(key, 7) == At(Derive(1, Label("x"), 3), 7) {
		t.Error("another key gives the same draw")
	}
}
