package launch

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Interventions are the changes a user makes to a point's faults while it plays (dpsim run
// --ui): add, change or remove a link rule or a partition, crash and restart a process. A
// change is asked for at any time and takes effect at step 0 of the first episode of the next
// group the launcher starts (K = 1: the next episode; K in flight: the next ctl.episodes).
// PlayPoint applies the pending changes before it sends that group's start, with a ctl.faults
// the processes queue before it (startGroup): the same step in every process, so the faults in
// force are known exactly. Each applied change is recorded in the faults - a changed or removed
// rule lives until (E, 0) and its successor from (E, 0) (scenario.Lifetime), a crash is an
// ordinary faults.crashes entry of episode E - so that running the scenario with Faults() as
// its faults section replays the live run bit for bit, with any number of episodes in flight.
type Interventions struct {
	mu      sync.Mutex
	cfg     InterventionsConfig
	cur     faultState // the faults in force (the scenario's plus every applied change)
	all     []*change  // every change asked for, in order
	pending []*change
	next    int // the first episode of the next group: where a pending change takes effect
	gen     int // live faults generations sent (ctl.faults)
	ended   bool
	// the session and the episode in progress, its grid's origin (realtime mid-episode changes)
	sess   *Session
	epNow  int
	origin time.Time
}

// InterventionsConfig says what a point's interventions change and who hears of them.
type InterventionsConfig struct {
	// Scenario is the point's: its kind, steps and graph check a change (its faults are where
	// the changes start from). Runs is the number of episodes the point plays, Start the
	// first one.
	Scenario    *scenario.Scenario
	Runs, Start int
	// Refuse, when set, is why this run cannot take interventions (a sweep, the fast engine,
	// a resumed run...): every change is refused with it.
	Refuse string
	// OnApply, if set, is called after each episode boundary at which changes took effect,
	// with every change so far and the faults now in force (outside the lock).
	OnApply func(all []record.Intervention, faults scenario.FaultsSpec)
	// Timeline, if set, gets an event per applied change; PointIndex is the point's index.
	Timeline   *Timeline
	PointIndex int
	// Period, in a realtime run, is the step period: a link rule or partition asked for while
	// an episode goes takes effect at a step of it (MidMargin ahead of the wall clock's), not
	// at the next episode. Zero: lockstep, changes wait for the next episode.
	Period time.Duration
}

// MidMargin is how far ahead of the step the wall clock says a realtime episode is at a change
// takes effect in it: at least 3 steps and 150 ms, for the file and the ctl.faults to reach
// every process before it releases that step (one that has is a failure, not a wrong replay).
const MidMargin = 150 * time.Millisecond

// The operations and targets of an intervention.
const (
	OpAdd    = "add"
	OpChange = "change"
	OpRemove = "remove"
	OpCrash  = "crash"

	TargetLink      = "link"
	TargetPartition = "partition"
	TargetProc      = "proc"
)

// EvIntervention is the timeline event of an applied intervention.
const EvIntervention = "intervention"

// change is an Intervention with what it puts in force, decoded from its body.
type change struct {
	record.Intervention
	link  *scenario.LinkFault
	part  *scenario.Partition
	crash *scenario.Crash
}

// Refusal is a change that cannot be made: what kind of refusal (the live view's HTTP server
// turns it into a status), the field at fault (a scenario path such as faults.links[2].drop; ""
// when it is not one field) and why.
type Refusal struct {
	Kind   RefusalKind
	Field  string
	Reason string
}

// RefusalKind says why a change is refused: the request is invalid, names nothing that
// exists, conflicts with the run's state, or failed inside the launcher.
type RefusalKind string

const (
	RefusedInvalid  RefusalKind = "invalid"
	RefusedNotFound RefusalKind = "not-found"
	RefusedConflict RefusalKind = "conflict"
	RefusedInternal RefusalKind = "internal"
)

func (r *Refusal) Error() string {
	if r.Field != "" {
		return r.Field + ": " + r.Reason
	}
	return r.Reason
}

// HTTPStatus is the status of the refusal (a 4xx).
// RefusalKind returns the refusal's kind (internal/live maps it to an HTTP status).
func (r *Refusal) RefusalKind() string { return string(r.Kind) }

