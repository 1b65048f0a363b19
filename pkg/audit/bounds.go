package audit

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// LowerBound is one lower bound on eps the audit computes and the verdict compares with the
// claim: one row of Bounds. Everything that lists the bounds - the verdict (Checks), the words
// of every sentence about them, report.md's tables, dpsim audit's table, the headline of a
// GameReport (the maxima over the scores), the composition figure, the live view's series and
// metrics - iterates Bounds instead of naming cp, gdp and fdp one by one, so a new statistic is
// a new row (plus its fields in Result and GameReport, whose JSON keys the row names and
// bounds_test.go checks).
type LowerBound struct {
	// ID is the short name: the live view's metric label ("cp").
	ID string
	// Name is the bound's name as the reports print it and the live state's key ("eps_lb_cp").
	Name string
	// JSONKey is its key in audit.json (Result and GameReport: "epsilon_lb_cp"), MuKey the key
	// of the mu behind it ("mu_gdp"; "" when it has none).
	JSONKey, MuKey string
	// Gaussian: computed only for a Gaussian mechanism, and a lower bound on eps only if the
	// mechanism's trade-off curve is Gaussian (mu-GDP); a pure-eps audit has no such bound.
	Gaussian bool
	// SingleThreshold: computed from one chosen threshold's error rates (the single-threshold
	// bounds, at Result.singleThresholdLevel), not from the f-DP statistic's folds (fdp.go).
	// Such a bound's test is chosen on the selection trials by crit (one test per row, in the
	// table's order), and on the bounding trials the bounded test with the largest crit value
	// gives it: set writes best (that value; -Inf when none) and its test (nil when none) to r.
	SingleThreshold bool
	crit            criterion
	set             func(r *Result, best float64, test *Bound, delta float64) error
	// Label is its short name in the trade-off figure's title ("CP").
	Label string
	// Composition is its legend in the composition figure, "" when the figure does not plot it.
	Composition string

	what     string // what the number is
	validity string // when it is a lower bound on eps
	// of returns the bound's fields in r: the eps, and the mu behind it (nil when none).
	of func(r *Result) (eps, mu *float64)
	// ofReport returns the headline's fields in a report: the maxima over the scores.
	ofReport func(r *GameReport) (eps, mu *float64)
	// setup is the bound's row of report.md's setup table, after its value: "(...)".
	setup func(r *GameReport) string
	// columns are its columns in report.md's table of scores.
	columns []scoreColumn
	// note is its note in a Result's Notes, st the level of the single-threshold bounds and
	// scores the number of scores analysed together; "" when r has no such bound.
	note func(r *Result, st float64, scores int) string
	// line is its part of dpsim audit's line of a score, g printing numbers.
	line func(res *Result, g func(float64) string) string
}

// scoreColumn is a column of report.md's table of scores: its header and a score's cell.
type scoreColumn struct {
	header string
	cell   func(res *Result) string
}

// When the bounds are lower bounds on eps: the assumption-free ones, and those that assume a
// Gaussian trade-off curve.
const (
	validityAny      = "for any mechanism"
	validityGaussian = "only if the mechanism's trade-off curve is Gaussian (mu-GDP)"
)

