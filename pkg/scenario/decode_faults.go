package scenario

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

var (
	faultsFields      = []string{"missing", "links", "crashes", "partitions", "server_restarts", "proxies"}
	linkFields        = []string{"name", "from", "to", "subject", "unit", "delay", "random_delay", "jitter", "drop", "duplicate", "reorder", "window", "active"}
	randomDelayFields = []string{"dist", "min", "max", "mean", "sd", "mu", "sigma"}
	distParams        = map[DelayDist][]string{
		DistUniform: {"min", "max"}, DistExponential: {"mean"}, DistNormal: {"mean", "sd"}, DistLognormal: {"mu", "sigma"},
	}
	subjectTokenRE = regexp.MustCompile(`^([A-Za-z0-9_-]+|\*|>)$`)
)

// defaultFaults is the faults section of a scenario that has none.
func defaultFaults() FaultsSpec {
	return FaultsSpec{Missing: MissingSpec{Plant: PlantHold, Agent: AgentReuseLast}}
}

// faultsDoc is the faults section while it is decoded: kind and steps (0 when unknown) say
// what the rules may name; graphN is the consensus graph's size (0 when unknown); the maps
// find repeated names, crashes and proxies.
type faultsDoc struct {
	out          *FaultsSpec
	kind         Kind
	steps        int
	graphN       int
	crashed      map[string]string // proc/episode -> the crash's path
	partitionsAt map[string]string // name -> path
	proxiesAt    map[string]string // proc -> path
	linksAt      map[string]string // name -> path
}

// faultsTable is the faults section in the order it is decoded (the file lists the keys as
// faultsFields); the process faults are in decode_faults_process.go.
var faultsTable = []field[faultsDoc]{
	{key: "missing", set: func(d *decoder, t *faultsDoc, n *yaml.Node, path string) bool {
		_, ok := section(d, n, path, t, missingTable)
		return ok
	}},
	{key: "crashes", set: listOf((*decoder).crash)},
	{key: "partitions", set: listOf((*decoder).partition)},
	{key: "server_restarts", set: listOf((*decoder).serverRestart)},
	{key: "proxies", set: listOf((*decoder).proxy)},
	{key: "links", set: func(d *decoder, t *faultsDoc, n *yaml.Node, path string) bool {
		if n.Kind != yaml.SequenceNode {
			d.add(n, path, "want a list of link rules, got %s", describe(n))
			return false
		}
		for k, c := range n.Content {
			d.link(c, index(path, k), k, t)
		}
		return true
	}},
}

// listOf decodes a list whose items item decodes.
func listOf(item func(d *decoder, c *yaml.Node, path string, k int, t *faultsDoc)) func(*decoder, *faultsDoc, *yaml.Node, string) bool {
	return func(d *decoder, t *faultsDoc, n *yaml.Node, path string) bool {
		d.list(n, path, func(c *yaml.Node, path string, k int) { item(d, c, path, k, t) })
		return true
	}
}

// faults decodes the faults section (faultsTable).
func (d *decoder) faults(n *yaml.Node, kind Kind, steps, graphN int) FaultsSpec {
	out := defaultFaults()
	t := &faultsDoc{out: &out, kind: kind, steps: steps, graphN: graphN,
		crashed: map[string]string{}, partitionsAt: map[string]string{}, proxiesAt: map[string]string{}, linksAt: map[string]string{}}
	section(d, n, "faults", t, faultsTable, faultsFields...)
	return out
}

// missingTable is faults.missing: {plant, agent}, each for one kind.
var missingTable = []field[faultsDoc]{
	{key: "plant", set: missingRule("plant", namesOf(PlantMissingRules), func(t *faultsDoc, v string) {
		t.out.Missing.Plant = PlantMissing(v)
	})},
	{key: "agent", set: missingRule("agent", namesOf(AgentMissingRules), func(t *faultsDoc, v string) {
		t.out.Missing.Agent = AgentMissing(v)
	})},
}

// missingRule decodes faults.missing.<key>: one of rules, in a scenario of the kind whose
// Missing is key (an error in one of another kind).
func missingRule(key string, rules []string, store func(*faultsDoc, string)) func(*decoder, *faultsDoc, *yaml.Node, string) bool {
	own, _ := kindOfMissing(key)
	return func(d *decoder, t *faultsDoc, n *yaml.Node, path string) bool {
		v, ok := d.str(n, path)
		switch {
		case !ok:
		case !contains(rules, v):
			d.add(n, path, "unknown rule %q (allowed: %s)", v, strings.Join(rules, ", "))
		case t.kind.known() && t.kind != own.Kind:
			d.add(n, path, "only for kind %s (this scenario is %s)", own.Kind, t.kind)
		default:
			store(t, v)
			return true
		}
		return false
	}
}

