package privacy

import (
	"fmt"
	"math"
	"slices"
)

// This file states a whole run's guarantee as a privacy accountant's event (docs/math.md section
// 9.1), so that a second tool can compose it and compare with the eps_run dpsim states:
//
//   - Google's dp_accounting describes a mechanism as a tree of DpEvent classes (module
//     dp_accounting.dp_event). DpEvent.to_named_tuple() serialises a node as its module_name and
//     class_name followed by the class's attrs fields, nested events in the same form; that is the
//     JSON written here, and DpEvent.from_named_tuple (or the few lines of docs/math.md 9.1) reads it
//     back. GaussianDpEvent(noise_multiplier) is sigma over the L2 sensitivity, composed by the
//     accountants with sensitivity 1, so a mu-GDP episode is noise_multiplier = 1/mu;
//     LaplaceDpEvent(noise_multiplier) is b over the L1 sensitivity, an eps0-DP episode
//     noise_multiplier = 1/eps0; SelfComposedDpEvent(event, count) is count adaptive repetitions;
//     RandomizedResponseDpEvent(noise_parameter, num_buckets) outputs its input with probability
//     1 - p, else a uniform bucket.
//   - Microsoft's prv_accountant takes privacy random variables: GaussianMechanism(noise_multiplier)
//     (mu = 1/noise_multiplier), LaplaceMechanism(mu) (a unit-scale Laplace shifted by mu, i.e.
//     eps0 = mu) and PureDPMechanism(eps) (randomized response, the worst eps-DP mechanism), each
//     composed num_self_compositions times.
//
// The curve is dpsim's own eps(delta) of the run at a few deltas, by the formulas of section 9.

// DpEventVersion is the version of the dp_event record; it changes when a key changes meaning.
const DpEventVersion = 1

// dpEventModule is the Python module dp_accounting's event classes are declared in, their
// module_name in to_named_tuple().
const dpEventModule = "dp_accounting.dp_event"

// DpEvent is one node of a dp_accounting event tree in the form of DpEvent.to_named_tuple(): the
// class's module and name, then its fields (only those of ClassName are set).
type DpEvent struct {
	ModuleName string `json:"module_name"`
	ClassName  string `json:"class_name"`
	// GaussianDpEvent, LaplaceDpEvent: noise over sensitivity (L2 and L1).
	NoiseMultiplier *float64 `json:"noise_multiplier,omitempty"`
	// RandomizedResponseDpEvent: the probability p of a uniform output, and the buckets.
	NoiseParameter *float64 `json:"noise_parameter,omitempty"`
	NumBuckets     *int     `json:"num_buckets,omitempty"`
	// SelfComposedDpEvent: the event repeated Count times.
	Event *DpEvent `json:"event,omitempty"`
	Count *int     `json:"count,omitempty"`
}

// PRVMechanism is a prv_accountant privacy random variable and how often it is composed:
// PRVAccountant(prvs=[Class(**Args)], max_self_compositions=[n]).compute_epsilon(delta,
// num_self_compositions=[n]).
type PRVMechanism struct {
	Class               string             `json:"class"`
	Args                map[string]float64 `json:"args"`
	NumSelfCompositions int                `json:"num_self_compositions"`
}

// DpEventRecord is a run's guarantee as accountants' events (docs/math.md section 9.1).
type DpEventRecord struct {
	Version int    `json:"version"`
	Format  string `json:"format"`
	// Event is the mechanism the run applies: k episodes of one Gaussian or Laplace release.
	Event DpEvent `json:"event"`
	// NeighboringRelation is the accountant's relation to construct with; for these events both
	// accountants read noise_multiplier against sensitivity 1, one adjacent pair of dpsim.
	NeighboringRelation string `json:"neighboring_relation"`
	// Exact: the composition of Event is the eps(delta) dpsim states (Gaussian). For Laplace dpsim
	// states the optimal composition of pure eps0-DP (kov-optimal), an upper bound on Event's;
	// BoundEvent is the k-fold randomized response whose composition it is exactly.
	Exact                    bool     `json:"exact"`
	BoundEvent               *DpEvent `json:"bound_event,omitempty"`
	BoundNeighboringRelation string   `json:"bound_neighboring_relation,omitempty"`
	// PRV is Event for prv_accountant; PRVBound is BoundEvent.
	PRV      PRVMechanism  `json:"prv_accountant"`
	PRVBound *PRVMechanism `json:"prv_accountant_bound,omitempty"`
	Note     string        `json:"note"`
}

// EpsDelta is one point of a run's privacy curve: the run is (Epsilon, Delta)-DP.
type EpsDelta struct {
	Delta   float64 `json:"delta"`
	Epsilon float64 `json:"epsilon"`
}

// CurveDeltas are the deltas of the curve, besides the run's own delta.
var CurveDeltas = []float64{1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10}

func leaf(class string, noiseMultiplier float64) DpEvent {
	return DpEvent{ModuleName: dpEventModule, ClassName: class, NoiseMultiplier: &noiseMultiplier}
}

func selfComposed(e DpEvent, k int) DpEvent {
	return DpEvent{ModuleName: dpEventModule, ClassName: "SelfComposedDpEvent", Event: &e, Count: &k}
}

