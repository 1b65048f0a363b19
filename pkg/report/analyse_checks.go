package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// Thresholds of the computed checks. Each is printed where it is used (rules below): a reader
// never meets a tolerance the report does not state.
const (
	// VelocityTol is the bound on the velocity error at T that dpsim states (printed for
	// comparison, never a check: the theory does not promise it).
	VelocityTol = 1e-6
	// VanishFactor: a mean-square error counts as vanished at T when it is at most VanishFactor
	// times its peak over the run.
	VanishFactor = 1e-4
	// SumTol bounds the relative deviation of the network sum (floating-point rounding).
	SumTol = 1e-9
	// FlatRatio: the eavesdropper's error counts as not shrinking when late/early >= FlatRatio,
	// and as shrinking when late/early < FlatRatio.
	FlatRatio = 0.5
	// GrowthRatio: a mean-square error counts as not growing when its mean over the last
	// quarter of the horizon is at most GrowthRatio times its mean over the third quarter.
	GrowthRatio = 1.5
	// OffsetZ is the normal quantile of the two-sided 99.9% interval the position-offset
	// check uses (mean +- 3.29 standard errors).
	OffsetZ = 3.29
	// OffsetLevel is the confidence level of that interval.
	OffsetLevel = 0.999
	// LMITol is the relative tolerance of the LMI (12) check (times the largest diagonal
	// entry of Sigma): the SDP solver's rounding.
	LMITol = 1e-9
	// LaplaceTol is the relative rounding tolerance of the Laplace calibration check.
	LaplaceTol = 1e-12
)

// cmp is the comparison operator of a check: the check passes when "value cmp threshold".
type cmp string

const (
	opLE cmp = "<="
	opLT cmp = "<"
	opGE cmp = ">="
	opEQ cmp = "="
)

// holds evaluates "v c t".
func (c cmp) holds(v, t float64) bool {
	switch c {
	case opLE:
		return v <= t
	case opLT:
		return v < t
	case opGE:
		return v >= t
	case opEQ:
		return v == t
	}
	panic("report: unknown comparison " + string(c))
}

// rule is one kind of computed check: the one place its name, its claim, the quantity it
// compares, the operator, what the threshold is and the confidence level of any interval
// come from. Both the PASS/FAIL decision (rule.check) and every sentence about the check (the
// check's text, the sweep summaries) are rendered from it, so words and numbers cannot diverge.
type rule struct {
	name     string
	claim    string // what the theory predicts, in words
	quantity string // the number compared ("{x}" stands for a state component's name)
	op       cmp
	bound    string  // what the threshold is, in words
	fixed    string  // the threshold when it is a constant, printed ("" when it varies per point)
	level    float64 // confidence level of the interval the quantity is a limit of (0: none)
}

// rules are every computed check of the report, by name.
var rules = map[string]rule{
	"calibration": {name: "calibration", op: opLE,
		claim:    "the Gaussian noise gives (eps, delta)-DP (Theorem 1, eq. 7)",
		quantity: "kappa_eps(mu Delta / sigma)", bound: "delta"},
	"calibration-laplace": {name: "calibration-laplace", op: opLE,
		claim:    "the Laplace noise gives eps-DP (Theorem 2, eq. 14)",
		quantity: "mu Delta_L / b", bound: fmt.Sprintf("eps, with a relative rounding tolerance of %s", num(LaplaceTol))},
	"calibration-lmi": {name: "calibration-lmi", op: opLE,
		claim:    "the optimal Sigma satisfies every LMI (12) Sigma >= c N N^T",
		quantity: "max LMI (12) violation", bound: fmt.Sprintf("%s x the largest diagonal entry of Sigma: the solver's rounding tolerance", num(LMITol))},
	"velocity-vanishes": {name: "velocity-vanishes", op: opLE,
		claim:    "the velocity error vanishes (a constant offset on p, or no noise, leaves v unbiased)",
		quantity: "E[(v(T) - v_r(T))^2]", bound: fmt.Sprintf("%s x its peak over the run", num(VanishFactor))},
	"position-offset": {name: "position-offset", op: opLE, level: OffsetLevel,
		claim:    "the final position MSE is the offset variance Var(gamma) (p(T) - p_r(T) -> -gamma for a constant offset)",
		quantity: "|E[(p(T) - p_r(T))^2] - Var(gamma)|", bound: fmt.Sprintf("%s standard errors, the half-width of the %s interval", num(OffsetZ), pct(OffsetLevel))},
	"position-bounded": {name: "position-bounded", op: opLE,
		claim:    "the {x} error does not grow in mean square",
		quantity: "(mean of E[({x} - {x}_r)^2] over the last quarter) / (mean over the third quarter)", bound: "the growth tolerance dpsim states", fixed: num(GrowthRatio)},
	"eve-no-shrink": {name: "eve-no-shrink", op: opGE,
		claim:    "the eavesdropper's error does not shrink (structured noise lives in the signal's subspace, so more releases reveal nothing more)",
		quantity: "ratio late/early of E||x0hat(t) - x(0)||^2", bound: "the threshold dpsim states for a shrinking error", fixed: num(FlatRatio)},
	"eve-shrinks": {name: "eve-shrinks", op: opLT,
		claim:    "the eavesdropper's error shrinks (the leak: i.i.d. noise calibrated for one release leaks more with every step)",
		quantity: "ratio late/early of E||x0hat(t) - x(0)||^2", bound: "the threshold dpsim states for a shrinking error", fixed: num(FlatRatio)},
	"prop1-bound": {name: "prop1-bound", op: opLT, level: 0.95,
		claim:    "the final E||x(T) - 1x*||^2 is below the Proposition 1 bound (the sum of the agents' noise variances)",
		quantity: "upper 95% limit of the final E||x(T) - 1x*||^2", bound: "the Proposition 1 bound"},
	"mean-deviation": {name: "mean-deviation", op: opLE, level: 0.95,
		claim:    "E[x_i(T) - x*] -> 0 (Proposition 1)",
		quantity: "max over the agents of the lower limit of |E[x_i(T) - x*]| (simultaneous 95% intervals, Bonferroni)", bound: "the envelope alpha^T ||x(0) - 1x*||"},
	"sum-preserved": {name: "sum-preserved", op: opLE,
		claim:    "the network sum is preserved in every run (eq. 25)",
		quantity: "max relative deviation |sum x(t) - sum x(0)| / scale", bound: "the floating-point rounding tolerance dpsim states", fixed: num(SumTol)},
	"structured-beats-iid": {name: "structured-beats-iid", op: opLT,
		claim:    "structured noise gives a lower {x} than iid-calibrated at every swept value",
		quantity: "largest ratio structured / iid-calibrated of the {x}", fixed: "1"},
	"link-accounting": {name: "link-accounting", op: opEQ,
		claim:    "every link's messages add up (delivered = sent - dropped + duplicated - expired - lost)",
		quantity: "links whose counters do not add up", fixed: "0"},
}

