package report

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/dpsim/dpsim/pkg/sim"
)

func TestNum(t *testing.T) {
	cases := []struct {
		v    float64
		p    int
		want string
	}{
		{0, 3, "0"},
		{3.14159, 3, "3.14"},
		{3.1, 3, "3.1"},
		{2.5244, 5, "2.5244"},
		{1234.5, 3, "1230"},
		{99999, 3, "100000"},
		{0.001234, 3, "0.00123"},
		{2.8e-5, 3, "2.8e-5"},
		{-2.8e-5, 3, "-2.8e-5"},
		{1.2e7, 3, "1.2e7"},
		{1e6, 3, "1e6"},
		{-0.5, 3, "-0.5"},
		{math.NaN(), 3, "NaN"},
		{math.Inf(1), 3, "+Inf"},
		{math.Inf(-1), 3, "-Inf"},
		{0.99999, 3, "1"},
	}
	for _, c := range cases {
		if got := numP(c.v, c.p); got != c.want {
			t.Errorf("numP(%v, %d) = %q, want %q", c.v, c.p, got, c.want)
		}
	}
}

func TestCI(t *testing.T) {
	if got := ci(sim.Stat{}); got != "n/a" {
		t.Errorf("ci(empty) = %q", got)
	}
	if got := ci(sim.Stat{N: 100, Mean: 3.1, Lo: 2.8, Hi: 3.4}); got != "3.1 [2.8, 3.4]" {
		t.Errorf("ci = %q", got)
	}
}

func TestFlatten(t *testing.T) {
	v := struct {
		A int
		B struct{ C float64 }
		D []string
		E map[string]bool
	}{A: 3, D: []string{"x", "y"}, E: map[string]bool{"z": true, "a": false}}
	v.B.C = 0.123456
	rows, err := flatten(v)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r[0]+"="+r[1])
	}
	want := "A=3 B.C=0.123 D[0]=x D[1]=y E.a=no E.z=yes"
	if strings.Join(got, " ") != want {
		t.Errorf("flatten = %v, want %v", strings.Join(got, " "), want)
	}
	if _, err := flatten(func() {}); err == nil {
		t.Error("flatten of a func succeeded")
	}
	rows, err = flatten(42)
	if err != nil || len(rows) != 1 || rows[0] != [2]string{"value", "42"} {
		t.Errorf("flatten(42) = %v, %v", rows, err)
	}
}

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
		{"log decades", labelsOf(logTicks), lg(0.012), lg(9000), "0.1 1 10 100 1000"},
		{"log many decades", labelsOf(logTicks), -15, 0.5, "1e-15 1e-12 1e-9 1e-6 1e-3 1"}, // one format per axis
		{"log one decade", labelsOf(logTicks), lg(1.5), lg(6), "2 5"},
		// three decades with a bound at 35: labelled 1-2-5, and the lowest minor tick (30) too,
		// so no curve runs below the first label
		{"log three decades", labelsOf(logTicks), lg(29), lg(28000), "30 50 100 200 500 1000 2000 5000 10000 20000"},
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