// Bounds is the table of the audit's lower bounds on eps, in the order the reports print them
// (docs/math.md section 6). The one list of them: see LowerBound.
var Bounds = []LowerBound{
	{
		ID: "cp", Name: "eps_lb_cp", JSONKey: "epsilon_lb_cp", SingleThreshold: true, Label: "CP",
		Composition: "eps_lb_cp (Clopper-Pearson, any mechanism)",
		what:        "the Clopper-Pearson lower bound on eps, max(ln((1-delta-FNR_up)/FPR_up), ln((1-delta-FPR_up)/FNR_up)) over the bounded tests",
		validity:    validityAny,
		crit:        critCP,
		set: func(r *Result, best float64, test *Bound, _ float64) error {
			if test != nil {
				r.CP = *test
			}
			r.EpsilonLBCP = math.Max(0, best)
			return nil
		},
		of:       func(r *Result) (*float64, *float64) { return &r.EpsilonLBCP, nil },
		ofReport: func(r *GameReport) (*float64, *float64) { return &r.EpsilonLBCP, nil },
		setup: func(r *GameReport) string {
			return "Clopper-Pearson, " + validityAny
		},
		note: func(r *Result, st float64, _ int) string {
			return fmt.Sprintf("eps_lb_cp (epsilon_lb_cp in audit.json) = max ln((1-delta-FNR_up)/FPR_up), ln((1-delta-FPR_up)/FNR_up), clamped at 0: a lower bound on eps with probability >= %.6g, %s",
				st, validityAny)
		},
		columns: []scoreColumn{{"eps_lb_cp", func(res *Result) string { return fmtG(res.EpsilonLBCP) }}},
		line:    func(res *Result, g func(float64) string) string { return "eps_lb_cp " + g(res.EpsilonLBCP) },
	},
	{
		ID: "gdp", Name: "eps_lb_gdp", JSONKey: "epsilon_lb_gdp", MuKey: "mu_gdp", Gaussian: true, SingleThreshold: true, Label: "GDP",
		Composition: "eps_lb_gdp (Gaussian-DP fit)",
		what:        "the Gaussian-DP lower bound on eps, the eps with kappa(eps, mu_gdp) = delta for the mu_gdp fitted to the trials",
		validity:    validityGaussian,
		crit:        critGDP,
		set: func(r *Result, best float64, test *Bound, delta float64) error {
			r.GDP = test
			r.MuGDP = math.Max(0, best)
			eps, err := privacy.EpsilonForGDP(r.MuGDP, delta)
			if err != nil {
				return fmt.Errorf("audit: gaussian-DP bound: %w", err)
			}
			r.EpsilonLBGDP = eps
			return nil
		},
		of:       func(r *Result) (*float64, *float64) { return &r.EpsilonLBGDP, &r.MuGDP },
		ofReport: func(r *GameReport) (*float64, *float64) { return &r.EpsilonLBGDP, &r.MuGDP },
		setup: func(r *GameReport) string {
			return fmt.Sprintf("Gaussian-DP fit: mu_gdp = %s fitted to the trials, against mu_claimed = %s; %s", fmtG(r.MuGDP), fmtG(r.MuClaimed), validityGaussian)
		},
		note: func(r *Result, st float64, _ int) string {
			if r.GDP == nil {
				return ""
			}
			return fmt.Sprintf("eps_lb_gdp (epsilon_lb_gdp) solves kappa(eps, mu_gdp) = delta with mu_gdp = PhiInv(1-FPR_up) - PhiInv(FNR_up) fitted to the trials: a lower bound on eps with probability >= %.6g %s",
				st, validityGaussian)
		},
		columns: []scoreColumn{
			{"eps_lb_gdp", func(res *Result) string { return fmtG(res.EpsilonLBGDP) }},
			{"mu_gdp (fitted)", func(res *Result) string { return fmtG(res.MuGDP) }},
		},
		line: func(res *Result, g func(float64) string) string {
			return fmt.Sprintf("eps_lb_gdp %s (mu_gdp %s, fitted to the trials)", g(res.EpsilonLBGDP), g(res.MuGDP))
		},
	},
	{
		ID: "fdp", Name: "eps_lb_fdp", JSONKey: "epsilon_lb_fdp", MuKey: "mu_fdp", Gaussian: true, Label: "f-DP",
		what:     "the f-DP lower bound on eps, the eps with kappa(eps, mu_fdp) = delta for the largest mu_fdp whose mu-GDP trade-off curve a joint confidence region of both error rates of the chosen test contradicts",
		validity: validityGaussian,
		of:       func(r *Result) (*float64, *float64) { return &r.EpsilonLBFDP, &r.MuFDP },
		ofReport: func(r *GameReport) (*float64, *float64) { return &r.EpsilonLBFDP, &r.MuFDP },
		setup: func(r *GameReport) string {
			return fmt.Sprintf("f-DP statistic: mu_fdp = %s, the largest mu-GDP curve a joint confidence region of both error rates contradicts; %s", fmtG(r.MuFDP), validityGaussian)
		},
		note: func(r *Result, _ float64, scores int) string {
			if r.GDP == nil || r.FDP == nil { // the f-DP statistic goes with the Gaussian-DP fit
				return ""
			}
			return fdpNote(r, scores)
		},
		columns: []scoreColumn{{"eps_lb_fdp", func(res *Result) string {
			if res.FDP == nil {
				return "n/a (another score chosen)"
			}
			return fmtG(res.EpsilonLBFDP)
		}}},
		line: func(res *Result, g func(float64) string) string {
			if res.FDP == nil {
				return "eps_lb_fdp n/a (the f-DP statistic chose another score on the selection trials)"
			}
			return fmt.Sprintf("eps_lb_fdp %s (mu_fdp %s)", g(res.EpsilonLBFDP), g(res.MuFDP))
		},
	},
}