// FieldName is the field at fault ("" when none).
func (r *Refusal) FieldName() string { return r.Field }

// faultState is the faults with the name each rule and partition is known by (a version's
// base name).
type faultState struct {
	faults scenario.FaultsSpec
	base   map[string]string // rule or partition name -> the name the user knows it by
}

func (s faultState) clone() faultState {
	c := faultState{faults: s.faults.Clone(), base: make(map[string]string, len(s.base))}
	for k, v := range s.base {
		c.base[k] = v
	}
	return c
}

// NewInterventions returns the interventions of a point whose faults start as cfg.Scenario's.
func NewInterventions(cfg InterventionsConfig) *Interventions {
	iv := &Interventions{cfg: cfg, next: cfg.Start, cur: faultState{faults: cfg.Scenario.Faults.Clone(), base: map[string]string{}}}
	for _, n := range iv.cur.faults.RuleNames() {
		iv.cur.base[n] = n
	}
	return iv
}

// InterventionsState is what GET /api/faults shows.
type InterventionsState struct {
	Enabled bool   `json:"enabled"`
	Refused string `json:"refused,omitempty"` // why interventions cannot be made in this run
	// Realtime: a link rule or partition change takes effect in the episode in progress, a
	// margin ahead of the wall clock (crashes still wait for the next episode).
	Realtime bool `json:"realtime"`
	// NextEpisode is where a change asked for now takes effect (step 0); -1 when no episode
	// is left to start.
	NextEpisode   int                   `json:"next_episode"`
	Faults        scenario.FaultsSpec   `json:"faults"`      // in force, with every applied change
	FaultsYAML    string                `json:"faults_yaml"` // the same, as faults.applied.yaml has it
	Interventions []record.Intervention `json:"interventions"`
	// Current are the rules and partitions acting from the next episode on, by the name the
	// user knows them by (what PUT and DELETE name).
	Current struct {
		Links      []scenario.LinkFault `json:"links"`
		Partitions []scenario.Partition `json:"partitions"`
	} `json:"current"`
}

// State returns the faults in force and every change, applied or pending.
func (iv *Interventions) State() InterventionsState {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	st := InterventionsState{Enabled: iv.cfg.Refuse == "", Refused: iv.cfg.Refuse, Realtime: iv.cfg.Period > 0, NextEpisode: iv.next, Faults: iv.cur.faults.Clone()}
	if iv.ended || iv.next >= iv.cfg.Runs {
		st.NextEpisode = -1
	}
	if b, err := scenario.MarshalFaults(st.Faults); err == nil {
		st.FaultsYAML = string(b)
	}
	st.Interventions = iv.list()
	prov, _ := iv.provisional()
	for _, l := range prov.faults.Links {
		if l.Active == nil || l.Active.Until == nil {
			l.Name = prov.base[l.Name]
			st.Current.Links = append(st.Current.Links, l)
		}
	}
	for _, p := range prov.faults.Partitions {
		if p.Active == nil || p.Active.Until == nil {
			p.Name = prov.base[p.Name]
			st.Current.Partitions = append(st.Current.Partitions, p)
		}
	}
	return st
}

// Faults returns the faults in force with every applied change (faults.applied.yaml).
func (iv *Interventions) Faults() scenario.FaultsSpec {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	return iv.cur.faults.Clone()
}

// List returns every change asked for, applied or pending.
func (iv *Interventions) List() []record.Intervention {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	return iv.list()
}

func (iv *Interventions) list() []record.Intervention {
	out := make([]record.Intervention, len(iv.all))
	for i, c := range iv.all {
		out[i] = c.Intervention
	}
	return out
}

// provisional is the faults as they will be once the pending changes take effect at the next
// episode.
func (iv *Interventions) provisional() (faultState, error) {
	st := iv.cur.clone()
	at := scenario.StepPoint{Episode: iv.next}
	for _, c := range iv.pending {
		if err := applyChange(&st, c, at); err != nil {
			return st, err
		}
	}
	return st, nil
}

