package calibrate

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden dp_event files in testdata/")

// The test side of docs/math.md sections 9 and 9.1, written apart from pkg/privacy: the GDP delta(eps)
// in log space and the optimal composition of pure eps0-DP as a plain sum.

// logPhi is log Phi(x): erfc down to -30, below it the asymptotic series of Mills' ratio
// (relative error of the truncation below 1e-13 there).
func logPhi(x float64) float64 {
	if x > -30 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	z := 1 / (x * x)
	s := 1 - z*(1-z*(3-z*(15-z*(105-z*945))))
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(s)
}

// gdpLogDelta is log delta(eps) of mu-GDP: delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
func gdpLogDelta(eps, mu float64) float64 {
	a, b := -eps/mu+mu/2, -eps/mu-mu/2
	return logPhi(a) + math.Log1p(-math.Exp(eps+logPhi(b)-logPhi(a)))
}

// kovLogDelta is log delta(eps) of k pure eps0-DP mechanisms composed optimally:
// sum over l with (k-2l) eps0 > eps of Bin(k, q)(l) (1 - e^{eps - (k-2l) eps0}), q = 1/(1+e^eps0).
func kovLogDelta(eps, eps0 float64, k int) float64 {
	lq := -math.Log1p(math.Exp(eps0))
	lp := eps0 + lq
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	var terms []float64
	for l := 0; l <= k && float64(k-2*l)*eps0 > eps; l++ {
		lpmf := lg(float64(k+1)) - lg(float64(l+1)) - lg(float64(k-l+1)) + float64(k-l)*lp + float64(l)*lq
		terms = append(terms, lpmf+math.Log(-math.Expm1(eps-float64(k-2*l)*eps0)))
	}
	if len(terms) == 0 {
		return math.Inf(-1)
	}
	mx := math.Inf(-1)
	for _, v := range terms {
		mx = math.Max(mx, v)
	}
	s := 0.0
	for _, v := range terms {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// solveEps is the least eps >= 0 with logDelta(eps) <= log delta, by bisection (logDelta decreasing).
func solveEps(logDelta func(float64) float64, delta, hi float64) float64 {
	ld := math.Log(delta)
	if logDelta(0) <= ld {
		return 0
	}
	for logDelta(hi) > ld {
		hi *= 2
	}
	lo := 0.0
	for i := 0; i < 2000 && hi-lo > 1e-15*hi; i++ {
		mid := (lo + hi) / 2
		if logDelta(mid) > ld {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

type curvePoint struct{ Delta, Epsilon float64 }

type dpEventJSON struct {
	Event struct {
		ClassName string `json:"class_name"`
		Count     int    `json:"count"`
		Event     struct {
			ClassName       string  `json:"class_name"`
			NoiseMultiplier float64 `json:"noise_multiplier"`
		} `json:"event"`
	} `json:"event"`
	BoundEvent *struct {
		Count int `json:"count"`
		Event struct {
			NoiseParameter float64 `json:"noise_parameter"`
			NumBuckets     int     `json:"num_buckets"`
		} `json:"event"`
	} `json:"bound_event"`
}

// pointJSON is what the test reads of one calibrated point.
type pointJSON struct {
	Scenario     string       `json:"scenario"`
	Mechanism    string       `json:"mechanism"`
	EpsilonRun   float64      `json:"epsilon_run"`
	DeltaRun     float64      `json:"delta_run"`
	DpEvent      *dpEventJSON `json:"dp_event"`
	DpEventCurve []curvePoint `json:"dp_event_curve"`
}

// recomputeEps is eps at delta of the event ev by docs/math.md: Gaussian mu_run =
// sqrt(count)/noise_multiplier and the GDP delta(eps); Laplace eps0 = 1/noise_multiplier, count eps0
// at delta 0, else the optimal composition of count eps0-DP mechanisms.
func recomputeEps(t *testing.T, mech string, ev *dpEventJSON, delta float64) float64 {
	k, nm := ev.Event.Count, ev.Event.Event.NoiseMultiplier
	switch mech {
	case "gaussian":
		require.Equal(t, "GaussianDpEvent", ev.Event.Event.ClassName)
		mu := math.Sqrt(float64(k)) / nm
		return solveEps(func(e float64) float64 { return gdpLogDelta(e, mu) }, delta, mu*mu+1)
	case "laplace":
		require.Equal(t, "LaplaceDpEvent", ev.Event.Event.ClassName)
		eps0 := 1 / nm
		if delta == 0 {
			return float64(k) * eps0
		}
		require.LessOrEqual(t, k, 100_000, "the plain sum is for small k")
		return solveEps(func(e float64) float64 { return kovLogDelta(e, eps0, k) }, delta, float64(k)*eps0)
	}
	t.Fatalf("mechanism %q", mech)
	return 0
}

// checkPoint recomputes the point's eps_run and curve from its dp_event alone.
func checkPoint(t *testing.T, p pointJSON) {
	ev := p.DpEvent
	require.Equal(t, "SelfComposedDpEvent", ev.Event.ClassName)
	if p.Mechanism == "laplace" { // the bound event is randomized response with ratio e^eps0
		rr := ev.BoundEvent
		require.Equal(t, ev.Event.Count, rr.Count)
		require.Equal(t, 2, rr.Event.NumBuckets)
		q := rr.Event.NoiseParameter
		require.InDelta(t, 1, math.Log((2-q)/q)*ev.Event.Event.NoiseMultiplier, 1e-12)
	}
	eps := recomputeEps(t, p.Mechanism, ev, p.DeltaRun)
	require.InDelta(t, 1, eps/p.EpsilonRun, 1e-9, "%s: eps_run %v, recomputed %v", p.Scenario, p.EpsilonRun, eps)
	onCurve := false
	for _, c := range p.DpEventCurve {
		e := recomputeEps(t, p.Mechanism, ev, c.Delta)
		require.InDelta(t, 1, e/c.Epsilon, 1e-9, "%s: curve at delta %v: %v, recomputed %v", p.Scenario, c.Delta, c.Epsilon, e)
		onCurve = onCurve || (c.Delta == p.DeltaRun && c.Epsilon == p.EpsilonRun)
	}
	require.True(t, onCurve, "%s: the curve passes through (delta_run, eps_run)", p.Scenario)
}

// TestDpEventRecomputesEveryScenario: for every point of every shipped scenario with noise, the
// dp_event of calibrate --json, read by the formulas of docs/math.md 9 and 9.1 written apart from
// pkg/privacy, gives the eps_run calibrate states and every point of its dp_event_curve (1e-9
// relative).
func TestDpEventRecomputesEveryScenario(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "scenarios", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := map[string]int{}
	for _, f := range files {
		out, err := run(t, "--scenario", f, "--json")
		require.NoError(t, err, f)
		var one pointJSON
		var sweep struct{ Points []pointJSON }
		require.NoError(t, json.Unmarshal([]byte(out), &sweep), f)
		points := sweep.Points
		if points == nil {
			require.NoError(t, json.Unmarshal([]byte(out), &one), f)
			points = []pointJSON{one}
		}
		for _, p := range points {
			if p.DpEvent == nil || (p.Mechanism != "gaussian" && p.Mechanism != "laplace") {
				continue // noise none: no guarantee, no event
			}
			checkPoint(t, p)
			checked[p.Mechanism]++
		}
	}
	t.Logf("points checked: %v", checked)
	require.Greater(t, checked["gaussian"], 20)
	require.Greater(t, checked["laplace"], 2)
}

// goldenScenarios are the scenarios whose dp_event and dp_event_curve are kept in testdata/.
var goldenScenarios = []string{"audit-vehicle-composition", "audit-consensus-laplace"}

// TestDpEventGolden: the dp_event and dp_event_curve of calibrate --json for a Gaussian and a Laplace
// scenario match testdata/dp_event-NAME.json (numbers to 1e-12 relative, the rest exactly); -update
// rewrites them.
func TestDpEventGolden(t *testing.T) {
	for _, name := range goldenScenarios {
		m := runJSON(t, "--scenario", scenarioPath(name+".yaml"))
		got := map[string]any{"scenario": name, "dp_event": m["dp_event"], "dp_event_curve": m["dp_event_curve"]}
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		path := filepath.Join("testdata", "dp_event-"+name+".json")
		if *update {
			require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./internal/cmd/calibrate -run TestDpEventGolden -update")
		var w, g any
		require.NoError(t, json.Unmarshal(want, &w))
		require.NoError(t, json.Unmarshal(b, &g))
		if d := jsonDiff("", w, g); d != "" {
			t.Errorf("%s: %s (run with -update if the change is meant)", path, d)
		}
	}
}

// jsonDiff names the first place where a and b differ: keys, strings and booleans exactly,
// numbers to 1e-12 relative.
func jsonDiff(at string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v vs %v", at, a, b)
		}
		for k, v := range x {
			if d := jsonDiff(at+"."+k, v, y[k]); d != "" {
				return d
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v vs %v", at, a, b)
		}
		for i := range x {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", at, i), x[i], y[i]); d != "" {
				return d
			}
		}
	case float64:
		y, ok := b.(float64)
		if !ok || math.Abs(x-y) > 1e-12*math.Max(math.Abs(x), math.Abs(y)) {
			return fmt.Sprintf("%s: %v vs %v", at, a, b)
		}
	default:
		if a != b {
			return fmt.Sprintf("%s: %v vs %v", at, a, b)
		}
	}
	return ""
}