// ruleOf returns the rule of a check name (a programming error when there is none).
func ruleOf(name string) rule {
	ru, ok := rules[name]
	if !ok {
		panic("report: no rule for check " + name)
	}
	return ru
}

// pct prints a confidence level as a percentage ("95%", "99.9%").
func pct(level float64) string { return numP(100*level, 4) + "%" }

// fill substitutes the subject of a rule's words ({x}: a state component or a metric).
func fill(s, x string) string { return strings.ReplaceAll(s, "{x}", x) }

// comparison renders "QUANTITY = V, required OP T (BOUND)" with the numbers printed so that
// distinct values never look equal.
func (ru rule) comparison(subject string, value, threshold float64) string {
	vs, ts := numPair(value, threshold, ru.op)
	s := fmt.Sprintf("%s = %s, required %s %s", fill(ru.quantity, subject), vs, ru.op, ts)
	if ru.bound != "" && ru.bound != ts {
		s += " (" + fill(ru.bound, subject) + ")"
	}
	return s
}

// summary is the rule's generic sentence for sweep summaries: the claim and its comparison
// without numbers.
func (ru rule) summary(subject string) string {
	th := fill(ru.bound, subject)
	switch {
	case ru.fixed != "" && th != "":
		th = ru.fixed + " (" + th + ")"
	case ru.fixed != "":
		th = ru.fixed
	}
	return fmt.Sprintf("%s [%s %s %s]", fill(ru.claim, subject), fill(ru.quantity, subject), ru.op, th)
}

// measured is one evaluation of a rule: the value compared, the threshold, the subject of the
// words and any numbers that give context (printed after the comparison).
type measured struct {
	subject   string
	value     float64
	threshold float64
	detail    string
	// interval, when value is the upper limit of this confidence interval of an estimate: a
	// value that misses the threshold fails only when the other limit misses it too; an
	// interval that straddles it leaves the check inconclusive at this number of runs.
	interval *metrics.Stat
}

// check decides and words one check from its rule: the decision is "value op threshold" and
// the text states exactly that comparison.
func (ru rule) check(m measured) Check {
	text := fill(ru.claim, m.subject) + ": " + ru.comparison(m.subject, m.value, m.threshold)
	if m.detail != "" {
		text += "; " + m.detail
	}
	c := Check{Name: ru.name, Pass: ru.op.holds(m.value, m.threshold), Text: text, subject: m.subject,
		Quantity: fill(ru.quantity, m.subject), Value: m.value, Op: string(ru.op), Threshold: m.threshold, Level: ru.level}
	if iv := m.interval; !c.Pass && iv != nil && ru.op.holds(iv.Lo, m.threshold) {
		c.Inconclusive, c.NeedsRuns = true, runsToDecide(*iv, m.threshold)
	}
	return c
}

// runsToDecide estimates the runs that would put a confidence interval of the estimate iv
// wholly on one side of threshold: its half-width shrinks as 1/sqrt(runs), and it must fall
// below the distance of the mean from the threshold (0 when the mean is on the threshold, or
// the estimate exceeds 10^9 runs).
func runsToDecide(iv metrics.Stat, threshold float64) int {
	gap, half := math.Abs(iv.Mean-threshold), (iv.Hi-iv.Lo)/2
	if gap == 0 || half <= 0 || iv.N <= 0 {
		return 0
	}
	n := float64(iv.N) * (half / gap) * (half / gap)
	if n > 1e9 {
		return 0
	}
	return int(math.Ceil(n))
}

// numPair prints two numbers with 3 significant digits, or with more (up to 17) when the
// comparison of the printed numbers would not decide as that of the numbers themselves: a
// failing "0.01 <= 0.01" would read as a contradiction.
func numPair(a, b float64, op cmp) (string, string) {
	want := op.holds(a, b)
	for p := 3; p < 17; p++ {
		x, y := numP(a, p), numP(b, p)
		px, err1 := strconv.ParseFloat(x, 64)
		py, err2 := strconv.ParseFloat(y, 64)
		if err1 == nil && err2 == nil && op.holds(px, py) == want {
			return x, y
		}
	}
	return numP(a, 17), numP(b, 17)
}

// addRule evaluates rule name for point p (nil: a statement about the whole run) and records
// the check.
func (r *analysis) addRule(p *pointInfo, name string, m measured) {
	c := ruleOf(name).check(m)
	if p != nil && r.sweep {
		c.Point = p.label
	}
	r.checks = append(r.checks, c)
}