// Do asks for change op (OpAdd, OpChange, OpRemove, OpCrash) of target (TargetLink,
// TargetPartition, TargetProc) name ("" for an add) with the fields of body, recording by as
// who asked (AddLink ... Crash with no requester).
func (iv *Interventions) Do(by record.Requester, op, target, name string, body map[string]any) (record.Intervention, error) {
	switch {
	case op == OpCrash:
		return iv.crash(by, name, body)
	case (target == TargetLink || target == TargetPartition) && (op == OpAdd || op == OpChange):
		if op == OpAdd {
			name = ""
		}
		return iv.ask(by, op, target, name, body, body)
	case (target == TargetLink || target == TargetPartition) && op == OpRemove:
		return iv.ask(by, op, target, name, nil, nil)
	}
	return record.Intervention{}, &Refusal{Kind: RefusedNotFound, Reason: "unknown change " + op + " " + target}
}

// AddLink asks for a new link rule (the fields of a faults.links entry, as in a scenario file).
func (iv *Interventions) AddLink(rule map[string]any) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpAdd, TargetLink, "", rule)
}

// ChangeLink asks for rule name to be replaced by rule (its name stays).
func (iv *Interventions) ChangeLink(name string, rule map[string]any) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpChange, TargetLink, name, rule)
}

// RemoveLink asks for rule name to stop acting.
func (iv *Interventions) RemoveLink(name string) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpRemove, TargetLink, name, nil)
}

// AddPartition asks for a new partition (the fields of a faults.partitions entry; its window
// defaults to every step).
func (iv *Interventions) AddPartition(p map[string]any) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpAdd, TargetPartition, "", p)
}

// ChangePartition asks for partition name to be replaced by p (its name stays).
func (iv *Interventions) ChangePartition(name string, p map[string]any) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpChange, TargetPartition, name, p)
}

// RemovePartition asks for partition name to stop acting.
func (iv *Interventions) RemovePartition(name string) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpRemove, TargetPartition, name, nil)
}

// Crash asks for process proc (plant.0, cloud.0, agent.3; or its file name agent-3) to be
// killed at step "step" of the next episode and back at step "restart" (or after "down"
// steps), with the crash's "noise" rule: the fields of a faults.crashes entry.
func (iv *Interventions) Crash(proc string, c map[string]any) (record.Intervention, error) {
	return iv.Do(record.Requester{}, OpCrash, TargetProc, proc, c)
}

func (iv *Interventions) crash(by record.Requester, proc string, body map[string]any) (record.Intervention, error) {
	c := map[string]any{}
	if body != nil {
		c = cloneMap(body)
	}
	if r, dash, ok := strings.Cut(proc, "-"); ok && !strings.Contains(proc, ".") {
		proc = r + "." + dash
	}
	steps := iv.cfg.Scenario.Steps
	if _, ok := c["step"]; !ok {
		c["step"] = max(1, steps/4)
	}
	if d, ok := c["down"]; ok {
		delete(c, "down")
		if _, has := c["restart"]; has {
			return record.Intervention{}, &Refusal{Kind: RefusedInvalid, Field: "down", Reason: "give restart or down, not both"}
		}
		df, ok1 := d.(float64)
		s, ok2 := toFloat(c["step"])
		if !ok1 || !ok2 || df != float64(int(df)) || df < 1 {
			return record.Intervention{}, &Refusal{Kind: RefusedInvalid, Field: "down", Reason: fmt.Sprintf("%v: want the steps the process stays down (an integer >= 1)", d)}
		}
		c["restart"] = int(s) + int(df)
	}
	if _, ok := c["restart"]; !ok {
		s, _ := toFloat(c["step"])
		c["restart"] = min(steps-1, int(s)+max(1, steps/4))
	}
	c["proc"] = proc
	return iv.ask(by, OpCrash, TargetProc, proc, c, body)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// ask checks a change against the faults it will apply to (the scenario validator names the
// field at fault) and queues it for the next episode; by asked for it with body (recorded).
func (iv *Interventions) ask(by record.Requester, op, target, name string, fields, body map[string]any) (record.Intervention, error) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	midStep := iv.midStep(target)
	switch {
	case iv.cfg.Refuse != "":
		return record.Intervention{}, &Refusal{Kind: RefusedConflict, Reason: iv.cfg.Refuse}
	case midStep < 0 && (iv.ended || iv.next >= iv.cfg.Runs):
		return record.Intervention{}, &Refusal{Kind: RefusedConflict, Reason: "no episode of the run is left to start: a change takes effect at the start of the next episode"}
	}
	prov, err := iv.provisional()
	if err != nil {
		return record.Intervention{}, err
	}
	c := &change{Intervention: record.Intervention{ID: len(iv.all) + 1, Op: op, Target: target, Name: name, Episode: -1, At: time.Now().UTC(), Requester: by}}
	if body != nil {
		c.Body = cloneMap(body)
	}
	if err := iv.decode(c, prov, fields); err != nil {
		return record.Intervention{}, err
	}
	at := scenario.StepPoint{Episode: iv.next}
	if midStep >= 0 {
		at = scenario.StepPoint{Episode: iv.epNow, Step: midStep}
	}
	if err := applyChange(&prov, c, at); err != nil {
		return record.Intervention{}, err
	}
	if _, err := checkFaults(iv.cfg.Scenario, prov.faults); err != nil {
		return record.Intervention{}, err
	}
	iv.all = append(iv.all, c)
	if midStep < 0 {
		iv.pending = append(iv.pending, c)
		return c.Intervention, nil
	}
	if err := iv.publish(iv.sess, prov, at); err != nil {
		return record.Intervention{}, &Refusal{Kind: RefusedInternal, Reason: err.Error()}
	}
	iv.commit([]*change{c}, prov, at)
	out := c.Intervention
	if iv.cfg.OnApply != nil {
		all, faults := iv.list(), iv.cur.faults.Clone()
		go iv.cfg.OnApply(all, faults) // outside the lock; it reads the state again
	}
	return out, nil
}

