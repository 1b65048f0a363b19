package trace

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
)

// ControlJoin joins the partial records of a cloud-control episode - the plant's (X, Yhat,
// Down), the cloud's (U, Xhat, Down) and the eavesdropper's (EveX0, EveMissing) - into full
// records by step, with Ref from the scenario's reference, and reports the pieces no role
// supplied. It is the one control join: the fast engine feeds it its cores' records as they
// are produced, MergeControlStreams the role processes' trace files, MergeControl slices.
//
// One episode at a time: Begin, the pieces in any order (Add), then Emit. It copies what it is
// given into buffers that are allocated on the first episode and reused: (T+1) x width per
// field, so an episode costs no allocation, whatever T. Not safe for concurrent use.
type ControlJoin struct {
	steps int
	ref   dynamics.Reference
	nref  int  // the reference's dimension (0: none)
	eve   bool // the eavesdropper's pieces are expected (reported missing when absent)
	ep    int

	x, yhat, u, xhat, eveX0 column
	refs                    []float64
	got                     [3][]bool // per role (plant, cloud, eavesdropper) and step: its record arrived
	eveMissing              []int
	down                    [][]string

	rec     ControlRecord
	missing []Missing
}

// controlRoles indexes ControlJoin.got.
var controlRoles = [3]endpoint.Role{endpoint.Plant, endpoint.Cloud, endpoint.Eavesdropper}

// NewControlJoin returns a join for a horizon of steps (T) steps: records t = 0..T. ref fills
// Ref (nil: left empty); eve says whether an eavesdropper ran (if not, its pieces are not
// reported missing).
func NewControlJoin(steps int, ref dynamics.Reference, eve bool) (*ControlJoin, error) {
	if steps < 1 {
		return nil, fmt.Errorf("trace: merge: horizon %d < 1", steps)
	}
	j := &ControlJoin{steps: steps, ref: ref, eve: eve, eveMissing: make([]int, steps+1), down: make([][]string, steps+1)}
	for _, c := range []*column{&j.x, &j.yhat, &j.u, &j.xhat, &j.eveX0} {
		c.has = make([]bool, steps+1)
	}
	for k := range j.got {
		j.got[k] = make([]bool, steps+1)
	}
	if d, ok := ref.(dynamics.Dimensioned); ok {
		j.nref = d.Dim()
	}
	return j, nil
}

// Begin starts episode ep, forgetting the previous one.
func (j *ControlJoin) Begin(ep int) {
	j.ep = ep
	for _, c := range []*column{&j.x, &j.yhat, &j.u, &j.xhat, &j.eveX0} {
		clear(c.has)
	}
	for k := range j.got {
		clear(j.got[k])
	}
	clear(j.eveMissing)
	for t := range j.down {
		j.down[t] = j.down[t][:0]
	}
}

// Add takes the fields of role from (endpoint.Plant, Cloud or Eavesdropper) of one partial
// record of the episode begun, copying them. A record of a step outside 0..T, of another
// episode, or a second record of a role for a step, is an error.
func (j *ControlJoin) Add(from endpoint.Role, r *ControlRecord) error {
	k := slices.Index(controlRoles[:], from)
	if k < 0 {
		return fmt.Errorf("trace: merge: a %s record in a cloud-control run", from)
	}
	if r.Episode < 0 || r.Step < 0 || r.Step > j.steps {
		return fmt.Errorf("trace: merge: %s record episode %d step %d outside 0..%d", from, r.Episode, r.Step, j.steps)
	}
	if r.Episode != j.ep {
		return fmt.Errorf("trace: merge: %s record of episode %d in episode %d", from, r.Episode, j.ep)
	}
	t := r.Step
	if j.got[k][t] {
		return fmt.Errorf("trace: merge: %s wrote episode %d step %d twice", from, r.Episode, t)
	}
	j.got[k][t] = true
	if t == j.steps && from != endpoint.Plant {
		return nil // the terminal record is the plant's alone
	}
	var err error
	switch from {
	case endpoint.Plant:
		err = j.put(&j.x, "x", t, r.X, j.put(&j.yhat, "yhat", t, r.Yhat, nil))
		j.down[t] = append(j.down[t], r.Down...)
	case endpoint.Cloud:
		err = j.put(&j.u, "u", t, r.U, j.put(&j.xhat, "xhat", t, r.Xhat, nil))
		j.down[t] = append(j.down[t], r.Down...)
	default:
		err = j.put(&j.eveX0, "eve_x0", t, r.EveX0, nil)
		j.eveMissing[t] = r.EveMissing
	}
	if err != nil {
		return fmt.Errorf("trace: merge: %s record episode %d step %d: %w", from, r.Episode, t, err)
	}
	return nil
}

