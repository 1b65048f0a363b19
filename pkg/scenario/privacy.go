package scenario

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// privacyIssue is a broken privacy rule: the field it is reported on, the other fields
// it involves, and the message (which starts with the offending value where there is one).
type privacyIssue struct {
	field  string
	others []string
	msg    string
}

// privacyRules checks the rules between privacy parameters (Theorems 1 and 2, and the
// calibrations' ranges). set says which fields have a value (from the file or a sweep).
//
// With privacy.run_epsilon the budget is the whole run's (docs/math.md section 9): privacy.episodes
// says how many episodes it covers, privacy.delta is the run's delta, and on success p's Epsilon and
// Delta are set to the per-episode share (p.resolveRun).
func privacyRules(p *PrivacySpec, set map[string]bool) []privacyIssue {
	var out []privacyIssue
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	forRun := set["run_epsilon"]
	switch {
	case forRun && set["epsilon"]:
		out = append(out, privacyIssue{field: "run_epsilon", others: []string{"epsilon"},
			msg: "give either epsilon (the budget of one episode) or run_epsilon (the budget of the whole run of privacy.episodes episodes), not both"})
	case forRun && p.RunEpsilon <= 0:
		out = append(out, privacyIssue{field: "run_epsilon", msg: g(p.RunEpsilon) + " must be > 0"})
	case forRun:
	case !set["epsilon"]:
		out = append(out, privacyIssue{field: "epsilon", msg: "missing: the privacy budget, a number > 0 (or run_epsilon with episodes for a whole run)"})
	case p.Epsilon <= 0:
		out = append(out, privacyIssue{field: "epsilon", msg: g(p.Epsilon) + " must be > 0"})
	}
	if forRun && !set["episodes"] {
		out = append(out, privacyIssue{field: "run_epsilon", others: []string{"episodes"},
			msg: "needs privacy.episodes: the number of episodes of one secret the whole run's budget covers"})
	}
	if set["episodes"] && !forRun {
		out = append(out, privacyIssue{field: "episodes", others: []string{"run_epsilon"},
			msg: "needs privacy.run_epsilon, the budget of those episodes together (without it epsilon is per episode, and dpsim run states the whole run's guarantee for its runs)"})
	}
	delta := p.Delta
	if forRun {
		delta = p.RunDelta
	}
	if set["mu"] && p.Mu <= 0 {
		out = append(out, privacyIssue{field: "mu", msg: g(p.Mu) + " must be > 0 (the adjacency level)"})
	}
	switch p.Mechanism {
	case privacy.Gaussian:
		switch {
		case !set["delta"]:
			out = append(out, privacyIssue{field: "delta", others: []string{"mechanism"},
				msg: "missing: mechanism gaussian requires delta in (0, 1)"})
		case delta <= 0 || delta >= 1:
			out = append(out, privacyIssue{field: "delta", others: []string{"mechanism"},
				msg: g(delta) + " out of range: mechanism gaussian requires delta in (0, 1)"})
		}
	case privacy.Laplace:
		if forRun && set["delta"] && (delta < 0 || delta >= 1) {
			out = append(out, privacyIssue{field: "delta", others: []string{"run_epsilon"},
				msg: g(delta) + " out of range: with run_epsilon, delta is the whole run's and must lie in [0, 1)"})
		}
		if !forRun && set["delta"] && p.Delta != 0 {
			out = append(out, privacyIssue{field: "delta", others: []string{"mechanism"},
				msg: g(p.Delta) + " must be 0 or absent for mechanism laplace (pure epsilon-DP, Theorem 2)"})
		}
		if set["calibration"] {
			out = append(out, privacyIssue{field: "calibration", others: []string{"mechanism"},
				msg: string(p.Calibration) + " applies only to mechanism gaussian (laplace has one calibration, b = mu * Delta_L / eps)"})
		}
	}
	if forRun && len(out) == 0 {
		if err := p.resolveRun(); err != nil {
			out = append(out, privacyIssue{field: "run_epsilon", others: []string{"episodes", "delta"}, msg: g(p.RunEpsilon) + ": " + err.Error()})
		}
	}
	if p.Mechanism == privacy.Gaussian && p.Calibration == privacy.Classic && (set["epsilon"] || forRun) && p.Epsilon >= 1 {
		field, what := "epsilon", "epsilon is "+g(p.Epsilon)
		if forRun {
			field, what = "run_epsilon", fmt.Sprintf("the per-episode epsilon from run_epsilon = %s is %s", g(p.RunEpsilon), g(p.Epsilon))
		}
		out = append(out, privacyIssue{field: "calibration", others: []string{field},
			msg: fmt.Sprintf("classic is valid only for epsilon < 1, but %s (use tight or paper-bound)", what)})
	}
	return out
}

