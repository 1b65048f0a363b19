package audit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// The supports h(a) = min over the region of a p + q, against a brute-force minimum over the
// region's boundary: the (eps, delta) curve (AllowedFNR) and the mu-GDP curve (GDPFNR).
func TestSequentialSupports(t *testing.T) {
	free := freeFamily(Claim{Epsilon: 1, Delta: 0.01, Mechanism: privacy.Gaussian}, 0, 0.05)
	for _, eps := range []float64{0, 0.3, 1, 2.5} {
		for _, a := range []float64{0.05, 0.37, 1, math.E, 7} {
			brute, bruteG := math.Inf(1), math.Inf(1)
			for i := 0; i <= 200000; i++ {
				p := float64(i) / 200000
				brute = math.Min(brute, a*p+AllowedFNR(eps, 0.01, p))
				bruteG = math.Min(bruteG, a*p+GDPFNR(eps, p))
			}
			// the grid's minimum lies above the true one by at most the steepest slope times a step
			tol := (a + math.Exp(eps) + 10) / 200000
			if got := free.support(eps, a); got > brute+1e-12 || brute-got > tol {
				t.Errorf("free support(eps %g, a %g) = %.12g, brute force %.12g", eps, a, got, brute)
			}
			if got := gdpSupport(eps, a); got > bruteG+1e-12 || bruteG-got > tol {
				t.Errorf("gdp support(mu %g, a %g) = %.12g, brute force %.12g", eps, a, got, bruteG)
			}
		}
	}
}

// gaussianPairs feeds exact Gaussian pairs (bit 0: N(0, 1), bit 1: N(mu, 1)) to s until it decides,
// and checks at every look, by a second route, the e-value of every family's claim: the product
// over the pairs of 1 + lam (h - W), W from each test's own indicators.
func gaussianPairs(t *testing.T, s *Sequential, seed uint64, mu float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	logK := make([]float64, len(s.fams))
	for s.Decision() == "" {
		b := s.bet
		x, xp := r.NormFloat64(), mu+r.NormFloat64()
		if b != nil {
			for fi, f := range s.fams {
				w, h := 0.0, 0.0
				for k, tau := range b.taus {
					fp, fn := x > tau, xp <= tau
					if b.orient == OrientLess {
						fp, fn = x <= tau, xp > tau
					}
					if fp {
						w += b.c[k] * b.a[k]
					}
					if fn {
						w += b.c[k]
					}
					h += b.c[k] * f.support(f.params[f.claim], b.a[k])
				}
				logK[fi] += math.Log(1 + b.lam*(h-w))
			}
		}
		before := len(s.history)
		s.AddPair([]float64{x}, []float64{xp})
		if len(s.history) > before {
			for fi, f := range s.fams {
				if d := math.Abs(f.logK[f.claim] - logK[fi]); d > 1e-9*math.Max(1, math.Abs(logK[fi])) {
					t.Fatalf("seed %d, look at %d pairs: %s ln K of the claim %.12g, recomputed pair by pair %.12g", seed, s.pairs, f.name, f.logK[f.claim], logK[fi])
				}
			}
		}
	}
	for _, f := range s.fams {
		for i := 1; i < len(f.params); i++ {
			if f.logK[i] > f.logK[i-1]+1e-12 {
				t.Fatalf("seed %d: %s ln K rises from parameter %g to %g: %g -> %g (must decrease)", seed, f.name, f.params[i-1], f.params[i], f.logK[i-1], f.logK[i])
			}
		}
	}
}

