package fault

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// rule is one compiled faults.links entry.
type rule struct {
	spec     scenario.LinkFault
	name     string
	from, to endpointPattern
	subject  []string // nil: match by from
	// cut, when set, is a partition's side: the rule matches the agent->agent links that
	// cross it (one end on the side, the other not), and no other link.
	cut map[string]bool
}

// crosses reports whether the link from -> to crosses the partition side cut.
func crosses(cut map[string]bool, from, to string) bool {
	if !strings.HasPrefix(from, "agent.") || !strings.HasPrefix(to, "agent.") {
		return false
	}
	return cut[from] != cut[to]
}

// endpointPattern matches "<role>.<id>"; empty role or id -1 match anything.
type endpointPattern struct {
	role string // "" = any
	id   int    // -1 = any
}

func parseEndpointPattern(s string) (endpointPattern, error) {
	if s == "" || s == "*" {
		return endpointPattern{id: -1}, nil
	}
	role, id, ok := strings.Cut(s, ".")
	if !ok || role == "" || id == "" {
		return endpointPattern{}, fmt.Errorf("endpoint pattern %q: want <role>.<id>, <role>.* or *", s)
	}
	p := endpointPattern{role: role, id: -1}
	if role == "*" {
		p.role = ""
	}
	if id != "*" {
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			return endpointPattern{}, fmt.Errorf("endpoint pattern %q: id %q is not a non-negative integer or *", s, id)
		}
		p.id = n
	}
	return p, nil
}

func (p endpointPattern) match(endpoint string) bool {
	role, id, ok := strings.Cut(endpoint, ".")
	if !ok {
		return false
	}
	if p.role != "" && p.role != role {
		return false
	}
	if p.id >= 0 && strconv.Itoa(p.id) != id {
		return false
	}
	return true
}

// matchSubject matches a subject's tokens against a pattern with * (one token) and > (the rest).
func matchSubject(pattern, tokens []string) bool {
	for i, p := range pattern {
		if p == ">" {
			return len(tokens) > i
		}
		if i >= len(tokens) || (p != "*" && p != tokens[i]) {
			return false
		}
	}
	return len(pattern) == len(tokens)
}

// SeedOf returns the fault seed of a run: SHA-256 of the run seed under a fixed label. The
// faults are drawn from it, not from the run seed, because every process needs the fates of
// its own messages - the cloud and the eavesdropper too, which must not learn the run seed
// (it is the seed of the plant's and the agents' noise). The hash cannot be inverted.
func SeedOf(runSeed uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], runSeed)
	h := sha256.Sum256(append([]byte("dpsim/faults/v1/"), b[:]...))
	return binary.LittleEndian.Uint64(h[:8])
}

// Injector holds the compiled fault rules of a run and its seed.
type Injector struct {
	seed    uint64
	rules   []rule
	crashes []scenario.Crash
}

// New compiles the link rules of spec with the fault seed seed (SeedOf the run seed). A nil or
// empty spec gives an injector under which every link is clear.
func New(spec *scenario.FaultsSpec, seed uint64) (*Injector, error) {
	in := &Injector{seed: seed}
	if spec == nil {
		return in, nil
	}
	in.crashes = spec.Crashes
	for k, l := range spec.Links {
		r := rule{spec: l, name: l.Name}
		if r.name == "" {
			r.name = "link" + strconv.Itoa(k)
		}
		var err error
		if r.from, err = parseEndpointPattern(l.From); err != nil {
			return nil, fmt.Errorf("fault: faults.links[%d] (%s): from: %w", k, r.name, err)
		}
		if r.to, err = parseEndpointPattern(l.To); err != nil {
			return nil, fmt.Errorf("fault: faults.links[%d] (%s): to: %w", k, r.name, err)
		}
		if l.Subject != "" {
			r.subject = strings.Split(l.Subject, ".")
		}
		if l.Unit != "" && l.Unit != scenario.UnitSteps && l.Unit != scenario.UnitMS {
			return nil, fmt.Errorf("fault: faults.links[%d] (%s): unknown unit %q", k, r.name, l.Unit)
		}
		in.rules = append(in.rules, r)
	}
	// A partition drops every message across its cut during its window: a rule of drop 1
	// (its draws are then certain) on the crossing links, so the loss is counted per link
	// and logged like any other.
	for _, p := range spec.Partitions {
		w := p.Window
		r := rule{name: p.Name, spec: scenario.LinkFault{Name: p.Name, Unit: scenario.UnitSteps, Drop: 1, Window: &w, Active: p.Active},
			cut: map[string]bool{}}
		for _, a := range p.Side {
			r.cut["agent."+strconv.Itoa(a)] = true
		}
		in.rules = append(in.rules, r)
	}
	return in, nil
}

