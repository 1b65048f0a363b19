package scenario

import "slices"

// FaultsSpec is the scenario's faults: section: what each role does when a step's input is
// missing, and the per-link faults the network injects (delay, jitter, loss, duplication,
// reordering). The zero value (no faults: section) means no link faults and the default
// missing-input rules.
//
//	faults:
//	  missing:
//	    plant: hold          # u(t) missing: hold the newest u received (hold) or apply 0 (zero)
//	    agent: reuse-last    # y_j(t) missing: reuse the newest y_j received (reuse-last) or skip j (skip)
//	  links:
//	    - name: u-delay      # optional label (default link<k>, k from 0)
//	      from: cloud.0      # publisher endpoint pattern: plant.0, cloud.0, agent.3, agent.*, * (default *)
//	      to: plant.0        # subscriber endpoint pattern, the eavesdropper included (default *)
//	      subject: agent.*.y # optional, instead of from: the data subject below dpsim.<run>. (* and > wildcards)
//	      unit: steps        # unit of delay, random_delay and jitter: steps (default) or ms
//	      delay: 2           # fixed delay
//	      random_delay: {dist: exponential, mean: 1}  # added to delay: uniform{min,max}, exponential{mean},
//	                                                  # normal{mean,sd} (truncated at 0), lognormal{mu,sigma}
//	      jitter: 1          # uniform in [-jitter, +jitter], added; the total delay is clamped at 0
//	      drop: 0.1          # probability a message is lost on this link
//	      duplicate: 0.05    # probability it is delivered twice
//	      reorder: 0.05      # probability it is held back and delivered after the link's next message
//	      window: [20, 40]   # apply only to messages of steps 20..39 (default: every step)
//	      active: {from: {episode: 2, step: 0}, until: {episode: 5, step: 0}}  # lifetime in the run (lifetime.go; default: always)
//
// Every rule that matches a link applies, each with its own random draws: delays add, and a
// message is dropped (duplicated, reordered) if any rule drops (duplicates, reorders) it.
// A delay in steps is rounded to the nearest integer.
type FaultsSpec struct {
	Missing MissingSpec `json:"missing"`
	Links   []LinkFault `json:"links,omitempty"`

	// Process, server and network faults (process_faults.go).
	Crashes        []Crash         `json:"crashes,omitempty"`
	Partitions     []Partition     `json:"partitions,omitempty"`
	ServerRestarts []ServerRestart `json:"server_restarts,omitempty"`
	Proxies        []Proxy         `json:"proxies,omitempty"`
}

// Active reports whether any link fault (a rule, or a partition) is configured.
func (f *FaultsSpec) Active() bool { return f != nil && (len(f.Links) > 0 || len(f.Partitions) > 0) }

// Clone returns a deep copy.
func (f FaultsSpec) Clone() FaultsSpec {
	c := f
	c.Links = make([]LinkFault, len(f.Links))
	for i, l := range f.Links {
		c.Links[i] = l
		if l.RandomDelay != nil {
			d := *l.RandomDelay
			c.Links[i].RandomDelay = &d
		}
		if l.Window != nil {
			w := *l.Window
			c.Links[i].Window = &w
		}
		c.Links[i].Active = l.Active.clone()
	}
	if f.Links == nil {
		c.Links = nil
	}
	c.Crashes = append([]Crash(nil), f.Crashes...)
	c.ServerRestarts = append([]ServerRestart(nil), f.ServerRestarts...)
	c.Proxies = nil
	for _, x := range f.Proxies {
		x.Resets = append([]StepPoint(nil), x.Resets...)
		c.Proxies = append(c.Proxies, x)
	}
	c.Partitions = nil
	for _, p := range f.Partitions {
		p.Side = append([]int(nil), p.Side...)
		p.Active = p.Active.clone()
		c.Partitions = append(c.Partitions, p)
	}
	return c
}

// PlantMissing is the plant's rule for a missing u(t).
type PlantMissing string

// The plant's missing-input rules.
const (
	// PlantHold applies the newest u received so far (by step; zero before the first).
	PlantHold PlantMissing = "hold"
	// PlantZero applies u = 0.
	PlantZero PlantMissing = "zero"
)

// AgentMissing is a consensus agent's rule for a missing neighbour message y_j(t).
type AgentMissing string

// The agents' missing-input rules.
const (
	// AgentReuseLast uses the newest y_j received so far (by step); before the first, skip.
	AgentReuseLast AgentMissing = "reuse-last"
	// AgentSkip leaves neighbour j out of this step's update (its term w_ij (y_j - y_i) is 0).
	AgentSkip AgentMissing = "skip"
)

