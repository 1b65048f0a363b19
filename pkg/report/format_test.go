package report

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/metrics"
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
	if got := ci(metrics.Stat{}); got != "n/a" {
		t.Errorf("ci(empty) = %q", got)
	}
	if got := ci(metrics.Stat{N: 100, Mean: 3.1, Lo: 2.8, Hi: 3.4}); got != "3.1 [2.8, 3.4]" {
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