// midStep is the step of the realtime episode in progress at which a change of target takes
// effect now, or -1 when it waits for the next episode: lockstep, a crash (the processes
// learn their crashes between episodes), changes already waiting (they come first), an
// outage in the episode, or too late in it.
func (iv *Interventions) midStep(target string) int {
	if iv.cfg.Period <= 0 || iv.sess == nil || iv.ended || target == TargetProc || len(iv.pending) > 0 || iv.outage(iv.epNow) {
		return -1
	}
	now := int(time.Since(iv.origin) / iv.cfg.Period)
	margin := max(3, int((MidMargin+iv.cfg.Period-1)/iv.cfg.Period))
	step := max(now, 0) + margin
	if step >= iv.cfg.Scenario.Steps {
		return -1
	}
	return step
}

// outage reports whether a process may be off the bus in episode ep (a crash, a server
// restart, a proxy reset): a ctl.faults sent then could miss it, so changes wait for the
// next episode, when every process is back.
func (iv *Interventions) outage(ep int) bool {
	return aloneReason(&iv.cur.faults, ep) != ""
}

// publish writes the faults st in force from at as the next generation beside the plan files
// and sends its ctl.faults (flushed when at is in the middle of an episode).
func (iv *Interventions) publish(s *Session, st faultState, at scenario.StepPoint) error {
	iv.gen++
	b, digest, err := contract.EncodeLiveFaults(contract.LiveFaults{Run: s.cfg.Run, Generation: iv.gen, Episode: at.Episode, Step: at.Step, Faults: st.faults})
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(s.cfg.Dir, contract.LiveFaultsFile(iv.gen)), b, 0o644)
	}
	if err == nil {
		err = s.conn.Publish(s.subj.CtlEpisode(), contract.FaultsMessage(s.cfg.Run, at.Episode, at.Step, iv.gen, digest))
	}
	if err == nil && at.Step > 0 {
		err = s.conn.Flush(contract.FlushWait(s.cfg.Timeout))
	}
	if err != nil {
		return fmt.Errorf("interventions at episode %d step %d: %w", at.Episode, at.Step, err)
	}
	return nil
}

// commit records changes cs as in force from at, with the faults st.
func (iv *Interventions) commit(cs []*change, st faultState, at scenario.StepPoint) {
	now := time.Now()
	for _, c := range cs {
		c.Applied, c.Episode, c.Step = true, at.Episode, at.Step
		iv.cfg.Timeline.Add(now, record.TimelineEvent{Point: iv.cfg.PointIndex, Episode: at.Episode, Step: at.Step, Proc: procOf(c), Event: EvIntervention,
			Detail: describe(c)})
	}
	iv.cur = st
}