// put copies v into column c at step t unless an earlier put failed (err).
func (j *ControlJoin) put(c *column, name string, t int, v []float64, err error) error {
	if err != nil {
		return err
	}
	return c.put(name, j.steps, t, v)
}

// Emit calls fn with the joined record of each step t = 0..T of the episode, in order, and the
// pieces missing from it: the plant's at t = 0..T, the cloud's and the eavesdropper's at
// t = 0..T-1 (the terminal record carries only X and Ref). The record and the list are views
// valid during the call only (Clone what you keep). fn's error stops it.
func (j *ControlJoin) Emit(fn func(r *ControlRecord, missing []Missing) error) error {
	T := j.steps
	for t := 0; t <= T; t++ {
		r := &j.rec
		*r = ControlRecord{Episode: j.ep, Step: t, X: j.x.at(t), EveMissing: j.eveMissing[t], Down: sortedOrNil(j.down[t])}
		j.missing = j.missing[:0]
		if !j.got[0][t] {
			j.missing = append(j.missing, Missing{j.ep, t, endpoint.Plant.String(), -1})
		}
		if t < T {
			r.Yhat, r.U, r.Xhat, r.EveX0 = j.yhat.at(t), j.u.at(t), j.xhat.at(t), j.eveX0.at(t)
			if !j.got[1][t] {
				j.missing = append(j.missing, Missing{j.ep, t, endpoint.Cloud.String(), -1})
			}
			if !j.got[2][t] && j.eve {
				j.missing = append(j.missing, Missing{j.ep, t, endpoint.Eavesdropper.String(), -1})
			}
		} else {
			r.EveMissing = 0
		}
		if n := j.nref; j.ref != nil {
			if n == 0 { // a reference that does not know its dimension has the state's
				n = len(r.X)
			}
			if n > 0 {
				if len(j.refs) != n {
					j.refs = make([]float64, n)
				}
				j.ref.At(t, j.refs)
				r.Ref = j.refs
			}
		}
		if err := fn(r, j.missing); err != nil {
			return err
		}
	}
	return nil
}

// column is one vector field of the records of an episode, (T+1) x w values stored by rows
// (a vector per step would cost a slice header and an allocation per step); w is the length
// of the first vector put, and every later one must have it.
type column struct {
	w   int
	v   []float64
	has []bool // step t's vector was put
}

func (c *column) put(name string, steps, t int, v []float64) error {
	if v == nil {
		return nil
	}
	if c.v == nil {
		c.w, c.v = len(v), make([]float64, (steps+1)*len(v))
	}
	if len(v) != c.w {
		return fmt.Errorf("%s has %d values, want %d", name, len(v), c.w)
	}
	copy(c.v[t*c.w:], v)
	c.has[t] = true
	return nil
}

// at returns step t's vector (a view), nil when none was put.
func (c *column) at(t int) []float64 {
	if !c.has[t] {
		return nil
	}
	return c.v[t*c.w : (t+1)*c.w : (t+1)*c.w]
}

// sortedOrNil is nil for an empty list (no field in the JSON), else the list sorted in place.
func sortedOrNil[T cmp.Ordered](v []T) []T {
	if len(v) == 0 {
		return nil
	}
	slices.Sort(v)
	return v
}

// ConsensusJoin joins the partial records of a consensus episode - each agent's x_i(t) and
// y_i(t) (AgentRecord, or a host's BlockRecord for several agents) and the eavesdropper's
// EveX0 - into ConsensusRecords by step, and reports the pieces no role supplied. It is the
// one consensus join: the fast engine feeds it its cores' records, MergeConsensusStreams the
// role processes' trace files, MergeConsensus slices.
//
// One episode at a time: Begin, the pieces in any order (Add...), and Emit releases, in step
// order, the steps whose pieces are all there (EmitComplete) or every remaining one (Emit).
// A step's buffers (O(n)) are taken from a pool when its first piece arrives and returned when
// it is released, so the memory is that of the steps between the first one not released and
// the latest one added (a reader that releases steps as they complete merges in O(n) memory
// whatever T), and an episode costs no allocation once the pool has grown. Not safe for
// concurrent use.
type ConsensusJoin struct {
	n, steps int
	eve      bool
	ep       int
	next     int // steps below are released
	window   []*consensusSlot
	pool     []*consensusSlot

	rec     ConsensusRecord
	down    []int
	missing []Missing
}

// consensusSlot gathers the pieces of one step's record.
type consensusSlot struct {
	x, y       []float64
	hx, hy     []bool
	down       []bool
	nx, ny     int       // agents with x, with y
	ndown      int       // agents down
	eve        []float64 // the eavesdropper's estimate, when eveX0
	eveMissing int
	hasEve     bool // its record arrived
	eveX0      bool // with an estimate (EveX0 not nil)
}