// endpoint checks an endpoint pattern: *, <role>.*, or <role>.<id>.
func (d *decoder) endpoint(n *yaml.Node, path string, kind Kind, publisher bool, graphN int) (string, bool) {
	v, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if v == "*" {
		return v, true
	}
	roles := kindRoles(kind, publisher) // the roles a link endpoint may name
	role, id, found := strings.Cut(v, ".")
	if !found || role == "" || id == "" {
		d.add(n, path, "%q is not an endpoint (want *, <role>.* or <role>.<id> with role %s)", v, strings.Join(roles, ", "))
		return "", false
	}
	if !contains(roles, role) {
		why := ""
		switch {
		case role == "eavesdropper" && publisher:
			why = ": the eavesdropper only listens, it publishes nothing"
		case contains(kindRoles("", false), role): // a role of another kind
			why = " in a " + string(kind) + " scenario"
		}
		d.add(n, path, "%q: role %q is not allowed%s (allowed: %s)", v, role, why, strings.Join(roles, ", "))
		return "", false
	}
	if id == "*" {
		return v, true
	}
	k, err := strconv.Atoi(id)
	r, _ := endpoint.ParseRole(role) // one of roles
	switch {
	case err != nil || k < 0:
		d.add(n, path, "%q: id %q is not a non-negative integer or *", v, id)
		return "", false
	case !r.Many() && k != 0:
		d.add(n, path, "%q: a run has one %s, id 0", v, role)
		return "", false
	case r == endpoint.Agent && graphN > 0 && k >= graphN:
		d.add(n, path, "%q: the graph has %d nodes (agents 0..%d)", v, graphN, graphN-1)
		return "", false
	}
	return v, true
}

// probability decodes a number in [0, 1].
func (d *decoder) probability(n *yaml.Node, path string) (float64, bool) {
	v, ok := d.float(n, path)
	if !ok {
		return 0, false
	}
	if v < 0 || v > 1 {
		d.add(n, path, "%s is not a probability (want 0 <= p <= 1)", n.Value)
		return 0, false
	}
	return v, true
}

// nonNegative decodes a number >= 0.
func (d *decoder) nonNegative(n *yaml.Node, path string) (float64, bool) {
	v, ok := d.float(n, path)
	if !ok {
		return 0, false
	}
	if v < 0 {
		d.add(n, path, "%s must be >= 0", n.Value)
		return 0, false
	}
	return v, true
}

// linkDoc is one rule of faults.links while it is decoded.
type linkDoc struct {
	*faultsDoc
	l LinkFault
	f *fields
}

// linkTable is a rule of faults.links in the order it is decoded (the file lists the keys
// as linkFields).
var linkTable = []field[linkDoc]{
	{key: "name", set: func(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
		v, ok := d.str(n, path)
		if ok && nameRE.MatchString(v) && len(v) <= 100 {
			t.l.Name = v
			return true
		}
		if ok {
			d.add(n, path, "%q is not a valid name (letters, digits, '.', '_' and '-')", v)
		}
		return false
	}},
	{key: "from", set: func(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
		return t.setEndpoint(d, &t.l.From, n, path, true)
	}},
	{key: "to", set: func(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
		return t.setEndpoint(d, &t.l.To, n, path, false)
	}},
	{key: "subject", set: setSubject},
	{key: "unit", set: to(oneOf("unit", UnitSteps, UnitMS), func(t *linkDoc) *DelayUnit { return &t.l.Unit })},
	{key: "delay", set: to(nonNegative, func(t *linkDoc) *float64 { return &t.l.Delay })},
	{key: "jitter", set: to(nonNegative, func(t *linkDoc) *float64 { return &t.l.Jitter })},
	{key: "drop", set: to(probability, func(t *linkDoc) *float64 { return &t.l.Drop })},
	{key: "duplicate", set: to(probability, func(t *linkDoc) *float64 { return &t.l.Duplicate })},
	{key: "reorder", set: to(probability, func(t *linkDoc) *float64 { return &t.l.Reorder })},
	{key: "random_delay", set: to((*decoder).randomDelay, func(t *linkDoc) **RandomDelay { return &t.l.RandomDelay })},
	{key: "window", set: func(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
		w, ok := d.window(n, path, t.steps)
		t.l.Window = w
		return ok
	}},
	{key: "active", set: func(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
		lt, ok := d.lifetime(n, path, t.steps)
		if ok {
			t.l.Active = lt
		}
		return ok
	}},
}