// checkPrivacy applies the privacy rules to the section as written and, with sweeps, at
// every point of the sweep; a problem caused by a swept value is reported on that value.
// It returns the base spec with defaults (swept fields keep their file value or default).
func (d *decoder) checkPrivacy(r *rawPrivacy, sweeps []rawSweep) PrivacySpec {
	base := r.spec
	if r.spec.Mechanism == privacy.Laplace && !r.set["delta"] {
		base.Delta = 0
	}
	if r.set["run_epsilon"] && r.set["episodes"] {
		base.RunDelta, base.Delta = base.Delta, 0 // delta is the whole run's; the episode's is derived
	} else {
		base.Episodes, base.RunEpsilon = 0, 0
	}
	if len(sweeps) == 0 {
		for _, is := range privacyRules(&base, r.set) {
			if !r.skip(is) {
				d.add(r.nodeOf(is.field), "privacy."+is.field, "%s", is.msg)
			}
		}
		return base
	}
	idx := make([]int, len(sweeps))
	total := 1
	for _, sw := range sweeps {
		total *= sw.Len()
	}
	for range total {
		d.checkPrivacyPoint(r, base, sweeps, idx)
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < sweeps[k].Len() {
				break
			}
			idx[k] = 0
		}
	}
	_ = base.resolveRun() // each point is resolved (and its failure reported) above; Expand resolves again
	return base
}

// skip says whether a rule involves a field whose value was unusable: that was reported
// already, so no rule is piled on it.
func (r *rawPrivacy) skip(is privacyIssue) bool {
	if r.bad[is.field] {
		return true
	}
	for _, o := range is.others {
		if r.bad[o] {
			return true
		}
	}
	return false
}

// checkPrivacyPoint applies the privacy rules at the sweep point idx; a problem caused by a
// swept value is reported on that value.
func (d *decoder) checkPrivacyPoint(r *rawPrivacy, base PrivacySpec, sweeps []rawSweep, idx []int) {
	p := base
	set := map[string]bool{}
	for k, v := range r.set {
		set[k] = v
	}
	swept := map[string]int{}
	for k, sw := range sweeps {
		sw.applyPrivacy(&p, idx[k])
		set[string(sw.Param)] = true
		swept[string(sw.Param)] = k
	}
	for _, is := range privacyRules(&p, set) {
		if r.skip(is) {
			continue
		}
		at := -1
		for _, fld := range append([]string{is.field}, is.others...) {
			if k, ok := swept[fld]; ok {
				at = k
				break
			}
		}
		if at < 0 {
			d.add(r.nodeOf(is.field), "privacy."+is.field, "%s", is.msg)
			continue
		}
		sw := sweeps[at]
		vn := sw.values[idx[at]]
		vp := index(sw.path+".values", idx[at])
		if string(sw.Param) == is.field {
			d.add(vn, vp, "%s %s", is.field, is.msg)
		} else {
			d.add(vn, vp, "with %s = %s: privacy.%s: %s", sw.Param, sw.Value(idx[at]), is.field, is.msg)
		}
	}
}

// nodeOf returns the node of a privacy field for its line, or the section's node.
func (r *rawPrivacy) nodeOf(field string) *yaml.Node {
	if n := r.f.get(field); n != nil {
		return n
	}
	return r.f.node
}