// bound returns the row named name (a BoundCheck's Bound), and whether there is one.
func bound(name string) (LowerBound, bool) {
	for _, b := range Bounds {
		if b.Name == name {
			return b, true
		}
	}
	return LowerBound{}, false
}

// ValidFor reports whether the audit of a mechanism computes the bound (a pure-eps, Laplace,
// audit has no Gaussian-DP bound: it is absent, not 0).
func (b LowerBound) ValidFor(mechanism string) bool {
	return !b.Gaussian || mechanism == string(privacy.Gaussian)
}

// Of is the bound's value in a score's result.
func (b LowerBound) Of(r *Result) float64 {
	eps, _ := b.of(r)
	return *eps
}

// OfReport is the bound's headline value in a report (the largest over its scores).
func (b LowerBound) OfReport(r *GameReport) float64 {
	eps, _ := b.ofReport(r)
	return *eps
}

// Strongest is the largest of r's bounds (every row, valid or not: an absent bound is 0).
func (r *Result) Strongest() float64 {
	s := math.Inf(-1)
	for _, b := range Bounds {
		s = math.Max(s, b.Of(r))
	}
	return s
}

// Strongest is the largest of r's headline bounds (as Result.Strongest).
func (r *GameReport) Strongest() float64 {
	s := math.Inf(-1)
	for _, b := range Bounds {
		s = math.Max(s, b.OfReport(r))
	}
	return s
}

// raiseHeadline raises r's headline bounds, and the mu behind each, to res's where larger.
func (r *GameReport) raiseHeadline(res *Result) {
	for _, b := range Bounds {
		he, hm := b.ofReport(r)
		e, m := b.of(res)
		*he = math.Max(*he, *e)
		if hm != nil {
			*hm = math.Max(*hm, *m)
		}
	}
}

// checksOf returns the comparisons of a verdict: every bound the audit of mechanism computes
// (value(b) its value), against claimed, each at level.
func checksOf(value func(LowerBound) float64, claimed, level float64, mechanism string) []BoundCheck {
	var c []BoundCheck
	for _, b := range Bounds {
		if b.ValidFor(mechanism) {
			v := value(b)
			c = append(c, BoundCheck{Bound: b.Name, Value: v, Claimed: claimed, Level: level, Violated: exceeds(v, claimed)})
		}
	}
	return c
}

// ScoreLine is dpsim audit's line of a score's bounds: every bound its audit computes, printed
// with g, joined by ", ".
func (r *Result) ScoreLine(g func(float64) string) string {
	var parts []string
	for _, b := range Bounds {
		if b.ValidFor(r.Mechanism) {
			parts = append(parts, b.line(r, g))
		}
	}
	return strings.Join(parts, ", ")
}

// boundNames are the names of the rows keep selects, joined by sep.
func boundNames(keep func(LowerBound) bool, sep string) string {
	var n []string
	for _, b := range Bounds {
		if keep(b) {
			n = append(n, b.Name)
		}
	}
	return strings.Join(n, sep)
}
