package scenario

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	faultsFields  = []string{"missing", "links", "crashes", "partitions", "server_restarts", "proxies"}
	missingFields = []string{"plant", "agent"}
	linkFields    = []string{"name", "from", "to", "subject", "unit", "delay", "random_delay", "jitter", "drop", "duplicate", "reorder", "window", "active"}
	distParams    = map[DelayDist][]string{
		DistUniform: {"min", "max"}, DistExponential: {"mean"}, DistNormal: {"mean", "sd"}, DistLognormal: {"mu", "sigma"},
	}
	subjectTokenRE = regexp.MustCompile(`^([A-Za-z0-9_-]+|\*|>)$`)
)

// defaultFaults is the faults section of a scenario that has none.
func defaultFaults() FaultsSpec {
	return FaultsSpec{Missing: MissingSpec{Plant: PlantHold, Agent: AgentReuseLast}}
}

// faults decodes faults: {missing, links}. kind and steps (0 when unknown) check what the
// rules may name; graphN is the consensus graph's size (0 when unknown).
func (d *decoder) faults(n *yaml.Node, kind Kind, steps, graphN int) FaultsSpec {
	out := defaultFaults()
	f := d.mapping(n, "faults", faultsFields...)
	if f == nil {
		return out
	}
	if mn := f.get("missing"); mn != nil {
		if mf := d.mapping(mn, "faults.missing", missingFields...); mf != nil {
			if v, ok := d.missingRule(mf, "plant", namesOf(PlantMissingRules), kind, CloudControl, Consensus); ok {
				out.Missing.Plant = PlantMissing(v)
			}
			if v, ok := d.missingRule(mf, "agent", namesOf(AgentMissingRules), kind, Consensus, CloudControl); ok {
				out.Missing.Agent = AgentMissing(v)
			}
		}
	}
	d.processFaults(f, &out, kind, steps, graphN)
	ln := f.get("links")
	if ln == nil {
		return out
	}
	if ln.Kind != yaml.SequenceNode {
		d.add(ln, "faults.links", "want a list of link rules, got %s", describe(ln))
		return out
	}
	names := map[string]string{}
	for i, c := range ln.Content {
		path := index("faults.links", i)
		l, ok := d.linkFault(resolve(c), path, i, kind, steps, graphN)
		if !ok {
			continue
		}
		if first, dup := names[l.Name]; dup {
			d.add(c, path+".name", "%q is already the name of %s", l.Name, first)
			continue
		}
		names[l.Name] = path
		out.Links = append(out.Links, l)
	}
	return out
}

// missingRule decodes faults.missing.<role>: one of rules, in a scenario of kind own (an error
// in one of kind other).
func (d *decoder) missingRule(mf *fields, role string, rules []string, kind, own, other Kind) (string, bool) {
	n := mf.get(role)
	if n == nil {
		return "", false
	}
	path := "faults.missing." + role
	v, ok := d.str(n, path)
	switch {
	case !ok:
	case !contains(rules, v):
		d.add(n, path, "unknown rule %q (allowed: %s)", v, strings.Join(rules, ", "))
	case kind == other:
		d.add(n, path, "only for kind %s (this scenario is %s)", own, other)
	default:
		return v, true
	}
	return "", false
}