func (s *consensusSlot) reset() {
	clear(s.hx)
	clear(s.hy)
	if s.ndown > 0 { // a down flag is set only with ndown counted
		clear(s.down)
	}
	s.nx, s.ny, s.ndown, s.eveMissing, s.hasEve = 0, 0, 0, 0, false
}

// NewConsensusJoin returns a join for n agents and a horizon of steps (T) steps: records
// t = 0..T. eve says whether an eavesdropper ran (if not, its pieces are not reported missing).
func NewConsensusJoin(n, steps int, eve bool) (*ConsensusJoin, error) {
	if n < 1 || steps < 1 {
		return nil, fmt.Errorf("trace: merge: %d agents, horizon %d", n, steps)
	}
	return &ConsensusJoin{n: n, steps: steps, eve: eve, window: make([]*consensusSlot, steps+1), down: make([]int, 0, n)}, nil
}

// Begin starts episode ep, forgetting what was not released of the previous one.
func (j *ConsensusJoin) Begin(ep int) {
	j.ep, j.next = ep, 0
	for t, s := range j.window {
		if s != nil {
			j.pool = append(j.pool, s)
			j.window[t] = nil
		}
	}
}

// Reserve fills the pool with the buffers of k steps: a caller that holds whole episodes (the
// fast engine) reserves T+1 up front, so that its first episode allocates nothing either.
func (j *ConsensusJoin) Reserve(k int) {
	for range k - len(j.pool) {
		j.pool = append(j.pool, j.newSlot())
	}
}

func (j *ConsensusJoin) newSlot() *consensusSlot {
	n := j.n
	return &consensusSlot{x: make([]float64, n), y: make([]float64, n), eve: make([]float64, 0, n),
		hx: make([]bool, n), hy: make([]bool, n), down: make([]bool, n)}
}

// slot returns step t's slot, nil when t was released.
func (j *ConsensusJoin) slot(t int) *consensusSlot {
	if t < j.next {
		return nil
	}
	if j.window[t] == nil {
		if k := len(j.pool); k > 0 {
			j.window[t], j.pool = j.pool[k-1], j.pool[:k-1]
			j.window[t].reset()
		} else {
			j.window[t] = j.newSlot()
		}
	}
	return j.window[t]
}

// AddAgent takes agent r.Agent's x_i(t) and y_i(t) (y nil at t = T; a down agent released
// nothing: its entry of Y is 0 and the record lists it in Down). A record outside the
// episode's steps and agents, or a second one for an agent and step, is an error.
func (j *ConsensusJoin) AddAgent(r *AgentRecord) error {
	if r.Step < 0 || r.Step > j.steps || r.Agent < 0 || r.Agent >= j.n {
		return fmt.Errorf("trace: merge: agent record episode %d step %d agent %d outside 0..%d / 0..%d", r.Episode, r.Step, r.Agent, j.steps, j.n-1)
	}
	if r.Episode != j.ep {
		return fmt.Errorf("trace: merge: agent record of episode %d in episode %d", r.Episode, j.ep)
	}
	sl := j.slot(r.Step)
	if sl == nil || sl.hx[r.Agent] {
		return fmt.Errorf("trace: merge: agent %d wrote episode %d step %d twice", r.Agent, r.Episode, r.Step)
	}
	sl.x[r.Agent], sl.hx[r.Agent] = r.X, true
	sl.nx++
	switch {
	case r.Down: // nothing released: the entry is 0, and the record says so
		sl.y[r.Agent], sl.hy[r.Agent], sl.down[r.Agent] = 0, true, true
		sl.ny++
		sl.ndown++
	case r.Y != nil:
		sl.y[r.Agent], sl.hy[r.Agent] = *r.Y, true
		sl.ny++
	}
	return nil
}

// AddBlock takes a host's step: the AgentRecords of agents b.First.. at once.
func (j *ConsensusJoin) AddBlock(b *BlockRecord) error {
	last := b.First + len(b.X) - 1
	if b.Step < 0 || b.Step > j.steps || b.First < 0 || last >= j.n || (b.Y != nil && len(b.Y) != len(b.X)) {
		return fmt.Errorf("trace: merge: block record episode %d step %d agents %d..%d outside 0..%d / 0..%d", b.Episode, b.Step, b.First, last, j.steps, j.n-1)
	}
	if b.Episode != j.ep {
		return fmt.Errorf("trace: merge: block record of episode %d in episode %d", b.Episode, j.ep)
	}
	sl := j.slot(b.Step)
	if sl == nil {
		return fmt.Errorf("trace: merge: agent %d wrote episode %d step %d twice", b.First, b.Episode, b.Step)
	}
	hx := sl.hx[b.First : last+1]
	if slices.Contains(hx, true) { // one pass, vectorised: a block is thousands of agents
		k := slices.Index(hx, true)
		return fmt.Errorf("trace: merge: agent %d wrote episode %d step %d twice", b.First+k, b.Episode, b.Step)
	}
	copy(sl.x[b.First:], b.X)
	fill(hx)
	sl.nx += len(hx)
	if b.Y != nil {
		copy(sl.y[b.First:], b.Y)
		hy := sl.hy[b.First : last+1]
		fill(hy)
		sl.ny += len(hy)
	}
	return nil
}

