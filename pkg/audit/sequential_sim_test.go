package audit

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// seqGaussian runs a sequential audit of exact Gaussian scores (bit 0: N(0,1), bit 1: N(mu,1))
// against claim c, and returns its report.
func seqGaussian(t testing.TB, seed uint64, mu float64, o SequentialOptions) *SequentialReport {
	s, err := NewSequential([]string{"llr"}, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	for s.Decision() == "" {
		s.AddPair([]float64{r.NormFloat64()}, []float64{mu + r.NormFloat64()})
	}
	return s.Report(s.Decision())
}

func TestSequentialSim(t *testing.T) {
	if os.Getenv("SEQ_SIM") == "" {
		t.Skip("SEQ_SIM=1")
	}
	seeds, _ := strconv.Atoi(os.Getenv("SEQ_SIM"))
	c := Claim{Epsilon: 1, Delta: 0.01, Mechanism: privacy.Gaussian}
	mc, _ := privacy.KappaInverse(1, 0.01)
	for _, tc := range []struct {
		name   string
		mu     float64
		target float64
	}{{"iid-naive-t3", 0.922, 0}, {"at-claim", mc, 0}, {"at-claim target .95", mc, 0.95}} {
		var used []int
		viol := 0
		for seed := 1; seed <= seeds; seed++ {
			rep := seqGaussian(t, uint64(seed), tc.mu, SequentialOptions{Claim: c, MaxPairs: 200000, Target: tc.target})
			used = append(used, rep.TrialsUsed.Bit0)
			if rep.Verdict == Violation {
				viol++
			}
		}
		slices.Sort(used)
		t.Logf("%s: median %d pairs (min %d max %d), violations %d/%d", tc.name, used[len(used)/2], used[0], used[len(used)-1], viol, seeds)
	}
}