// Active reports whether any rule is configured.
func (in *Injector) Active() bool { return in != nil && len(in.rules) > 0 }

// linkRule is a rule matched on one link, with the label of its random draws.
type linkRule struct {
	r     *rule
	label uint64
	// delays: the rule has a fixed, random or jittered delay. Without one the delay it adds is
	// max(0 + 0, 0) = 0 exactly, so decide skips computing it (a drop-only rule: one draw).
	delays bool
}

// Link is one publisher -> subscriber link with the rules that match it.
type Link struct {
	From, To string
	seed     uint64
	rules    []linkRule
	// keys[r] = rng.Derive(seed, label(rule r, link), ep) for the episode ep last decided:
	// a cache (Decide stays a pure function of its arguments).
	keys  []uint64
	keyEp int
	// dropOnly: the link's one rule only drops, at every step, with probability drop > 0 (the
	// usual loss rule): its fate is one draw, which Release takes through dropAt.
	dropOnly bool
	drop     float64
	// downs are the crashes of the subscriber To: while it is down, nothing reaches it.
	downs []scenario.Crash
}

// Down reports whether the subscriber of the link is down (crashed) at step t of episode ep.
func (l *Link) Down(ep, t int) bool {
	for i := range l.downs {
		if l.downs[i].Down(ep, t) {
			return true
		}
	}
	return false
}

// Name is "from->to", the link's key in statistics.
func (l *Link) Name() string { return l.From + "->" + l.To }

// Clear reports whether no rule matches the link and its subscriber never crashes (every
// message is delivered on time, once).
func (l *Link) Clear() bool { return len(l.rules) == 0 && len(l.downs) == 0 }

// WallDelay reports whether a rule on the link delays in wall-clock time (unit ms).
func (l *Link) WallDelay() bool {
	for _, lr := range l.rules {
		if lr.r.spec.Unit == scenario.UnitMS {
			return true
		}
	}
	return false
}

// Link returns the link from publisher from to subscriber to, for the publisher's data
// subject below dpsim.<run>. (e.g. "plant.0.yhat"; it matters only for subject rules).
func (in *Injector) Link(from, to, subject string) *Link {
	l := &Link{From: from, To: to}
	if in == nil {
		return l
	}
	l.seed = in.seed
	for _, c := range in.crashes {
		if c.Proc == to {
			l.downs = append(l.downs, c)
		}
	}
	tokens := strings.Split(subject, ".")
	for k := range in.rules {
		r := &in.rules[k]
		if r.cut != nil {
			if !crosses(r.cut, from, to) {
				continue
			}
		} else if r.subject != nil {
			if !matchSubject(r.subject, tokens) {
				continue
			}
		} else if !r.from.match(from) {
			continue
		}
		if r.cut == nil && !r.to.match(to) {
			continue
		}
		sp := &r.spec
		l.rules = append(l.rules, linkRule{r: r, label: rng.Label("fault/" + r.name + "/" + from + "->" + to),
			delays: sp.Delay != 0 || sp.RandomDelay != nil || sp.Jitter != 0})
	}
	l.keys, l.keyEp = make([]uint64, len(l.rules)), -1
	if len(l.rules) == 1 {
		lr := &l.rules[0]
		sp := &lr.r.spec
		l.dropOnly = sp.Drop > 0 && sp.Duplicate == 0 && sp.Reorder == 0 && !lr.delays && sp.Window == nil && sp.Active == nil
		l.drop = sp.Drop
	}
	return l
}

// rekey derives the rules' keys of episode ep (see keys).
func (l *Link) rekey(ep int) {
	for i, lr := range l.rules {
		l.keys[i] = rng.Derive(l.seed, lr.label, uint64(ep))
	}
	l.keyEp = ep
}