// fill sets every flag of f (a loop the compiler turns into a memory set).
func fill(f []bool) {
	for k := range f {
		f[k] = true
	}
}

// AddEavesdropper takes the eavesdropper's EveX0 and EveMissing of one step (the view r.EveX0
// is kept until the step is released).
func (j *ConsensusJoin) AddEavesdropper(r *ConsensusRecord) error {
	if r.Step < 0 || r.Step > j.steps {
		return fmt.Errorf("trace: merge: eavesdropper record episode %d step %d outside 0..%d", r.Episode, r.Step, j.steps)
	}
	if r.Episode != j.ep {
		return fmt.Errorf("trace: merge: eavesdropper record of episode %d in episode %d", r.Episode, j.ep)
	}
	sl := j.slot(r.Step)
	if sl == nil || sl.hasEve {
		return fmt.Errorf("trace: merge: eavesdropper wrote episode %d step %d twice", r.Episode, r.Step)
	}
	sl.eve, sl.eveMissing, sl.hasEve, sl.eveX0 = append(sl.eve[:0], r.EveX0...), r.EveMissing, true, r.EveX0 != nil
	return nil
}

// complete reports whether step t has every piece.
func (j *ConsensusJoin) complete(t int) bool {
	sl, T := j.window[t], j.steps
	return sl != nil && sl.nx == j.n && (t == T || sl.ny == j.n) && (!j.eve || t == T || sl.hasEve)
}

// EmitComplete releases, in order, the next steps whose pieces are all there: fn gets each
// joined record (a view valid during the call) and an empty missing list.
func (j *ConsensusJoin) EmitComplete(fn func(r *ConsensusRecord, missing []Missing) error) error {
	for ; j.next <= j.steps && j.complete(j.next); j.next++ {
		if err := j.emit(j.next, fn); err != nil {
			j.next++
			return err
		}
	}
	return nil
}

// Emit releases every step not released yet, complete or not, in order: a missing agent's
// value leaves the record's X (or Y) nil, so that the Accumulator counts the episode as
// incomplete instead of aggregating a partial state; Y is nil at T.
func (j *ConsensusJoin) Emit(fn func(r *ConsensusRecord, missing []Missing) error) error {
	for ; j.next <= j.steps; j.next++ {
		if err := j.emit(j.next, fn); err != nil {
			j.next++
			return err
		}
	}
	return nil
}

// emit releases step t and returns its slot to the pool.
func (j *ConsensusJoin) emit(t int, fn func(r *ConsensusRecord, missing []Missing) error) error {
	sl, T, ep := j.window[t], j.steps, j.ep
	j.rec = ConsensusRecord{Episode: ep, Step: t}
	rec := &j.rec
	j.missing = j.missing[:0]
	if sl == nil || sl.nx < j.n || (t < T && sl.ny < j.n) { // else no agent is missing
		for i := 0; i < j.n; i++ {
			if sl == nil || !sl.hx[i] || (t < T && !sl.hy[i]) {
				j.missing = append(j.missing, Missing{ep, t, endpoint.Agent.String(), i})
			}
		}
	}
	if sl != nil {
		if sl.nx == j.n {
			rec.X = sl.x
		}
		if t < T && sl.ny == j.n {
			rec.Y = sl.y
		}
		if sl.ndown > 0 {
			j.down = j.down[:0]
			for i, d := range sl.down {
				if d {
					j.down = append(j.down, i)
				}
			}
			rec.Down = j.down // in agent order
		}
	}
	if t < T {
		if sl != nil && sl.hasEve {
			rec.EveMissing = sl.eveMissing
			if sl.eveX0 {
				rec.EveX0 = sl.eve
			}
		} else if j.eve {
			j.missing = append(j.missing, Missing{ep, t, endpoint.Eavesdropper.String(), -1})
		}
	}
	err := fn(rec, j.missing)
	if sl != nil {
		j.pool = append(j.pool, sl)
		j.window[t] = nil
	}
	return err
}
