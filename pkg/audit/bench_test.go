package audit

import (
	"testing"
)

// BenchmarkAnalyze: the full analysis (split, Gaussian: CP + GDP, curve of 200 points) of 10^6 trials
// per side.
func BenchmarkAnalyze(b *testing.B) {
	tr := gaussTrials(1, 1000000, mustMu(b, 1, 1e-5))
	o := Options{EpsilonClaimed: 1, Delta: 1e-5, CurvePoints: 200}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Analyze(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeBonferroni: the same with the pilot grid and Bonferroni correction.
func BenchmarkAnalyzeBonferroni(b *testing.B) {
	tr := gaussTrials(1, 1000000, mustMu(b, 1, 1e-5))
	o := Options{EpsilonClaimed: 1, Delta: 1e-5, Selection: SelectBonferroni}
	for b.Loop() {
		if _, err := tr.Analyze(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddTrial: recording one trial (hash for the split tag + append), the engines' hot path.
func BenchmarkAddTrial(b *testing.B) {
	tr := NewTrials(0)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		tr.AddTrial(i, int(i&1), 0.5)
		i++
		if i == 1<<20 {
			tr.Reset()
			i = 0
		}
	}
}

// BenchmarkClopperPearson: one upper bound at n = 5*10^5 (as in the split of 10^6 trials).
func BenchmarkClopperPearson(b *testing.B) {
	k := 0
	for b.Loop() {
		_ = ClopperPearsonUpper(100+k%200000, 500000, 0.0125)
		k += 7919
	}
}