// dropKey is the key of a dropOnly link's drop draws in episode ep (dropAt's).
func (l *Link) dropKey(ep int) uint64 {
	if ep != l.keyEp {
		l.rekey(ep)
	}
	return l.keys[0]
}

// dropAt is decide for a dropOnly link: whether the message of step t of episode ep is
// dropped (its only possible fate), from the same draw.
func (l *Link) dropAt(ep, t int) bool {
	if ep != l.keyEp {
		l.rekey(ep)
	}
	return rng.At(l.keys[0], uint64(t)<<3+drawDrop) < l.drop
}

// Fate is what the link does to one message.
type Fate struct {
	Drop       bool
	Duplicate  bool
	Reorder    bool          // held back behind the link's next message (one step later)
	DelaySteps int           // logical delay, >= 0
	Delay      time.Duration // wall-clock delay (unit ms rules), >= 0
}

// Clear reports whether the message goes through on time, once.
func (f *Fate) Clear() bool {
	return !f.Drop && !f.Duplicate && !f.Reorder && f.DelaySteps == 0 && f.Delay == 0
}

// The fixed draw indices of a rule's fate: each decision has its own draw, so a rule that
// does not use one (a zero probability, no random delay) skips it without shifting the others.
const (
	drawDrop = iota + 1
	drawDuplicate
	drawReorder
	drawDelay1
	drawDelay2
	drawJitter
)

// Decide returns the fate of the message of step t of episode ep on the link. It is a pure
// function of (seed, rule, link, ep, t): every rule whose window contains t and whose
// lifetime (scenario.Lifetime) contains (ep, t) takes its drop,
// duplicate, reorder, random-delay and jitter draws from the episode's counter stream keyed
// by rng.Derive(seed, label(rule, link), ep), draw d of step t at index 8t + d (rng.At). Delays of the
// matching rules add (steps are rounded to the nearest integer per rule); a message is
// dropped, duplicated or reordered if any rule says so. No allocation.
func (l *Link) Decide(ep, t int) Fate {
	var f Fate
	l.decide(ep, t, &f)
	return f
}

// decide is Decide into *f (zeroed by the caller), without copying a Fate about.
func (l *Link) decide(ep, t int, f *Fate) {
	if ep != l.keyEp {
		l.rekey(ep)
	}
	for i := range l.rules {
		lr := &l.rules[i]
		s := &lr.r.spec
		if !s.Window.Contains(t) || !s.Active.Contains(ep, t) {
			continue
		}
		key, base := l.keys[i], uint64(t)<<3 // draw d of step t is index 8t + d of the episode's stream
		if s.Drop > 0 && rng.At(key, base+drawDrop) < s.Drop {
			f.Drop = true
		}
		if s.Duplicate > 0 && rng.At(key, base+drawDuplicate) < s.Duplicate {
			f.Duplicate = true
		}
		if s.Reorder > 0 && rng.At(key, base+drawReorder) < s.Reorder {
			f.Reorder = true
		}
		if !lr.delays {
			continue
		}
		d := s.Delay + randomDelay(s.RandomDelay, key, base)
		if s.Jitter > 0 {
			d += s.Jitter * (2*rng.At(key, base+drawJitter) - 1)
		}
		d = math.Max(d, 0)
		if s.Unit == scenario.UnitMS {
			f.Delay += time.Duration(d * float64(time.Millisecond))
		} else {
			f.DelaySteps += int(math.Round(d))
		}
	}
}

// randomDelay draws from the rule's delay distribution (0 without one).
func randomDelay(r *scenario.RandomDelay, key, base uint64) float64 {
	if r == nil {
		return 0
	}
	switch r.Dist {
	case scenario.DistUniform:
		return r.Min + (r.Max-r.Min)*rng.At(key, base+drawDelay1)
	case scenario.DistExponential:
		return -r.Mean * math.Log(rng.OpenAt(key, base+drawDelay1))
	case scenario.DistNormal:
		return math.Max(0, r.Mean+r.SD*normal(key, base))
	case scenario.DistLognormal:
		return math.Exp(r.Mu + r.Sigma*normal(key, base))
	}
	return 0
}

// normal draws a standard normal by Box-Muller from the two delay draws.
func normal(key, base uint64) float64 {
	u1, u2 := rng.OpenAt(key, base+drawDelay1), rng.At(key, base+drawDelay2)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