// decode decodes the fields of a change into c, with the scenario validator: they are put in
// the faults as they will be (prov) and the whole section is checked, so a problem is named
// by its field (faults.links[3].drop).
func (iv *Interventions) decode(c *change, prov faultState, fields map[string]any) error {
	if c.Op == OpRemove {
		return iv.findCurrent(c, prov)
	}
	if c.Op == OpChange {
		if err := iv.findCurrent(c, prov); err != nil {
			return err
		}
		fields = cloneMap(fields)
		if n, ok := fields["name"]; ok && n != c.Name {
			return &Refusal{Kind: RefusedInvalid, Field: "name", Reason: fmt.Sprintf("%v: a change keeps the name %s (remove it and add another to rename)", n, c.Name)}
		}
		delete(fields, "name")
	}
	if _, ok := fields["active"]; ok {
		return &Refusal{Kind: RefusedInvalid, Field: "active", Reason: "the lifetime of a live change is where it takes effect: leave active out"}
	}
	key := map[string]string{TargetLink: "links", TargetPartition: "partitions", TargetProc: "crashes"}[c.Target]
	fields = cloneMap(fields)
	if c.Target == TargetPartition {
		if _, ok := fields["window"]; !ok {
			fields["window"] = []int{0, iv.cfg.Scenario.Steps}
		}
	}
	if c.Target == TargetProc {
		fields["episode"] = iv.next
	}
	doc, err := faultsDoc(prov.faults)
	if err != nil {
		return err
	}
	list, _ := doc[key].([]any)
	if c.Op == OpChange {
		// checked under a free name: the version's own comes when it is applied
		fields["name"] = "change-of-" + c.Name
	}
	doc[key] = append(list, fields)
	got, err := checkDoc(iv.cfg.Scenario, doc)
	if err != nil {
		return err
	}
	switch c.Target {
	case TargetLink:
		l := got.Links[len(got.Links)-1]
		if err := c.settleName(&l.Name, prov); err != nil {
			return err
		}
		c.link = &l
	case TargetPartition:
		p := got.Partitions[len(got.Partitions)-1]
		if err := c.settleName(&p.Name, prov); err != nil {
			return err
		}
		c.part = &p
	case TargetProc:
		cr := got.Crashes[len(got.Crashes)-1]
		c.crash = &cr
		c.Detail = fmt.Sprintf("killed at step %d, back at step %d (noise: %s)", cr.Step, cr.Restart, cr.Noise)
	}
	return nil
}

// settleName gives a changed rule or partition (name: its decoded name) the name it changes,
// takes a new one's name as the intervention's, and refuses a new one whose name was ever used.
func (c *change) settleName(name *string, prov faultState) error {
	if c.Op == OpChange {
		*name = c.Name
		return nil
	}
	c.Name = *name
	if _, used := prov.base[*name]; used && c.Op == OpAdd {
		return &Refusal{Kind: RefusedConflict, Field: "name", Reason: fmt.Sprintf("%q is already the name of a rule or partition of this run (names are never reused: the faults keep every version)", *name)}
	}
	return nil
}

// findCurrent checks that c names a rule (or partition) acting from the next episode on.
func (iv *Interventions) findCurrent(c *change, prov faultState) error {
	if currentVersion(prov, c.Target, c.Name) == "" {
		return &Refusal{Kind: RefusedNotFound, Field: "name", Reason: fmt.Sprintf("no %s named %q acts from episode %d on", c.Target, c.Name, iv.next)}
	}
	return nil
}

// currentVersion is the name of the version of the rule (or partition) known as name that acts
// to the end of the run ("" when none does).
func currentVersion(st faultState, target, name string) string {
	var names []string
	var lives []*scenario.Lifetime
	if target == TargetLink {
		for _, l := range st.faults.Links {
			names, lives = append(names, l.Name), append(lives, l.Active)
		}
	} else {
		for _, p := range st.faults.Partitions {
			names, lives = append(names, p.Name), append(lives, p.Active)
		}
	}
	for i, n := range names {
		if st.base[n] == name && (lives[i] == nil || lives[i].Until == nil) {
			return n
		}
	}
	return ""
}