// PlantMissingRules and AgentMissingRules list the accepted names.
var (
	PlantMissingRules = []PlantMissing{PlantHold, PlantZero}
	AgentMissingRules = []AgentMissing{AgentReuseLast, AgentSkip}
)

// MissingSpec holds the missing-input rules a scenario names. The cloud's rule (predict
// yhat(t) = C xhat(t) with the observer open-loop) and the eavesdropper's (estimate from what
// arrived, mark the gap) are fixed.
type MissingSpec struct {
	Plant PlantMissing `json:"plant,omitempty"` // default PlantHold
	Agent AgentMissing `json:"agent,omitempty"` // default AgentReuseLast
}

// DelayUnit is the unit of a link's delay, random delay and jitter.
type DelayUnit string

// Delay units.
const (
	UnitSteps DelayUnit = "steps" // logical steps: the same in every engine and mode
	UnitMS    DelayUnit = "ms"    // wall-clock milliseconds: NATS path only (realtime matters)
)

// DelayDist names the distribution of a random delay.
type DelayDist string

// Random delay distributions.
const (
	DistUniform     DelayDist = "uniform"     // Min, Max
	DistExponential DelayDist = "exponential" // Mean
	DistNormal      DelayDist = "normal"      // Mean, SD; truncated at 0
	DistLognormal   DelayDist = "lognormal"   // Mu, Sigma of the underlying normal
)

// DelayDists lists the accepted distributions.
var DelayDists = []DelayDist{DistUniform, DistExponential, DistNormal, DistLognormal}

// RandomDelay is a random delay: Dist with its parameters (the others are 0).
type RandomDelay struct {
	Dist  DelayDist `json:"dist"`
	Min   float64   `json:"min,omitempty"`   // uniform
	Max   float64   `json:"max,omitempty"`   // uniform
	Mean  float64   `json:"mean,omitempty"`  // exponential (Mean), normal (Mean, SD)
	SD    float64   `json:"sd,omitempty"`    // exponential (Mean), normal (Mean, SD)
	Mu    float64   `json:"mu,omitempty"`    // lognormal
	Sigma float64   `json:"sigma,omitempty"` // lognormal
}

// StepWindow is a half-open range of steps [From, To).
type StepWindow struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Contains reports whether step t is in the window.
func (w *StepWindow) Contains(t int) bool { return w == nil || (t >= w.From && t < w.To) }

// LinkFault is one rule of faults.links.
type LinkFault struct {
	Name    string `json:"name"`              // label in statistics; default "link<k>"
	From    string `json:"from,omitempty"`    // publisher endpoint pattern ("" or "*": any)
	To      string `json:"to,omitempty"`      // subscriber endpoint pattern ("" or "*": any)
	Subject string `json:"subject,omitempty"` // data-subject pattern below dpsim.<run>. ("" = use From)

	Unit        DelayUnit    `json:"unit"`            // default UnitSteps
	Delay       float64      `json:"delay,omitempty"` // fixed delay, >= 0
	RandomDelay *RandomDelay `json:"random_delay,omitempty"`
	Jitter      float64      `json:"jitter,omitempty"` // >= 0

	Drop      float64 `json:"drop,omitempty"`      // probabilities in [0, 1]
	Duplicate float64 `json:"duplicate,omitempty"` // probabilities in [0, 1]
	Reorder   float64 `json:"reorder,omitempty"`   // probabilities in [0, 1]

	Window *StepWindow `json:"window,omitempty"` // nil: every step
	// Active is the part of the run the rule acts in (lifetime.go; nil: the whole run).
	Active *Lifetime `json:"active,omitempty"`
}

// The swept fault parameters: a sweep sets the field on every rule of faults.links (the
// missing-input rules on faults.missing).
const (
	SweepFaultDelay     SweepParam = "faults.delay"
	SweepFaultJitter    SweepParam = "faults.jitter"
	SweepFaultDrop      SweepParam = "faults.drop"
	SweepFaultDuplicate SweepParam = "faults.duplicate"
	SweepFaultReorder   SweepParam = "faults.reorder"
	SweepMissingPlant   SweepParam = "faults.missing.plant"
	SweepMissingAgent   SweepParam = "faults.missing.agent"
)

// faultSweepParams lists the fault parameters a sweep may name.
var faultSweepParams = []SweepParam{SweepFaultDelay, SweepFaultJitter, SweepFaultDrop, SweepFaultDuplicate,
	SweepFaultReorder, SweepMissingPlant, SweepMissingAgent}

// isFaultParam reports whether p is one of the fault sweep parameters.
func isFaultParam(p SweepParam) bool { return slices.Contains(faultSweepParams, p) }
