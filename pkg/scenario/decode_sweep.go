package scenario

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

var sweepFields = []string{"param", "values"}

// rawSweep is a decoded sweep with the nodes of its values, for messages.
type rawSweep struct {
	Sweep
	path   string
	values []*yaml.Node
}

// sweeps decodes sweep: {param, values} or a list of such (a product, first outermost).
func (d *decoder) sweeps(n *yaml.Node) []rawSweep {
	var items []*yaml.Node
	var paths []string
	switch n.Kind {
	case yaml.MappingNode:
		items, paths = []*yaml.Node{n}, []string{"sweep"}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.add(n, "sweep", "empty list: want {param, values} or a list of them")
			return nil
		}
		for i, c := range n.Content {
			items = append(items, resolve(c))
			paths = append(paths, index("sweep", i))
		}
	default:
		d.add(n, "sweep", "want {param, values} or a list of them, got %s", describe(n))
		return nil
	}
	var out []rawSweep
	good := true
	firstParam := map[SweepParam]string{}
	total := 1
	for i, it := range items {
		sw, ok := d.sweep(it, paths[i])
		if !ok {
			good = false
			continue
		}
		if first, dup := firstParam[sw.Param]; dup {
			d.add(it, paths[i]+".param", "%s is already swept by %s", sw.Param, first)
			good = false
			continue
		}
		firstParam[sw.Param] = paths[i]
		total *= sw.Len()
		if total > MaxSweepPoints {
			d.add(it, "sweep", "expands to more than %d scenarios", MaxSweepPoints)
			return nil
		}
		out = append(out, sw)
	}
	if !good {
		return nil
	}
	return out
}

// sweepDoc is one sweep while it is decoded.
type sweepDoc struct {
	sw   rawSweep
	list *yaml.Node // the values
}

var sweepTable = []field[sweepDoc]{
	{key: "param", need: "the swept parameter: " + joinNames(SweepParams), set: func(d *decoder, t *sweepDoc, n *yaml.Node, path string) bool {
		v, ok := d.str(n, path)
		if !ok {
			return false
		}
		t.sw.Param = SweepParam(v)
		if !contains(namesOf(SweepParams), v) {
			d.add(n, path, "unknown parameter %q (allowed: %s)", v, joinNames(SweepParams))
			return false
		}
		return true
	}},
	{key: "values", need: "the list of values to sweep", set: func(d *decoder, t *sweepDoc, n *yaml.Node, path string) bool {
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			d.add(n, path, "want a non-empty list of values, got %s", describe(n))
			return false
		}
		t.list = n
		return true
	}},
}

// sweep decodes {param, values}: numbers or names as the parameter takes, each once.
func (d *decoder) sweep(n *yaml.Node, path string) (rawSweep, bool) {
	t := &sweepDoc{sw: rawSweep{path: path}}
	f, good := section(d, n, path, t, sweepTable)
	if f == nil || !good {
		return t.sw, false
	}
	sw, vp := &t.sw, f.sub("values")
	seen := map[string]int{}
	for i, c := range t.list.Content {
		c = resolve(c)
		p := index(vp, i)
		key, ok := d.sweepValue(sw, c, p)
		if !ok {
			good = false
			continue
		}
		if first, dup := seen[key]; dup {
			d.add(c, p, "%s repeats %s", c.Value, index(vp, first))
			good = false
			continue
		}
		seen[key] = i
		sw.values = append(sw.values, c)
	}
	return *sw, good
}

// sweepValue decodes one value of sw (at p), appends it and returns it as a key for the
// duplicate check.
func (d *decoder) sweepValue(sw *rawSweep, c *yaml.Node, p string) (string, bool) {
	if sw.Param.numeric() {
		v, ok := d.float(c, p)
		if !ok {
			return "", false
		}
		sw.Numbers = append(sw.Numbers, v)
		return fmt.Sprint(v), true
	}
	v, ok := d.str(c, p)
	if !ok {
		return "", false
	}
	switch sw.Param {
	case SweepMissingPlant:
		if !contains(namesOf(PlantMissingRules), v) {
			d.add(c, p, "unknown rule %q (allowed: %s)", v, joinNames(PlantMissingRules))
			return "", false
		}
	case SweepMissingAgent:
		if !contains(namesOf(AgentMissingRules), v) {
			d.add(c, p, "unknown rule %q (allowed: %s)", v, joinNames(AgentMissingRules))
			return "", false
		}
	default:
		var probe PrivacySpec
		if err := setName(&probe, string(sw.Param), v); err != nil {
			d.add(c, p, "%v", err)
			return "", false
		}
	}
	sw.Names = append(sw.Names, v)
	return v, true
}

func namesOf[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