// NewDpEvent returns the guarantee of k episodes as accountants' events (docs/math.md section 9.1)
// and the eps(delta) curve dpsim's formulas give it at CurveDeltas and the run's delta. perEpisode is
// the exact per-episode quantity of the noise injected. Gaussian: mu_episode-GDP,
// GaussianDpEvent(1/mu_episode) self-composed k times, exact; the curve solves
// kappa(eps, sqrt(k) mu_episode) = delta ([GaussianRunEpsilon]). Laplace: eps0 = mu Delta_L / b,
// LaplaceDpEvent(1/eps0) k times, with the bound the curve is: k-fold randomized response with
// p = 2/(1+e^eps0) (two buckets: the input with probability 1 - p/2, a ratio of e^eps0), by
// [LaplaceRunEpsilon].
func NewDpEvent(m Mechanism, perEpisode float64, k int, deltaRun float64) (*DpEventRecord, []EpsDelta, error) {
	if err := checkEpisodes(k); err != nil {
		return nil, nil, fmt.Errorf("dp_event: %w", err)
	}
	if !(perEpisode > 0) || math.IsInf(perEpisode, 0) {
		return nil, nil, fmt.Errorf("dp_event: per-episode %s = %v: must be finite and > 0", map[Mechanism]string{Gaussian: "mu", Laplace: "eps"}[m], perEpisode)
	}
	r := &DpEventRecord{Version: DpEventVersion, NeighboringRelation: "ADD_OR_REMOVE_ONE",
		Format: "dp_accounting DpEvent.to_named_tuple() as JSON: module_name, class_name, then the class's fields; nested events alike"}
	var eps func(delta float64) (float64, error)
	switch m {
	case Gaussian:
		nm := 1 / perEpisode
		r.Event, r.Exact = selfComposed(leaf("GaussianDpEvent", nm), k), true
		r.PRV = PRVMechanism{Class: "GaussianMechanism", Args: map[string]float64{"noise_multiplier": nm}, NumSelfCompositions: k}
		r.Note = "exact: one episode is mu_episode-GDP with mu_episode = 1/noise_multiplier (for a full Sigma, in its whitened coordinates); count of them are sqrt(count)/noise_multiplier-GDP, whose eps(delta) dpsim states"
		eps = func(d float64) (float64, error) {
			_, e, err := GaussianRunEpsilon(perEpisode, k, d)
			return e, err
		}
	case Laplace:
		eps0 := perEpisode
		r.Event = selfComposed(leaf("LaplaceDpEvent", 1/eps0), k)
		p, two := 2/(1+math.Exp(eps0)), 2
		rr := DpEvent{ModuleName: dpEventModule, ClassName: "RandomizedResponseDpEvent", NoiseParameter: &p, NumBuckets: &two}
		b := selfComposed(rr, k)
		r.BoundEvent, r.BoundNeighboringRelation = &b, "REPLACE_ONE"
		r.PRV = PRVMechanism{Class: "LaplaceMechanism", Args: map[string]float64{"mu": eps0}, NumSelfCompositions: k}
		r.PRVBound = &PRVMechanism{Class: "PureDPMechanism", Args: map[string]float64{"eps": eps0}, NumSelfCompositions: k}
		r.Note = "event: one episode is a Laplace release with eps0 = 1/noise_multiplier; dpsim states the optimal composition of count pure eps0-DP mechanisms (kov-optimal), which is exactly the composition of bound_event (and prv_accountant_bound) and at least that of event"
		eps = func(d float64) (float64, error) { return LaplaceRunEpsilon(eps0, k, d) }
	default:
		return nil, nil, fmt.Errorf("dp_event: mechanism %q: no accountant event", m)
	}
	curve, err := epsCurve(eps, deltaRun)
	if err != nil {
		return nil, nil, fmt.Errorf("dp_event: %w", err)
	}
	return r, curve, nil
}

// setDpEvent attaches the accountants' event and curve of g to it ([NewDpEvent]), or why not.
func (g *RunGuarantee) setDpEvent(perEpisode float64) {
	ev, curve, err := NewDpEvent(g.Mechanism, perEpisode, g.Episodes, g.DeltaRun)
	if err != nil {
		g.DpEventError = err.Error()
		return
	}
	g.DpEvent, g.DpEventCurve = ev, curve
}

// epsCurve evaluates eps at CurveDeltas and at the run's delta, largest delta first.
func epsCurve(eps func(float64) (float64, error), deltaRun float64) ([]EpsDelta, error) {
	deltas := slices.Clone(CurveDeltas)
	if !slices.Contains(deltas, deltaRun) {
		deltas = append(deltas, deltaRun)
	}
	slices.SortFunc(deltas, func(a, b float64) int { return -cmpFloat(a, b) })
	out := make([]EpsDelta, 0, len(deltas))
	for _, d := range deltas {
		e, err := eps(d)
		if err != nil {
			return nil, fmt.Errorf("eps at delta = %v: %w", d, err)
		}
		out = append(out, EpsDelta{Delta: d, Epsilon: e})
	}
	return out, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
