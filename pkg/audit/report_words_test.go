package audit

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// verdictSentence matches the words of one verdict comparison: "eps_lb_cp = 0.55 <= eps = 1:
// consistent". Every report (report.md and the printed table) states each comparison so.
var verdictSentence = regexp.MustCompile(`(eps_lb_cp|eps_lb_gdp|eps_lb_fdp) = (\S+) (<=|>) eps = (\S+): (consistent|violation)`)

// wordsCase is a hand-made report: its numbers, and the verdict they must give.
type wordsCase struct {
	name        string
	mechanism   string
	cp, gdp     float64 // headline bounds (the max over the scores)
	eps         float64
	wantVerdict string
}

var wordsCases = []wordsCase{
	{"gaussian consistent", "gaussian", 0.5523, 0.6437, 1, Consistent},
	{"gaussian violation by the GDP bound only", "gaussian", 0.9014, 1.077, 1, Violation},
	{"gaussian violation by both bounds", "gaussian", 5.34, 21.62, 1, Violation},
	{"bound equal to the claim is consistent", "gaussian", 1, 0.8, 1, Consistent},
	{"bound a hair above the claim", "gaussian", 1.0000004, 0.2, 1, Violation},
	{"gdp a hair above the claim", "gaussian", 0.5, 1.0000004, 1, Violation},
	{"laplace consistent", "laplace", 0.8303, 0, 1, Consistent},
	{"laplace violation", "laplace", 1.25, 0, 1, Violation},
	{"null game", "gaussian", 0, 0, 1, Consistent},
}

// handReport builds a two-score report from a case, the way Game.Analyze assembles one: the
// headline bounds are the maxima over the scores; the verdict comes from the numbers.
func handReport(c wordsCase) *GameReport {
	// fdp: the score the f-DP statistic was computed for (one of the two, as Game.Analyze does)
	res := func(cp, gdp, mu float64, fdp bool) *Result {
		r := &Result{EpsilonClaimed: c.eps, Delta: 0.01, Mechanism: c.mechanism, EpsilonLBCP: cp, Confidence: 0.975}
		if c.mechanism == "gaussian" {
			r.EpsilonLBGDP, r.MuGDP, r.MuClaimed = gdp, mu, 0.533
			if fdp {
				r.EpsilonLBFDP, r.MuFDP, r.FDPConfidence = gdp, mu, 0.975
				r.FDP = []FDPBound{{Mu: mu, BoundedOn: boundedOnBounding}}
			}
			r.GDP = &Bound{Mu: mu}
		} else {
			r.Delta = 0
		}
		r.Verdict = verdictOf(r.Checks())
		return r
	}
	r := &GameReport{Scenario: c.name, Kind: "cloud-control", Engine: EngineFast, Seed: 1, Trials: 5000, Steps: 100,
		EpsilonClaimed: c.eps, Delta: 0.01, Mechanism: c.mechanism, Noise: "structured",
		AdjacencyCalibrated: "manifold", AdjacencyAudited: "manifold", Confidence: 0.95,
		Pair:   Pair{Source: PairWorst, X0: []float64{0, 0}, X0Prime: []float64{1, 0}},
		Theory: &Theory{MuPair: 0.533, EpsilonPair: 1},
		Scores: []ScoreResult{
			{Name: ScoreProjection, Result: res(c.cp/2, c.gdp/2, 0.2, false)},
			{Name: ScoreLLR, Result: res(c.cp, c.gdp, 0.4754, true)},
		},
		EpsilonLBCP: c.cp, EpsilonLBGDP: c.gdp, EpsilonLBFDP: c.gdp, Score: ScoreLLR,
	}
	if c.mechanism == "gaussian" {
		r.MuGDP, r.MuClaimed = 0.4754, 0.533
	} else {
		r.Delta = 0
	}
	r.Verdict = r.verdict()
	return r
}

// checkVerdictWords holds the verdict words of text (a report.md or a printed table) to the
// numbers of r: every comparison it states has an operator that holds between its printed
// numbers, a result word that follows from that operator, numbers that are r's, and the
// verdict is violation exactly when some comparison is. Returns the comparisons found.
func checkVerdictWords(t *testing.T, text string, r *GameReport, want string) int {
	t.Helper()
	m := verdictSentence.FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, m, "no verdict comparison stated in:\n%s", text)
	bounds := map[string]float64{"eps_lb_cp": r.EpsilonLBCP, "eps_lb_gdp": r.EpsilonLBGDP, "eps_lb_fdp": r.EpsilonLBFDP}
	seen := map[string]bool{}
	anyViolation := false
	for _, s := range m {
		name, op, word := s[1], s[3], s[5]
		v, err := strconv.ParseFloat(s[2], 64)
		require.NoError(t, err, s[0])
		th, err := strconv.ParseFloat(s[4], 64)
		require.NoError(t, err, s[0])
		require.InEpsilon(t, r.EpsilonClaimed, th, 1e-6, "%q: the threshold is the claimed eps", s[0])
		if bounds[name] == 0 {
			require.Zero(t, v, s[0])
		} else {
			require.InEpsilon(t, bounds[name], v, 1e-3, "%q: the value is the report's %s", s[0], name)
		}
		switch op {
		case ">":
			require.Greater(t, v, th, "%q: the printed numbers contradict the operator", s[0])
			require.Equal(t, Violation, word, s[0])
			require.Greater(t, bounds[name], r.EpsilonClaimed, s[0])
			anyViolation = true
		case "<=":
			require.LessOrEqual(t, v, th, "%q: the printed numbers contradict the operator", s[0])
			require.Equal(t, Consistent, word, s[0])
			require.LessOrEqual(t, bounds[name], r.EpsilonClaimed, s[0])
		}
		seen[name] = true
	}
	require.True(t, seen["eps_lb_cp"], "the Clopper-Pearson comparison is stated")
	if r.Mechanism == "gaussian" {
		require.True(t, seen["eps_lb_gdp"], "the Gaussian-DP comparison is stated")
		require.True(t, seen["eps_lb_fdp"], "the f-DP comparison is stated")
	} else {
		require.False(t, seen["eps_lb_gdp"], "a pure-eps audit has no Gaussian-DP bound to compare")
		require.False(t, seen["eps_lb_fdp"], "a pure-eps audit has no f-DP bound to compare")
	}
	require.Equal(t, want == Violation, anyViolation, "the verdict follows from the comparisons")
	return len(m)
}

