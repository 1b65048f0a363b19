package scenario

import (
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxSweepPoints bounds the number of scenarios a sweep expands to.
const MaxSweepPoints = 10_000

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// document is the top level of a scenario file while it is decoded: the scenario and what the
// later sections and the rules between sections need.
type document struct {
	s      *Scenario
	f      *fields
	source string
	kindOK bool // s.Kind is usable
	pr     *rawPrivacy
	sweeps []rawSweep
}

// topTable is the top level, in the documented order. faults and audit have no set: they
// are decoded after the rules between the sections they depend on (decodeScenario).
var topTable = []field[document]{
	{key: "name", set: setScenarioName, absent: nameFromSource},
	{key: "description", set: to(text, func(t *document) *string { return &t.s.Description })},
	{key: "kind", need: "want " + joinNames(Kinds), set: setKind},
	{key: "steps", need: "the horizon T, an integer >= 1",
		set: to(intRange(1, MaxSteps, " (the horizon T)"), func(t *document) *int { return &t.s.Steps })},
	{key: "episodes", was: "runs", need: "the number of Monte Carlo episodes, an integer >= 1",
		set: to(intRange(1, MaxRuns, " (Monte Carlo episodes)"), func(t *document) *int { return &t.s.Runs })},
	{key: "seed", set: to(unsigned, func(t *document) *uint64 { return &t.s.Seed })},
	{key: "plant", set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
		t.s.Plant = d.plant(n)
		return true
	}},
	{key: "controller", set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
		t.s.Controller = d.controller(n, t.s.Plant, t.s.Steps)
		return true
	}},
	{key: "graph", set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
		t.s.Network = d.graph(n)
		return true
	}},
	{key: "x0", set: setConsensusX0},
	{key: "privacy", need: "give privacy: {epsilon, delta, ...} (mechanism, noise and calibration have defaults)",
		set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
			t.pr = d.privacy(n, t.s.Plant)
			return true
		}},
	{key: "sweep", set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
		t.sweeps = d.sweeps(n)
		return true
	}},
	{key: "transport", set: func(d *decoder, t *document, n *yaml.Node, _ string) bool {
		t.s.Transport = d.transport(n)
		return true
	}},
	{key: "faults"},
	{key: "audit"},
}

func setScenarioName(d *decoder, t *document, n *yaml.Node, path string) bool {
	v, ok := d.str(n, path)
	if !ok {
		return false
	}
	if !nameRE.MatchString(v) || len(v) > 100 {
		d.add(n, path, "%q is not a valid name (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters)", v)
	}
	t.s.Name = v
	return true
}

// nameFromSource names a scenario without a name field after its file.
func nameFromSource(d *decoder, t *document, f *fields) bool {
	base := strings.TrimSuffix(filepath.Base(t.source), filepath.Ext(t.source))
	t.s.Name = base
	if t.source == "" || !nameRE.MatchString(base) {
		d.missing(f, "name", "give the scenario a name (letters, digits, '.', '_' and '-')")
		return false
	}
	return true
}

func setKind(d *decoder, t *document, n *yaml.Node, path string) bool {
	k, ok := parsed(ParseKind)(d, n, path)
	if ok {
		t.s.Kind, t.kindOK = k, true
	}
	return ok
}

// setConsensusX0 decodes the agents' initial states: one per node of the graph.
func setConsensusX0(d *decoder, t *document, n *yaml.Node, path string) bool {
	v, ok := d.vector(n, path)
	if !ok {
		return false
	}
	t.s.X0 = v
	if g := t.s.Network; g != nil && g.N > 0 && len(v) != g.N {
		d.add(n, path, "%d entries, but the graph has %d nodes: give one initial value per node", len(v), g.N)
	}
	return true
}

// kindPresence checks the sections the scenario's kind requires and forbids.
func (d *decoder) kindPresence(t *document) {
	rules, _ := t.s.Kind.Info()
	for _, r := range rules.Requires {
		if !t.f.has(r[0]) {
			d.missing(t.f, r[0], r[1])
		}
	}
	for _, r := range rules.Forbids {
		if n := t.f.get(r[0]); n != nil {
			d.add(n, r[0], "%s", r[1])
		}
	}
	if t.s.Kind == Consensus && t.pr != nil && t.pr.modelNode != nil {
		d.add(t.pr.modelNode, "privacy.model", "only for kind cloud-control (a consensus agent's private model is the scalar x_i)")
	}
}

// auditDim is the length of the audit pair's states and what it is.
func (t *document) auditDim() (int, string) {
	s := t.s
	switch {
	case t.kindOK && s.Kind == CloudControl && s.Plant != nil:
		return s.Plant.Nx(), "the plant's initial state: plant.A is " + s.Plant.A.dims()
	case t.kindOK && s.Kind == Consensus && s.Network != nil && s.Network.N > 0:
		return s.Network.N, "one initial value per node of the graph"
	}
	return 0, "the initial state the challenger sets"
}

// decodeScenario decodes a scenario file: the sections in the order of topTable, then the
// rules between sections (kind, privacy and sweeps, faults and sweeps).
func decodeScenario(data []byte, source string, d *decoder) *Scenario {
	root := parseDocument(data, d)
	if root == nil {
		return nil
	}
	f := d.mappingRenamed(root, "", oldNamesOf(topTable), keysOf(topTable)...)
	if f == nil {
		return nil
	}
	t := &document{s: &Scenario{Transport: TransportSpec{Mode: Lockstep}}, f: f, source: source}
	walk(d, f, t, topTable)
	s := t.s
	if t.kindOK {
		d.kindPresence(t)
	}
	if n := f.get("audit"); n != nil {
		dim, what := t.auditDim()
		s.Audit = d.audit(n, dim, what)
	}
	if t.pr != nil {
		s.Privacy = d.checkPrivacy(t.pr, t.sweeps)
		if k := s.Privacy.Episodes; k > 0 && s.Runs > k {
			d.warn("privacy.episodes is %d but episodes (top level) is %d: the run releases the secret %d times, more than the whole-run budget privacy.run_epsilon covers (the report states what %d episodes give)", k, s.Runs, s.Runs, s.Runs)
		}
	}
	s.Faults = defaultFaults()
	if n := f.get("faults"); n != nil {
		graphN := 0
		if s.Network != nil {
			graphN = s.Network.N
		}
		s.Faults = d.faults(n, s.Kind, s.Steps, graphN)
	}
	d.checkFaultSweeps(s.Faults, s.Kind, t.sweeps)
	for _, sw := range t.sweeps {
		s.Sweeps = append(s.Sweeps, sw.Sweep)
	}
	s.Warnings = append(s.Warnings, d.warnings...)
	return s
}