// applyChange puts change c in st, taking effect at step point at.
func applyChange(st *faultState, c *change, at scenario.StepPoint) error {
	switch c.Target {
	case TargetProc:
		cr := *c.crash
		cr.Episode = at.Episode
		st.faults.Crashes = append(st.faults.Crashes, cr)
		c.Rule = "crashes[" + strconv.Itoa(len(st.faults.Crashes)-1) + "]"
		return nil
	case TargetLink, TargetPartition:
	default:
		return fmt.Errorf("interventions: unknown target %q", c.Target)
	}
	var old string
	if c.Op != OpAdd {
		if old = currentVersion(*st, c.Target, c.Name); old == "" {
			return &Refusal{Kind: RefusedNotFound, Field: "name", Reason: fmt.Sprintf("no %s named %q acts from episode %d on", c.Target, c.Name, at.Episode)}
		}
		endAt(st, c.Target, old, at)
	}
	if c.Op == OpRemove {
		c.Rule = old
		return nil
	}
	name := c.Name
	if c.Op == OpChange {
		name = freeName(st, c.Name)
	}
	from := at
	life := &scenario.Lifetime{From: &from}
	if c.Target == TargetLink {
		l := *c.link
		l.Name, l.Active = name, life
		st.faults.Links = append(st.faults.Links, l)
	} else {
		p := *c.part
		p.Name, p.Active = name, life
		p.Side = slices.Clone(p.Side)
		st.faults.Partitions = append(st.faults.Partitions, p)
	}
	st.base[name] = c.Name
	c.Rule = name
	return nil
}

// endAt ends the version named name at step point at: it lives until then, or, had it not
// begun yet, is gone.
func endAt(st *faultState, target, name string, at scenario.StepPoint) {
	end := func(a **scenario.Lifetime) bool {
		if *a != nil && (*a).From != nil && !(*a).From.Before(at) {
			return false // it would never act: drop it
		}
		if *a == nil {
			*a = &scenario.Lifetime{}
		}
		u := at
		(*a).Until = &u
		return true
	}
	if target == TargetLink {
		for i := range st.faults.Links {
			if st.faults.Links[i].Name == name && !end(&st.faults.Links[i].Active) {
				st.faults.Links = slices.Delete(st.faults.Links, i, i+1)
				delete(st.base, name)
				return
			}
		}
		return
	}
	for i := range st.faults.Partitions {
		if st.faults.Partitions[i].Name == name && !end(&st.faults.Partitions[i].Active) {
			st.faults.Partitions = slices.Delete(st.faults.Partitions, i, i+1)
			delete(st.base, name)
			return
		}
	}
}

// freeName is the next version name of base: base.v2, base.v3, ... (unused in st).
func freeName(st *faultState, base string) string {
	for k := 2; ; k++ {
		n := base + ".v" + strconv.Itoa(k)
		if _, used := st.base[n]; !used {
			return n
		}
	}
}

