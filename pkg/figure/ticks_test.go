package figure

import (
	"math"
	"strconv"
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
		// large values: every label with an exponent, not 50000 beside 1e5
		{"linear large", labelsOf(niceTicks), -1e5, 1.5e5, "-1e5 -5e4 0 5e4 1e5 1.5e5"},
		{"linear small values", labelsOf(niceTicks), 0, 1.5e-6, "0 2.5e-7 5e-7 7.5e-7 1e-6 1.25e-6 1.5e-6"},
		{"log decades", labelsOf(logTicks), Lg(0.012), Lg(9000), "0.1 1 10 100 1000"},
		{"log many decades", labelsOf(logTicks), -15, 0.5, "1e-15 1e-12 1e-9 1e-6 1e-3 1"}, // one format per axis
		{"log one decade", labelsOf(logTicks), Lg(1.5), Lg(6), "2 5"},
		// over up to two decades 1, 2 and 5 times the powers of ten, nothing else (no 30 or 40)
		{"log two decades", labelsOf(logTicks), Lg(29), Lg(2800), "50 100 200 500 1000 2000"},
		{"log three decades", labelsOf(logTicks), Lg(29), Lg(28000), "100 1000 10000"},
		// the ranges SetLogY gives: both ends labelled
		{"log range two decades", rangeLabels(29, 2000), 0, 0, "20 50 100 200 500 1000 2000 5000"},
		{"log range over two decades", rangeLabels(29, 2800), 0, 0, "10 100 1000 10000"},
		{"log range three decades", rangeLabels(29, 28000), 0, 0, "1e1 1e2 1e3 1e4 1e5"},
		{"log range within a decade", rangeLabels(3, 5), 0, 0, "2 5 10"},
		{"log range small", rangeLabels(0.0031, 0.04), 0, 0, "0.002 0.005 0.01 0.02 0.05"},
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

// rangeLabels labels the log axis SetLogY gives data in [lo, hi] (the arguments of the
// returned function are ignored).
func rangeLabels(lo, hi float64) func(min, max float64) []string {
	return func(float64, float64) []string {
		min, max, _ := logRange(lo, hi, 1.15)
		return labelsOf(logTicks)(min, max)
	}
}

// TestFit: a linear axis is widened to the labels around its data, whatever step the wider
// range takes.
func TestFit(t *testing.T) {
	cases := []struct{ min, max, wantMin, wantMax float64 }{
		{-0.97, 0.38, -1, 0.5},
		{-74, 85, -100, 100},
		{0, 100, 0, 100},
		{-0.5, 5.5, -2, 6},
		{0, 3.9, 0, 4},
	}
	for _, c := range cases {
		p := New("", "x", "y")
		p.Y.Min, p.Y.Max = c.min, c.max
		Fit(p)
		if math.Abs(p.Y.Min-c.wantMin) > 1e-12 || math.Abs(p.Y.Max-c.wantMax) > 1e-12 {
			t.Errorf("Fit [%g, %g] = [%g, %g], want [%g, %g]", c.min, c.max, p.Y.Min, p.Y.Max, c.wantMin, c.wantMax)
		}
		labels := labelsOf(niceTicks)(p.Y.Min, p.Y.Max)
		if len(labels) == 0 || labels[0] != niceLabel(p.Y.Min, labels) || labels[len(labels)-1] != niceLabel(p.Y.Max, labels) {
			t.Errorf("Fit [%g, %g]: ends not labelled: %v", c.min, c.max, labels)
		}
	}
}

// niceLabel is the label among labels that reads as v (for TestFit).
func niceLabel(v float64, labels []string) string {
	for _, l := range labels {
		if f, err := strconv.ParseFloat(l, 64); err == nil && math.Abs(f-v) < 1e-9 {
			return l
		}
	}
	return "unlabelled"
}