func (t *linkDoc) setEndpoint(d *decoder, into *string, n *yaml.Node, path string, publisher bool) bool {
	v, ok := d.endpoint(n, path, t.kind, publisher, t.graphN)
	if ok {
		*into = v
	}
	return ok
}

// setSubject decodes a NATS subject pattern below dpsim.<run>. (instead of from).
func setSubject(d *decoder, t *linkDoc, n *yaml.Node, path string) bool {
	v, ok := d.str(n, path)
	if !ok {
		return false
	}
	toks := strings.Split(v, ".")
	bad := ""
	for i, tok := range toks {
		switch {
		case !subjectTokenRE.MatchString(tok):
			bad = "token " + strconv.Quote(tok) + " is not a name, * or >"
		case tok == ">" && i != len(toks)-1:
			bad = "> may only be the last token"
		}
		if bad != "" {
			break
		}
	}
	switch {
	case bad != "":
		d.add(n, path, "%q: %s (want e.g. agent.*.y or plant.0.yhat, below dpsim.<run>.)", v, bad)
		return false
	case t.f.has("from"):
		d.add(n, path, "give either subject or from, not both (both name the publisher)")
		return false
	}
	t.l.Subject, t.l.From = v, "*"
	return true
}

// link decodes rule k of faults.links and adds it unless its name repeats another's.
func (d *decoder) link(c *yaml.Node, path string, k int, fd *faultsDoc) {
	t := &linkDoc{faultsDoc: fd, l: LinkFault{Name: "link" + strconv.Itoa(k), From: "*", To: "*", Unit: UnitSteps}}
	if t.f = d.mapping(resolve(c), path, linkFields...); t.f == nil || !walk(d, t.f, t, linkTable) {
		return
	}
	l := t.l
	if l.Unit == UnitMS {
		d.warn("%s (%s): a delay in ms acts on the NATS path in realtime mode only; the fast engine and lockstep runs count steps", path, l.Name)
	}
	if first, dup := fd.linksAt[l.Name]; dup {
		d.add(c, path+".name", "%q is already the name of %s", l.Name, first)
		return
	}
	fd.linksAt[l.Name] = path
	fd.out.Links = append(fd.out.Links, l)
}

func (d *decoder) randomDelay(n *yaml.Node, path string) (*RandomDelay, bool) {
	f := d.mapping(n, path, randomDelayFields...)
	if f == nil {
		return nil, false
	}
	dn := f.get("dist")
	if dn == nil {
		d.missing(f, "dist", "the distribution: "+joinNames(DelayDists))
		return nil, false
	}
	v, ok := d.str(dn, f.sub("dist"))
	if !ok {
		return nil, false
	}
	rd := &RandomDelay{Dist: DelayDist(v)}
	params, known := distParams[rd.Dist]
	if !known {
		d.add(dn, f.sub("dist"), "unknown distribution %q (allowed: %s)", v, joinNames(DelayDists))
		return nil, false
	}
	if !d.distParams(f, rd, params) || !d.checkDist(n, path, f, rd) {
		return nil, false
	}
	return rd, true
}

// distParams decodes the parameters of rd's distribution (params), refusing the others.
func (d *decoder) distParams(f *fields, rd *RandomDelay, params []string) bool {
	good := true
	for _, key := range randomDelayFields[1:] {
		vn := f.get(key)
		if vn == nil {
			if contains(params, key) {
				d.missing(f, key, "distribution "+string(rd.Dist)+" needs "+strings.Join(params, " and "))
				good = false
			}
			continue
		}
		if !contains(params, key) {
			d.add(vn, f.sub(key), "not a parameter of distribution %s (it takes %s)", rd.Dist, strings.Join(params, ", "))
			good = false
			continue
		}
		x, ok := d.float(vn, f.sub(key))
		if !ok {
			good = false
			continue
		}
		*rd.param(key) = x
	}
	return good
}

// param is the field of a distribution parameter.
func (rd *RandomDelay) param(key string) *float64 {
	return map[string]*float64{"min": &rd.Min, "max": &rd.Max, "mean": &rd.Mean, "sd": &rd.SD, "mu": &rd.Mu, "sigma": &rd.Sigma}[key]
}