// Sound: exact Gaussian pairs at the edge of the claim, 60 seeds, 5,000 pairs each. A false
// violation has probability <= 5 % per seed; more than 8 of 60 has probability 0.0028 at 5 %.
// Also the e-values recompute pair by pair and decrease in the parameter.
func TestSequentialSoundAtClaim(t *testing.T) {
	c := Claim{Epsilon: 1, Delta: 0.01, Mechanism: privacy.Gaussian}
	mc, err := privacy.KappaInverse(1, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	false_ := 0
	for seed := uint64(1); seed <= 60; seed++ {
		s, err := NewSequential([]string{"llr"}, SequentialOptions{Claim: c, MaxPairs: 5000, Target: 0.9})
		if err != nil {
			t.Fatal(err)
		}
		gaussianPairs(t, s, seed, mc)
		rep := s.Report(s.Decision())
		if rep.Verdict == Violation {
			false_++
		}
		for _, f := range rep.Families {
			if f.EpsilonLB > 1 {
				t.Errorf("seed %d: %s eps_lb %g above the true eps 1 (a wrong bound)", seed, f.Name, f.EpsilonLB)
			}
		}
	}
	t.Logf("false violations %d of 60 at the claim", false_)
	if false_ > 8 {
		t.Fatalf("%d false violations of 60 (level 5 %%: more than 8 has probability 0.0028)", false_)
	}
}

// Laplace pairs exactly at a pure eps claim: the free family alone, with the whole level.
func TestSequentialSoundLaplace(t *testing.T) {
	c := Claim{Epsilon: 1, Mechanism: privacy.Laplace}
	false_ := 0
	for seed := uint64(1); seed <= 60; seed++ {
		s, err := NewSequential([]string{"x"}, SequentialOptions{Claim: c, MaxPairs: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.fams) != 1 || math.Abs(s.fams[0].alpha-0.05) > 1e-12 {
			t.Fatalf("a Laplace claim: want the free family alone at alpha 0.05")
		}
		r := rand.New(rand.NewPCG(seed, 13))
		lap := func() float64 { return -math.Copysign(math.Log(1-2*math.Abs(r.Float64()-0.5)), r.Float64()-0.5) }
		for s.Decision() == "" {
			s.AddPair([]float64{lap()}, []float64{1 + lap()}) // distance 1, scale 1: exactly 1-DP
		}
		if s.Report(s.Decision()).Verdict == Violation {
			false_++
		}
	}
	if false_ > 8 {
		t.Fatalf("%d false violations of 60 (level 5 %%)", false_)
	}
}

// Power: the pair of the iid-naive T = 3 consensus (mu 0.922 against the claim's 0.5325) is
// flagged within 2,000 pairs at every one of 20 seeds.
func TestSequentialDetects(t *testing.T) {
	c := Claim{Epsilon: 1, Delta: 0.01, Mechanism: privacy.Gaussian}
	for seed := uint64(1); seed <= 20; seed++ {
		s, err := NewSequential([]string{"llr"}, SequentialOptions{Claim: c, MaxPairs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		gaussianPairs(t, s, seed, 0.922)
		rep := s.Report(s.Decision())
		if rep.Verdict != Violation || rep.StoppedBecause != StopViolation {
			t.Errorf("seed %d: %s after %d pairs (%s), want a violation", seed, rep.Verdict, rep.TrialsUsed.Bit0, rep.StoppedBecause)
		}
		if rep.TrialsUsed.Bit0 != rep.History[len(rep.History)-1].Pairs || rep.Looks != len(rep.History) {
			t.Errorf("seed %d: trials used %d, looks %d, history %d", seed, rep.TrialsUsed.Bit0, rep.Looks, len(rep.History))
		}
	}
}

func TestSequentialOptionsRefused(t *testing.T) {
	c := Claim{Epsilon: 1, Delta: 0.01, Mechanism: privacy.Gaussian}
	for _, o := range []SequentialOptions{
		{Claim: c, MaxPairs: 0},
		{Claim: c, MaxPairs: 10, Target: 1.5},
		{Claim: c, MaxPairs: 10, Confidence: 1},
		{Claim: Claim{Epsilon: -1}, MaxPairs: 10},
	} {
		if _, err := NewSequential([]string{"s"}, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
