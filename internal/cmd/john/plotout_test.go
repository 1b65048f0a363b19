package johncmd

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// plotOnlyKeys are the JSON keys that --plot-out adds (or that vary from run to run): everything else is
// the result and must not depend on whether a plot is drawn.
var plotOnlyKeys = []string{"time_ms", "plots", "plot_seed", "plot_seed_source", "plot_warnings"}

// TestPlotOutKeepsTheAnswer: --plot-out draws a figure and never changes the result. It used to turn
// the exact method's default xi from 1e-9 (2,292 iterations on examples/A.csv) into 0.1 (7 iterations)
// Both the JSON and the table are compared.
func TestPlotOutKeepsTheAnswer(t *testing.T) {
	input := filepath.Join("..", "..", "..", "examples", "A.csv")
	cases := []struct {
		name string
		args []string
	}{
		{"exact default", nil},
		{"exact xi", []string{"--xi", "0.05"}},
		{"fast", []string{"--method", "fast", "--seed", "4", "--max-iter", "60"}},
		{"dp", []string{"--method", "dp", "--noise-scale", "0.2", "--seed", "4", "--max-iter", "60"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := append([]string{"--input", input}, c.args...)
			plot := append(append([]string{}, base...), "--plot-out", t.TempDir())
			without := resultJSON(t, append(base, "--json")...)
			with := resultJSON(t, append(plot, "--json")...)
			if !reflect.DeepEqual(without, with) {
				t.Errorf("--plot-out changed the result:\nwithout %v\nwith    %v", brief(without), brief(with))
			}
			if c.name == "exact default" && (without["xi"] != 1e-9 || without["iterations"].(float64) < 1000) {
				t.Errorf("exact default: xi %v, %v iterations; want 1e-9 and the full Wolfe-Atwood run", without["xi"], without["iterations"])
			}
			tw, _, err := run(base...)
			if err != nil {
				t.Fatal(err)
			}
			tp, _, err := run(plot...)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := resultLines(tw), resultLines(tp); a != b {
				t.Errorf("--plot-out changed the table:\nwithout\n%s\nwith\n%s", a, b)
			}
		})
	}
}

// resultJSON runs dpsim john and returns its JSON without the plot-only keys.
func resultJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, _, err := run(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range plotOnlyKeys {
		delete(m, k)
	}
	return m
}

func brief(m map[string]any) string {
	return strings.TrimSpace(strings.Join([]string{"xi", toString(m["xi"]), "iterations", toString(m["iterations"]),
		"max_leverage", toString(m["max_leverage"]), "seed", toString(m["seed"])}, " "))
}

func toString(v any) string { b, _ := json.Marshal(v); return string(b) }

// resultLines drops the table lines that only --plot-out adds or that vary from run to run.
func resultLines(table string) string {
	var keep []string
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "time_ms" || f[0] == "plot" || f[0] == "plot_seed") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// TestSeedLine: the exact method draws no random numbers, so it prints no seed number (it printed
// "seed 0 ()") but says why; fast and dp print the seed and its source; with --plot-out the
// seed of the plot's random curves is printed as plot_seed.
func TestSeedLine(t *testing.T) {
	input := filepath.Join("..", "..", "..", "examples", "A.csv")
	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"exact", nil, []string{"seed none (the exact method draws no random numbers)"}, []string{"seed 0", "()", "plot_seed"}},
		{"fast", []string{"--method", "fast", "--seed", "9", "--max-iter", "5"}, []string{"seed 9 (flag)"}, []string{"plot_seed"}},
		{"exact with plot", []string{"--plot-out", "DIR", "--seed", "9"},
			[]string{"seed none (the exact method draws no random numbers)", "plot_seed 9 (flag; the fast and dp curves of the plot)"}, []string{"()"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--input", input}, c.args...)
			for i, a := range args {
				if a == "DIR" {
					args[i] = t.TempDir()
				}
			}
			out, _, err := run(args...)
			if err != nil {
				t.Fatal(err)
			}
			out = strings.Join(strings.Fields(strings.ReplaceAll(out, "\n", " | ")), " ") // columns aligned by any width
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("table has %q:\n%s", w, out)
				}
			}
		})
	}
}
