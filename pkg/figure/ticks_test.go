package figure

import (
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestTicks(t *testing.T) {
	cases := []struct {
		name     string
		ticks    func(min, max float64) []string
		min, max float64
		labels   string
	}{
		{"linear", labelsOf(niceTicks), -75, 88, "-50 0 50"},
		{"linear small", labelsOf(niceTicks), 0, 1, "0 0.2 0.4 0.6 0.8 1.0"},
		{"linear quarter", labelsOf(niceTicks), -0.9, 0.35, "-0.75 -0.50 -0.25 0 0.25"},
		// 2.5 steps keep their digit: 7.5, not 8
		{"linear 2.5", labelsOf(niceTicks), 1.5, 14, "2.5 5.0 7.5 10.0 12.5"},
		{"log decades", labelsOf(logTicks), Lg(0.012), Lg(9000), "0.1 1 10 100 1000"},
		{"log many decades", labelsOf(logTicks), -15, 0.5, "1e-15 1e-12 1e-9 1e-6 1e-3 1"}, // one format per axis
		{"log one decade", labelsOf(logTicks), Lg(1.5), Lg(6), "2 5"},
		// three decades with a bound at 35: labelled 1-3, and the lowest and highest minor ticks too,
		// so no curve runs below the first label
		{"log three decades", labelsOf(logTicks), Lg(29), Lg(28000), "30 100 300 1000 3000 10000 20000"},
		{"log two decades", labelsOf(logTicks), Lg(29), Lg(2800), "30 50 100 200 500 1000 2000"},
	}
	for _, c := range cases {
		if got := strings.Join(c.ticks(c.min, c.max), " "); got != c.labels {
			t.Errorf("%s: labels %q, want %q", c.name, got, c.labels)
		}
	}
}

func labelsOf(f func(min, max float64) []plot.Tick) func(min, max float64) []string {
	return func(min, max float64) []string {
		var out []string
		for _, t := range f(min, max) {
			if t.Label != "" {
				if t.Value < min-1e-9 || t.Value > max+1e-9 {
					out = append(out, "OUTSIDE:"+t.Label)
					continue
				}
				out = append(out, t.Label)
			}
		}
		return out
	}
}
