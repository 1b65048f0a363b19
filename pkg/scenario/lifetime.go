package scenario

import (
	"bytes"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Lifetimes of link rules and partitions in run time, and the faults: section as a document
// of its own (what dpsim run --ui writes to faults.applied.yaml and reads back as a change):
//
//	faults:
//	  links:
//	    - name: drop-u
//	      from: cloud.0
//	      drop: 0.5
//	      active:                       # optional: the rule acts from (episode 2, step 0)
//	        from: {episode: 2, step: 0} # included (absent: from the start of the run)
//	        until: {episode: 5, step: 0} # excluded (absent: to the end of the run)
//
// The order is lexicographic on (episode, step): a rule whose lifetime ends at (5, 0) acts on
// the last step of episode 4 and not on step 0 of episode 5. A rule's random draws depend on
// its name and its link only (pkg/fault), never on the other rules, so a rule added later
// leaves the fates of the others as they were: a live change recorded as "the old rule until
// (E, S), the new one from (E, S)" replays bit for bit.

// Lifetime is the part of a run a link rule or a partition acts in: from From (included) to
// Until (excluded), lexicographic on (episode, step); a nil end is open.
type Lifetime struct {
	From  *StepPoint `json:"from,omitempty"`
	Until *StepPoint `json:"until,omitempty"`
}

// Before reports whether p comes before q: (p.Episode, p.Step) < (q.Episode, q.Step).
func (p StepPoint) Before(q StepPoint) bool {
	return p.Episode < q.Episode || (p.Episode == q.Episode && p.Step < q.Step)
}

// Contains reports whether step t of episode ep is in the lifetime (a nil lifetime: always).
func (l *Lifetime) Contains(ep, t int) bool {
	if l == nil {
		return true
	}
	at := StepPoint{Episode: ep, Step: t}
	if l.From != nil && at.Before(*l.From) {
		return false
	}
	return l.Until == nil || at.Before(*l.Until)
}

// clone returns a deep copy (nil for nil).
func (l *Lifetime) clone() *Lifetime {
	if l == nil {
		return nil
	}
	c := Lifetime{}
	if l.From != nil {
		f := *l.From
		c.From = &f
	}
	if l.Until != nil {
		u := *l.Until
		c.Until = &u
	}
	return &c
}

var lifetimeFields = []string{"from", "until"}

// lifetime decodes active: {from: {episode, step}, until: {episode, step}}.
func (d *decoder) lifetime(n *yaml.Node, path string, steps int) (*Lifetime, bool) {
	f := d.mapping(n, path, lifetimeFields...)
	if f == nil {
		return nil, false
	}
	l := &Lifetime{}
	good := true
	for _, k := range []struct {
		key string
		p   **StepPoint
	}{{"from", &l.From}, {"until", &l.Until}} {
		pn := f.get(k.key)
		if pn == nil {
			continue
		}
		pf := d.mapping(pn, f.sub(k.key), pointFields...)
		if pf == nil {
			good = false
			continue
		}
		sp, ok := d.stepPoint(pf, steps)
		if !ok {
			good = false
			continue
		}
		*k.p = &sp
	}
	if good && l.From != nil && l.Until != nil && !l.From.Before(*l.Until) {
		d.add(n, path, "from (episode %d, step %d) must come before until (episode %d, step %d)",
			l.From.Episode, l.From.Step, l.Until.Episode, l.Until.Step)
		good = false
	}
	return l, good
}

// DecodeFaults decodes and validates a faults section given as a document of its own
// ("faults:" at the top; JSON is YAML too) for scenario s: s's kind, steps and graph say what
// its rules may name, as in a scenario file. The errors (*ValidationError) name each field
// (faults.links[1].drop). source names the document in messages.
func DecodeFaults(s *Scenario, data []byte, source string) (FaultsSpec, error) {
	ps := &problems{}
	d := &decoder{ps: ps, lines: map[string]int{}}
	out := defaultFaults()
	root := parseDocument(data, d)
	if root != nil {
		if top := d.mapping(root, "", "faults"); top != nil {
			if n := top.get("faults"); n != nil {
				graphN := 0
				if s.Network != nil {
					graphN = s.Network.N
				}
				out = d.faults(n, s.Kind, s.Steps, graphN)
			}
		}
	}
	if err := ps.err(source); err != nil {
		return out, err
	}
	return out, nil
}

// The faults section as YAML, in the scenario file's field names.
type (
	yamlFaultsDoc struct {
		Faults yamlFaults `yaml:"faults"`
	}
	yamlFaults struct {
		Missing        *yamlMissing    `yaml:"missing,omitempty"`
		Links          []yamlLink      `yaml:"links,omitempty"`
		Crashes        []yamlCrash     `yaml:"crashes,omitempty"`
		Partitions     []yamlPartition `yaml:"partitions,omitempty"`
		ServerRestarts []yamlRestart   `yaml:"server_restarts,omitempty"`
		Proxies        []yamlProxy     `yaml:"proxies,omitempty"`
	}
	yamlMissing struct {
		Plant string `yaml:"plant,omitempty"`
		Agent string `yaml:"agent,omitempty"`
	}
	yamlLink struct {
		Name        string         `yaml:"name"`
		From        string         `yaml:"from,omitempty"`
		To          string         `yaml:"to,omitempty"`
		Subject     string         `yaml:"subject,omitempty"`
		Unit        string         `yaml:"unit,omitempty"`
		Delay       float64        `yaml:"delay,omitempty"`
		RandomDelay map[string]any `yaml:"random_delay,omitempty"`
		Jitter      float64        `yaml:"jitter,omitempty"`
		Drop        float64        `yaml:"drop,omitempty"`
		Duplicate   float64        `yaml:"duplicate,omitempty"`
		Reorder     float64        `yaml:"reorder,omitempty"`
		Window      []int          `yaml:"window,omitempty,flow"`
		Active      *yamlLife      `yaml:"active,omitempty"`
	}
	yamlLife struct {
		From  *yamlPoint `yaml:"from,omitempty"`
		Until *yamlPoint `yaml:"until,omitempty"`
	}
	yamlPoint struct {
		Episode int `yaml:"episode"`
		Step    int `yaml:"step"`
	}
	yamlCrash struct {
		Proc    string `yaml:"proc"`
		Episode any    `yaml:"episode"`
		Step    int    `yaml:"step"`
		Restart int    `yaml:"restart"`
		Noise   string `yaml:"noise,omitempty"`
	}
	yamlPartition struct {
		Name   string    `yaml:"name"`
		Agents []int     `yaml:"agents,flow"`
		Window []int     `yaml:"window,flow"`
		Active *yamlLife `yaml:"active,omitempty"`
	}
	yamlRestart struct {
		Episode int    `yaml:"episode"`
		Step    int    `yaml:"step"`
		Down    string `yaml:"down"`
		Server  int    `yaml:"server,omitempty"`
	}
	yamlProxy struct {
		Proc      string      `yaml:"proc"`
		Latency   string      `yaml:"latency,omitempty"`
		Jitter    string      `yaml:"jitter,omitempty"`
		Bandwidth int64       `yaml:"bandwidth,omitempty"`
		Resets    []yamlPoint `yaml:"resets,omitempty"`
	}
)

func yamlLifeOf(l *Lifetime) *yamlLife {
	if l == nil {
		return nil
	}
	y := &yamlLife{}
	if l.From != nil {
		y.From = &yamlPoint{Episode: l.From.Episode, Step: l.From.Step}
	}
	if l.Until != nil {
		y.Until = &yamlPoint{Episode: l.Until.Episode, Step: l.Until.Step}
	}
	return y
}

// randomDelayYAML is a random delay with its distribution's parameters only (nil for nil).
func randomDelayYAML(r *RandomDelay) map[string]any {
	if r == nil {
		return nil
	}
	m := map[string]any{"dist": string(r.Dist)}
	vals := map[string]float64{"min": r.Min, "max": r.Max, "mean": r.Mean, "sd": r.SD, "mu": r.Mu, "sigma": r.Sigma}
	for _, k := range distParams[r.Dist] {
		m[k] = vals[k]
	}
	return m
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// MarshalFaults writes f as a document "faults: ..." in the scenario file's field names:
// DecodeFaults (and a scenario file with it as its faults section) reads back the same spec.
// Numbers are written in their shortest exact form.
func MarshalFaults(f FaultsSpec) ([]byte, error) {
	var y yamlFaults
	// the rules other than the defaults (a scenario names only its kind's)
	if m := (yamlMissing{Plant: string(f.Missing.Plant), Agent: string(f.Missing.Agent)}); m.Plant != string(PlantHold) || m.Agent != string(AgentReuseLast) {
		if m.Plant == string(PlantHold) {
			m.Plant = ""
		}
		if m.Agent == string(AgentReuseLast) {
			m.Agent = ""
		}
		y.Missing = &m
	}
	for _, l := range f.Links {
		yl := yamlLink{Name: l.Name, From: l.From, To: l.To, Subject: l.Subject, Unit: string(l.Unit), Delay: l.Delay,
			RandomDelay: randomDelayYAML(l.RandomDelay), Jitter: l.Jitter, Drop: l.Drop, Duplicate: l.Duplicate, Reorder: l.Reorder, Active: yamlLifeOf(l.Active)}
		if l.Subject != "" {
			yl.From = ""
		}
		if l.Window != nil {
			yl.Window = []int{l.Window.From, l.Window.To}
		}
		y.Links = append(y.Links, yl)
	}
	for _, c := range f.Crashes {
		var ep any = c.Episode
		if c.Episode == EveryEpisode {
			ep = "all"
		}
		y.Crashes = append(y.Crashes, yamlCrash{Proc: c.Proc, Episode: ep, Step: c.Step, Restart: c.Restart, Noise: string(c.Noise)})
	}
	for _, p := range f.Partitions {
		y.Partitions = append(y.Partitions, yamlPartition{Name: p.Name, Agents: p.Side, Window: []int{p.Window.From, p.Window.To},
			Active: yamlLifeOf(p.Active)})
	}
	for _, r := range f.ServerRestarts {
		y.ServerRestarts = append(y.ServerRestarts, yamlRestart{Episode: r.Episode, Step: r.Step, Down: durationText(r.Down), Server: r.Server})
	}
	for _, x := range f.Proxies {
		yx := yamlProxy{Proc: x.Proc, Latency: durationText(x.Latency), Jitter: durationText(x.Jitter), Bandwidth: x.Bandwidth}
		for _, r := range x.Resets {
			yx.Resets = append(yx.Resets, yamlPoint{Episode: r.Episode, Step: r.Step})
		}
		y.Proxies = append(y.Proxies, yx)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(yamlFaultsDoc{Faults: y}); err != nil {
		return nil, fmt.Errorf("scenario: faults: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("scenario: faults: %w", err)
	}
	return b.Bytes(), nil
}

// RuleNames returns the names of every link rule and partition of f, in order.
func (f *FaultsSpec) RuleNames() []string {
	var out []string
	for _, l := range f.Links {
		out = append(out, l.Name)
	}
	for _, p := range f.Partitions {
		out = append(out, p.Name)
	}
	return out
}

// LinkNamed returns the link rule named name (nil: none).
func (f *FaultsSpec) LinkNamed(name string) *LinkFault {
	for i := range f.Links {
		if f.Links[i].Name == name {
			return &f.Links[i]
		}
	}
	return nil
}

// PartitionNamed returns the partition named name (nil: none).
func (f *FaultsSpec) PartitionNamed(name string) *Partition {
	for i := range f.Partitions {
		if f.Partitions[i].Name == name {
			return &f.Partitions[i]
		}
	}
	return nil
}
