package scenario

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

var (
	privacyFields = []string{"mechanism", "epsilon", "delta", "mu", "adjacency", "noise", "calibration", "sampler", "model", "episodes", "run_epsilon"}
	modelFields   = []string{"A", "C"}
)

// rawPrivacy is the privacy section as written: presence matters for defaults, for the
// mechanism-dependent rules and for sweeps.
type rawPrivacy struct {
	spec      PrivacySpec
	f         *fields
	set       map[string]bool // fields given in the file with a usable value
	bad       map[string]bool // fields given with an unusable value (already reported)
	modelNode *yaml.Node
	plant     *PlantSpec // nil when missing or invalid
}

// privacyTable is the privacy section in the order it is decoded (the file lists the keys
// as privacyFields). The rules between its fields are privacyRules (privacy.go); a value
// is stored even when unusable, as those rules skip the fields marked bad.
var privacyTable = []field[rawPrivacy]{
	marked("mechanism", func(d *decoder, r *rawPrivacy, n *yaml.Node, path string) bool {
		v, ok := d.str(n, path)
		if !ok {
			return false
		}
		m, err := privacy.ParseMechanism(v)
		r.spec.Mechanism = m
		if err != nil {
			d.add(n, path, "%v", err)
			return false
		}
		return true
	}),
	marked("epsilon", always(number, func(r *rawPrivacy) *float64 { return &r.spec.Epsilon })),
	marked("delta", always(number, func(r *rawPrivacy) *float64 { return &r.spec.Delta })),
	marked("mu", always(number, func(r *rawPrivacy) *float64 { return &r.spec.Mu })),
	marked("run_epsilon", always(number, func(r *rawPrivacy) *float64 { return &r.spec.RunEpsilon })),
	marked("episodes", always(intRange(1, privacy.MaxEpisodes, " (the episodes of one secret that privacy.run_epsilon covers)"),
		func(r *rawPrivacy) *int { return &r.spec.Episodes })),
	marked("adjacency", named("adjacency")),
	marked("noise", named("noise")),
	marked("calibration", named("calibration")),
	marked("sampler", named("sampler")),
	{key: "model", set: func(d *decoder, r *rawPrivacy, n *yaml.Node, _ string) bool {
		r.modelNode = n
		r.spec.Model = d.model(n, r.plant)
		return true
	}},
}

// marked is a privacy field whose usability the privacy rules need: set or bad.
func marked(key string, set func(*decoder, *rawPrivacy, *yaml.Node, string) bool) field[rawPrivacy] {
	return field[rawPrivacy]{key: key, set: func(d *decoder, r *rawPrivacy, n *yaml.Node, path string) bool {
		ok := set(d, r, n, path)
		if ok {
			r.set[key] = true
		} else {
			r.bad[key] = true
		}
		return ok
	}}
}

// named is a named privacy parameter (setName).
func named(key string) func(*decoder, *rawPrivacy, *yaml.Node, string) bool {
	return func(d *decoder, r *rawPrivacy, n *yaml.Node, path string) bool {
		v, ok := d.str(n, path)
		if !ok {
			return false
		}
		if err := setName(&r.spec, key, v); err != nil {
			d.add(n, path, "%v", err)
			return false
		}
		return true
	}
}

func (d *decoder) privacy(n *yaml.Node, p *PlantSpec) *rawPrivacy {
	r := &rawPrivacy{set: map[string]bool{}, bad: map[string]bool{}, plant: p}
	r.spec = PrivacySpec{Mechanism: privacy.Gaussian, Mu: 1, Adjacency: privacy.Manifold, Noise: noise.Structured, Calibration: privacy.Tight, Sampler: noise.SamplerSecure}
	f, _ := section(d, n, "privacy", r, privacyTable, privacyFields...)
	if f == nil {
		return nil
	}
	r.f = f
	return r
}

// setName parses and sets a named privacy parameter (adjacency, noise, calibration, sampler).
func setName(p *PrivacySpec, key, v string) error {
	switch key {
	case "adjacency":
		a, err := privacy.ParseAdjacency(v)
		p.Adjacency = a
		return err
	case "noise":
		k, err := noise.ParseKind(v)
		p.Noise = k
		return err
	case "calibration":
		c, err := privacy.ParseCalibration(v)
		p.Calibration = c
		return err
	case "sampler":
		s, err := noise.ParseSampler(v)
		p.Sampler = s
		return err
	}
	return fmt.Errorf("unknown parameter %q", key)
}

// modelTable is the private subsystem {A, C}; its C must have one row per plant output
// (the noise gamma(t) = C_m A_m^t sqrt(Sigma) eta is added to the plant's output).
var modelTable = []field[modelDoc]{
	{key: "A", need: "the private subsystem's state matrix (e.g. 1 for the vehicle's position)",
		set: func(d *decoder, t *modelDoc, n *yaml.Node, path string) bool {
			a, ok := d.matrix(n, path, flatNone)
			if !ok {
				return false
			}
			t.m.A = a
			if a.Rows() != a.Cols() {
				d.add(n, path, "is %s, must be square", a.dims())
				return false
			}
			t.aOK = true
			return true
		}},
	{key: "C", need: "the private subsystem's output matrix, one row per plant output",
		set: func(d *decoder, t *modelDoc, n *yaml.Node, path string) bool {
			c, ok := d.matrix(n, path, flatRow)
			if !ok {
				return false
			}
			t.m.C = c
			if t.aOK && c.Cols() != t.m.A.Rows() {
				d.add(n, path, "%d columns, privacy.model.A is %s", c.Cols(), t.m.A.dims())
				ok = false
			}
			if p := t.plant; p != nil && c.Rows() != p.Ny() {
				d.add(n, path, "%d rows, plant.C is %s: the model needs one row per plant output (its noise is added to the outputs)", c.Rows(), p.C.dims())
				ok = false
			}
			return ok
		}},
}

// modelDoc is the private subsystem while it is decoded.
type modelDoc struct {
	m     *ModelSpec
	plant *PlantSpec
	aOK   bool
}

// model decodes privacy.model: {A, C}; nil when unusable.
func (d *decoder) model(n *yaml.Node, p *PlantSpec) *ModelSpec {
	t := &modelDoc{m: &ModelSpec{}, plant: p}
	if f, good := section(d, n, "privacy.model", t, modelTable); f == nil || !good {
		return nil
	}
	return t.m
}