// The report's verdict words say what its numbers test: each bound, the operator, the claimed
// eps, the confidence, and the verdict word that follows from them.
func TestMarkdownVerdictWords(t *testing.T) {
	for _, c := range wordsCases {
		t.Run(c.name, func(t *testing.T) {
			r := handReport(c)
			require.Equal(t, c.wantVerdict, r.Verdict)
			md := r.Markdown("tradeoff.png")
			require.Contains(t, md, "**Verdict: "+c.wantVerdict+"**")
			checkVerdictWords(t, md, r, c.wantVerdict)
			// The level of the bounds is stated with them, and what each bound is.
			require.Contains(t, md, "probability >= 0.95")
			require.Contains(t, md, "Clopper-Pearson lower bound on eps")
			if c.mechanism == "gaussian" {
				require.Contains(t, md, "only if the mechanism's trade-off curve is Gaussian (mu-GDP)")
				// The claim's mu and the fitted mu are named apart (the plot labels both).
				require.Contains(t, md, "mu_claimed = 0.533")
				require.Contains(t, md, "mu_gdp = 0.4754")
				require.Contains(t, md, "mu_pair = 0.533")
				require.NotContains(t, md, "allows mu =")
			} else {
				// A bound that is not computed is not printed as 0.
				require.Contains(t, md, "| n/a |")
			}
			if c.wantVerdict == Violation && c.cp <= c.eps {
				require.Contains(t, md, "rests on the Gaussian-DP bounds alone (eps_lb_gdp and eps_lb_fdp)")
			}
			// Each score's verdict word is its own numbers' comparison, at its stated level.
			require.Contains(t, md, "verdict (this score alone, at the joint level of its own bounds)")
			for _, s := range r.Scores {
				want := Consistent
				if s.Result.EpsilonLBCP > c.eps || s.Result.EpsilonLBGDP > c.eps || s.Result.EpsilonLBFDP > c.eps {
					want = Violation
				}
				require.Regexp(t, `\n\| `+s.Name+` \|[^\n]*\| `+want+` at 0.975 \|\n`, md)
				if c.mechanism == "gaussian" && s.Result.FDP == nil {
					// the f-DP statistic chose the other score: not a 0
					require.Regexp(t, `\n\| `+s.Name+` \|[^\n]*\| n/a \(another score chosen\) \|`, md)
				}
			}
		})
	}
}

// VerdictLine is the printed verdict: the same comparisons as report.md.
func TestVerdictLineWords(t *testing.T) {
	for _, c := range wordsCases {
		t.Run(c.name, func(t *testing.T) {
			r := handReport(c)
			line := r.VerdictLine()
			require.True(t, strings.HasPrefix(line, strings.ToUpper(c.wantVerdict)+":"), line)
			checkVerdictWords(t, line, r, c.wantVerdict)
			require.Contains(t, line, "joint confidence 0.95")
		})
	}
}

// The rule decides: a flipped operator or a wrong word in the table fails here.
func TestBoundChecksDecide(t *testing.T) {
	for _, c := range []struct {
		v, eps float64
		want   bool
	}{{0.5, 1, false}, {1, 1, false}, {1.0000001, 1, true}, {3, 1, true}, {0, 0.5, false}} {
		ch := (&Result{EpsilonLBCP: c.v, EpsilonClaimed: c.eps, Confidence: 0.95, Mechanism: "laplace"}).Checks()
		require.Len(t, ch, 1)
		require.Equal(t, c.want, ch[0].Violated, "%v vs %v", c.v, c.eps)
		cmp := ch[0].Comparison()
		m := verdictSentence.FindStringSubmatch(cmp)
		require.NotNil(t, m, cmp)
		require.Equal(t, c.want, m[3] == ">", cmp)
		if c.v != c.eps {
			require.NotEqual(t, m[2], m[4], "distinct numbers print distinctly: %s", cmp)
		}
	}
}

// The theory row is the calibrated mechanism's, one release of the noise: a scenario whose
// crash redraws the noise (a second release) says that the figure does not count it; one
// whose crash resumes the checkpoint's draw has nothing to add.
func TestRedrawNoteScopesTheory(t *testing.T) {
	for _, c := range []struct {
		scenario string
		want     bool
	}{{"faults-agent-crash-redraw", true}, {"faults-agent-crash", false}, {"audit-consensus-gaussian", false}} {
		g, err := NewGame(loadPlan(t, c.scenario), GameOptions{})
		require.NoError(t, err, c.scenario)
		found := false
		for _, n := range g.Notes {
			if strings.Contains(n, "noise: redraw") {
				found = true
				require.Contains(t, n, "agent.0 crashes at step 10 of every episode and restarts at step 15")
				require.Contains(t, n, "does not count it")
			}
		}
		require.Equal(t, c.want, found, c.scenario)
	}
}