// endpointRoles are the roles a link endpoint may name, per kind.
func endpointRoles(kind Kind, publisher bool) []string {
	var roles []string
	switch kind {
	case CloudControl:
		roles = []string{"plant", "cloud"}
	case Consensus:
		roles = []string{"agent"}
	default:
		roles = []string{"plant", "cloud", "agent"}
	}
	if !publisher {
		roles = append(roles, "eavesdropper")
	}
	return roles
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
	roles := endpointRoles(kind, publisher)
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
		case contains([]string{"plant", "cloud", "agent", "eavesdropper"}, role):
			why = " in a " + string(kind) + " scenario"
		}
		d.add(n, path, "%q: role %q is not allowed%s (allowed: %s)", v, role, why, strings.Join(roles, ", "))
		return "", false
	}
	if id == "*" {
		return v, true
	}
	k, err := strconv.Atoi(id)
	switch {
	case err != nil || k < 0:
		d.add(n, path, "%q: id %q is not a non-negative integer or *", v, id)
		return "", false
	case role != "agent" && k != 0:
		d.add(n, path, "%q: a run has one %s, id 0", v, role)
		return "", false
	case role == "agent" && graphN > 0 && k >= graphN:
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

func (d *decoder) linkFault(n *yaml.Node, path string, k int, kind Kind, steps, graphN int) (LinkFault, bool) {
	l := LinkFault{Name: "link" + strconv.Itoa(k), From: "*", To: "*", Unit: UnitSteps}
	f := d.mapping(n, path, linkFields...)
	if f == nil {
		return l, false
	}
	good := true
	if nn := f.get("name"); nn != nil {
		if v, ok := d.str(nn, f.sub("name")); ok && nameRE.MatchString(v) && len(v) <= 100 {
			l.Name = v
		} else {
			if ok {
				d.add(nn, f.sub("name"), "%q is not a valid name (letters, digits, '.', '_' and '-')", v)
			}
			good = false
		}
	}
	if fn := f.get("from"); fn != nil {
		if v, ok := d.endpoint(fn, f.sub("from"), kind, true, graphN); ok {
			l.From = v
		} else {
			good = false
		}
	}
	if tn := f.get("to"); tn != nil {
		if v, ok := d.endpoint(tn, f.sub("to"), kind, false, graphN); ok {
			l.To = v
		} else {
			good = false
		}
	}
	if sn := f.get("subject"); sn != nil {
		if v, ok := d.str(sn, f.sub("subject")); ok {
			toks := strings.Split(v, ".")
			bad := ""
			for i, t := range toks {
				switch {
				case !subjectTokenRE.MatchString(t):
					bad = "token " + strconv.Quote(t) + " is not a name, * or >"
				case t == ">" && i != len(toks)-1:
					bad = "> may only be the last token"
				}
				if bad != "" {
					break
				}
			}
			switch {
			case bad != "":
				d.add(sn, f.sub("subject"), "%q: %s (want e.g. agent.*.y or plant.0.yhat, below dpsim.<run>.)", v, bad)
				good = false
			case f.has("from"):
				d.add(sn, f.sub("subject"), "give either subject or from, not both (both name the publisher)")
				good = false
			default:
				l.Subject, l.From = v, "*"
			}
		} else {
			good = false
		}
	}
	if un := f.get("unit"); un != nil {
		if v, ok := d.str(un, f.sub("unit")); ok {
			switch DelayUnit(v) {
			case UnitSteps, UnitMS:
				l.Unit = DelayUnit(v)
			default:
				d.add(un, f.sub("unit"), "unknown unit %q (allowed: steps, ms)", v)
				good = false
			}
		} else {
			good = false
		}
	}
	num := func(key string, p *float64, dec func(*yaml.Node, string) (float64, bool)) {
		if vn := f.get(key); vn != nil {
			if v, ok := dec(vn, f.sub(key)); ok {
				*p = v
			} else {
				good = false
			}
		}
	}
	num("delay", &l.Delay, d.nonNegative)
	num("jitter", &l.Jitter, d.nonNegative)
	num("drop", &l.Drop, d.probability)
	num("duplicate", &l.Duplicate, d.probability)
	num("reorder", &l.Reorder, d.probability)
	if rn := f.get("random_delay"); rn != nil {
		if rd, ok := d.randomDelay(rn, f.sub("random_delay")); ok {
			l.RandomDelay = rd
		} else {
			good = false
		}
	}
	if wn := f.get("window"); wn != nil {
		if w, ok := d.window(wn, f.sub("window"), steps); ok {
			l.Window = w
		} else {
			good = false
		}
	}
	if an := f.get("active"); an != nil {
		if lt, ok := d.lifetime(an, f.sub("active"), steps); ok {
			l.Active = lt
		} else {
			good = false
		}
	}
	if good && l.Unit == UnitMS {
		d.warn("%s (%s): a delay in ms acts on the NATS path in realtime mode only; the fast engine and lockstep runs count steps", path, l.Name)
	}
	return l, good
}

func (d *decoder) randomDelay(n *yaml.Node, path string) (*RandomDelay, bool) {
	allowed := []string{"dist", "min", "max", "mean", "sd", "mu", "sigma"}
	f := d.mapping(n, path, allowed...)
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
	dist := DelayDist(v)
	params, known := distParams[dist]
	if !known {
		d.add(dn, f.sub("dist"), "unknown distribution %q (allowed: %s)", v, joinNames(DelayDists))
		return nil, false
	}
	rd := &RandomDelay{Dist: dist}
	good := true
	for _, key := range allowed[1:] {
		vn := f.get(key)
		if vn == nil {
			if contains(params, key) {
				d.missing(f, key, "distribution "+v+" needs "+strings.Join(params, " and "))
				good = false
			}
			continue
		}
		if !contains(params, key) {
			d.add(vn, f.sub(key), "not a parameter of distribution %s (it takes %s)", v, strings.Join(params, ", "))
			good = false
			continue
		}
		x, ok := d.float(vn, f.sub(key))
		if !ok {
			good = false
			continue
		}
		switch key {
		case "min":
			rd.Min = x
		case "max":
			rd.Max = x
		case "mean":
			rd.Mean = x
		case "sd":
			rd.SD = x
		case "mu":
			rd.Mu = x
		case "sigma":
			rd.Sigma = x
		}
	}
	if !good {
		return nil, false
	}
	switch dist {
	case DistUniform:
		if rd.Min < 0 || rd.Max < rd.Min {
			d.add(n, path, "uniform needs 0 <= min <= max, got min %v, max %v", rd.Min, rd.Max)
			return nil, false
		}
	case DistExponential:
		if rd.Mean <= 0 {
			d.add(f.get("mean"), f.sub("mean"), "%v must be > 0", rd.Mean)
			return nil, false
		}
	case DistNormal:
		if rd.Mean < 0 || rd.SD <= 0 {
			d.add(n, path, "normal needs mean >= 0 and sd > 0, got mean %v, sd %v", rd.Mean, rd.SD)
			return nil, false
		}
	case DistLognormal:
		if rd.Sigma <= 0 {
			d.add(f.get("sigma"), f.sub("sigma"), "%v must be > 0", rd.Sigma)
			return nil, false
		}
	}
	return rd, true
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
		switch sw.Param {
		case SweepMissingPlant:
			if kind == Consensus {
				d.add(sw.values[0], sw.path+".param", "%s is only for kind cloud-control", sw.Param)
			}
			continue
		case SweepMissingAgent:
			if kind == CloudControl {
				d.add(sw.values[0], sw.path+".param", "%s is only for kind consensus", sw.Param)
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