// faultsDoc is f as the generic document of a faults section (the "faults:" mapping).
func faultsDoc(f scenario.FaultsSpec) (map[string]any, error) {
	b, err := scenario.MarshalFaults(f)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Faults map[string]any `yaml:"faults"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("interventions: %w", err)
	}
	if doc.Faults == nil {
		doc.Faults = map[string]any{}
	}
	return doc.Faults, nil
}

// checkDoc validates a faults mapping for s with the scenario validator.
func checkDoc(s *scenario.Scenario, doc map[string]any) (scenario.FaultsSpec, error) {
	b, err := yaml.Marshal(map[string]any{"faults": doc})
	if err != nil {
		return scenario.FaultsSpec{}, &Refusal{Kind: RefusedInvalid, Reason: err.Error()}
	}
	f, err := scenario.DecodeFaults(s, b, "the change")
	var ve *scenario.ValidationError
	if errors.As(err, &ve) && len(ve.Problems) > 0 {
		p := ve.Problems[0]
		return f, &Refusal{Kind: RefusedInvalid, Field: p.Path, Reason: p.Message}
	}
	if err != nil {
		return f, &Refusal{Kind: RefusedInvalid, Reason: err.Error()}
	}
	return f, nil
}

// checkFaults validates the whole faults f for s (what faults.applied.yaml will hold).
func checkFaults(s *scenario.Scenario, f scenario.FaultsSpec) (scenario.FaultsSpec, error) {
	doc, err := faultsDoc(f)
	if err != nil {
		return f, err
	}
	return checkDoc(s, doc)
}

// startGroup puts the pending changes in force at step 0 of episode ep, the first episode of
// the next group the session starts, and returns that group: NextGroup among ep..end-1 with at
// most k in flight, on the faults as the changes left them (a crash added for ep makes it run
// alone, as a scenario's crash would). In force means: the faults file of a new generation
// beside the plan files, ctl.faults on ctl.episode (before the group's ctl.episode or
// ctl.episodes), the session's own plan (its crashes), the timeline. Without pending changes
// it only groups. A nil iv groups on the scenario's faults.
//
// A change never reaches a process after it began an episode the change covers (ep and later):
//   - PlayPoint starts one group at a time: it calls this only once Session.Group of the
//     previous group returned, i.e. once every process reported each of its episodes done
//     (awaitDone) or the point failed (and no group follows). No process is in an episode then.
//   - No process begins ep before it hears the group's ctl.episode(s), which Session.Group
//     publishes after this returns, on the same connection and subject as the ctl.faults: NATS
//     delivers one publisher's messages on a subject in order, and the process queues both in
//     arrival order in one channel (role subscribeCtl), so it applies the faults before it
//     takes the group, between groups (a process runs a group to its end before it reads the
//     next entry of that channel).
func (iv *Interventions) startGroup(s *Session, ep, end, k int) (Group, error) {
	if iv == nil {
		return NextGroup(&s.cfg.Plan.Scenario.Faults, ep, end, k), nil
	}
	iv.mu.Lock()
	// the episode's grid begins GridLead after its ctl.episode, sent after this: an earlier
	// origin makes a mid-episode change's step later, never earlier
	iv.sess, iv.epNow, iv.origin = s, ep, time.Now().Add(contract.GridLead)
	if len(iv.pending) == 0 {
		g := NextGroup(&iv.cur.faults, ep, end, k)
		iv.next = g.Last() + 1
		iv.mu.Unlock()
		return g, nil
	}
	st := iv.cur.clone()
	at := scenario.StepPoint{Episode: ep}
	for _, c := range iv.pending {
		if err := applyChange(&st, c, at); err != nil {
			iv.mu.Unlock()
			return Group{}, fmt.Errorf("intervention %d (%s %s %s): %w", c.ID, c.Op, c.Target, c.Name, err)
		}
	}
	if _, err := checkFaults(iv.cfg.Scenario, st.faults); err != nil {
		iv.mu.Unlock()
		return Group{}, fmt.Errorf("interventions at episode %d: %w", ep, err)
	}
	if err := iv.publish(s, st, at); err != nil {
		iv.mu.Unlock()
		return Group{}, err
	}
	s.setFaults(st.faults)
	iv.commit(iv.pending, st, at)
	g := NextGroup(&iv.cur.faults, ep, end, k)
	iv.pending, iv.next = nil, g.Last()+1
	all, faults := iv.list(), iv.cur.faults.Clone()
	iv.mu.Unlock()
	if iv.cfg.OnApply != nil {
		iv.cfg.OnApply(all, faults)
	}
	return g, nil
}

// end marks the point over: no change is taken any more, and those still pending never apply.
func (iv *Interventions) end() {
	if iv == nil {
		return
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.ended, iv.sess = true, nil
	for _, c := range iv.pending {
		c.Detail = strings.TrimSpace(c.Detail + " (not applied: the run ended first)")
	}
	iv.pending = nil
}

func procOf(c *change) string {
	if c.Target == TargetProc {
		return c.Name
	}
	return ""
}

// describe is an intervention as the timeline says it.
func describe(c *change) string {
	d := c.Op + " " + c.Target + " " + c.Name
	if c.Rule != "" && c.Rule != c.Name {
		d += " (" + c.Rule + ")"
	}
	if c.Detail != "" {
		d += ": " + c.Detail
	}
	return d
}

// setFaults puts the point's link rules, partitions and crashes as live changes left them in
// force in the session: the crashes it restarts come from them.
func (s *Session) setFaults(f scenario.FaultsSpec) {
	c := f.Clone()
	s.faults.live = &c
}