// checkDist checks the ranges of a distribution's parameters.
func (d *decoder) checkDist(n *yaml.Node, path string, f *fields, rd *RandomDelay) bool {
	switch rd.Dist {
	case DistUniform:
		if rd.Min < 0 || rd.Max < rd.Min {
			d.add(n, path, "uniform needs 0 <= min <= max, got min %v, max %v", rd.Min, rd.Max)
			return false
		}
	case DistExponential:
		if rd.Mean <= 0 {
			d.add(f.get("mean"), f.sub("mean"), "%v must be > 0", rd.Mean)
			return false
		}
	case DistNormal:
		if rd.Mean < 0 || rd.SD <= 0 {
			d.add(n, path, "normal needs mean >= 0 and sd > 0, got mean %v, sd %v", rd.Mean, rd.SD)
			return false
		}
	case DistLognormal:
		if rd.Sigma <= 0 {
			d.add(f.get("sigma"), f.sub("sigma"), "%v must be > 0", rd.Sigma)
			return false
		}
	}
	return true
}

// window decodes [from, to] or {from, to}: the steps from..to-1.
func (d *decoder) window(n *yaml.Node, path string, steps int) (*StepWindow, bool) {
	var fromN, toN *yaml.Node
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) != 2 {
			d.add(n, path, "want [from, to] (two steps: the window is from..to-1), got %d values", len(n.Content))
			return nil, false
		}
		fromN, toN = resolve(n.Content[0]), resolve(n.Content[1])
	case yaml.MappingNode:
		f := d.mapping(n, path, "from", "to")
		if f == nil {
			return nil, false
		}
		fromN, toN = f.get("from"), f.get("to")
		if fromN == nil || toN == nil {
			d.add(n, path, "want {from, to}")
			return nil, false
		}
	default:
		d.add(n, path, "want [from, to] or {from, to}, got %s", describe(n))
		return nil, false
	}
	hi := int64(MaxSteps)
	if steps > 0 {
		hi = int64(steps)
	}
	from, ok1 := d.intIn(fromN, path+".from", 0, hi, " (a step)")
	to, ok2 := d.intIn(toN, path+".to", 0, hi, " (the window ends before step to; at most steps)")
	if !ok1 || !ok2 {
		return nil, false
	}
	if from >= to {
		d.add(n, path, "from %d must be below to %d (the window is from..to-1)", from, to)
		return nil, false
	}
	return &StepWindow{From: from, To: to}, true
}

// checkFaultSweeps checks the swept fault parameters against the faults section: numeric
// values in their field's range, a rule to apply them to, names of a rule for the kind.
func (d *decoder) checkFaultSweeps(fs FaultsSpec, kind Kind, sweeps []rawSweep) {
	for _, sw := range sweeps {
		if !isFaultParam(sw.Param) {
			continue
		}
		if key, ok := strings.CutPrefix(string(sw.Param), "faults.missing."); ok {
			if own, ok := kindOfMissing(key); ok && kind.known() && kind != own.Kind {
				d.add(sw.values[0], sw.path+".param", "%s is only for kind %s", sw.Param, own.Kind)
			}
			continue
		}
		if len(fs.Links) == 0 {
			d.add(sw.values[0], sw.path+".param", "sweeping %s needs at least one rule in faults.links (the value is set on every rule)", sw.Param)
			continue
		}
		for i, v := range sw.Numbers {
			p := index(sw.path+".values", i)
			switch sw.Param {
			case SweepFaultDrop, SweepFaultDuplicate, SweepFaultReorder:
				if v < 0 || v > 1 {
					d.add(sw.values[i], p, "%v is not a probability (want 0 <= p <= 1)", v)
				}
			default:
				if v < 0 {
					d.add(sw.values[i], p, "%v must be >= 0", v)
				}
			}
		}
	}
}

// applyFaults sets value i of a fault sweep: on every rule of faults.links, or on
// faults.missing. The values were checked by Parse.
func (s Sweep) applyFaults(f *FaultsSpec, i int) {
	for k := range f.Links {
		l := &f.Links[k]
		switch s.Param {
		case SweepFaultDelay:
			l.Delay = s.Numbers[i]
		case SweepFaultJitter:
			l.Jitter = s.Numbers[i]
		case SweepFaultDrop:
			l.Drop = s.Numbers[i]
		case SweepFaultDuplicate:
			l.Duplicate = s.Numbers[i]
		case SweepFaultReorder:
			l.Reorder = s.Numbers[i]
		}
	}
	switch s.Param {
	case SweepMissingPlant:
		f.Missing.Plant = PlantMissing(s.Names[i])
	case SweepMissingAgent:
		f.Missing.Agent = AgentMissing(s.Names[i])
	}
}
