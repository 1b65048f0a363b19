package trace

import (
	"slices"

	"github.com/dpsim/dpsim/pkg/fault"
)

// ControlRecord is one step of a cloud-control episode. Every field is written by exactly one role,
// so the NATS processes each write partial records that MergeControl joins:
//
//	plant:        X (x(t), the true state: never on the bus), Yhat (yhat(t) = C x(t) + gamma(t))
//	cloud:        U (u(t)), Xhat (xhat(t), the estimate u(t) was computed from)
//	eavesdropper: EveX0 (its x(0) estimate from yhat(0..t), u(0..t-1); nil while not identifiable)
//	scenario:     Ref (x_r(t)), filled in by MergeControl or the engine
//
// Steps run t = 0..T-1; a terminal record at Step = T carries only X = x(T) (and Ref = x_r(T)).
type ControlRecord struct {
	Episode int       `json:"episode"`          // the episode, 0-based
	Step    int       `json:"step"`             // the step t, 0..T (T: the terminal record)
	X       []float64 `json:"x,omitempty"`      // plant: x(t), the true state (never on the bus)
	Ref     []float64 `json:"ref,omitempty"`    // scenario: the reference x_r(t) (merged records only)
	Yhat    []float64 `json:"yhat,omitempty"`   // plant: yhat(t) = C x(t) + gamma(t), as released
	U       []float64 `json:"u,omitempty"`      // cloud: u(t), as released
	Xhat    []float64 `json:"xhat,omitempty"`   // cloud: xhat(t), the estimate u(t) was computed from
	EveX0   []float64 `json:"eve_x0,omitempty"` // eavesdropper: its x(0) estimate; absent while not identifiable
	// EveMissing is how many of the step's messages the eavesdropper did not receive (its gap).
	EveMissing int `json:"eve_missing,omitempty"`
	// Down names the roles whose process was down at this step (faults.crashes): a down
	// plant's X is its frozen state and it released no Yhat; a down cloud released no U.
	Down []string `json:"down,omitempty"`
}

// ConsensusRecord is one step of a consensus episode: X = x(t) and Y = y(t) over all agents (each
// agent writes its own entries, see AgentRecord), EveX0 the eavesdropper's estimate of x(0) from
// y(0..t). Steps run t = 0..T-1; the terminal record at Step = T carries only X = x(T).
type ConsensusRecord struct {
	Episode int       `json:"episode"`          // the episode, 0-based
	Step    int       `json:"step"`             // the step t, 0..T (T: the terminal record)
	X       []float64 `json:"x,omitempty"`      // x(t): every agent's state, agent 0 first
	Y       []float64 `json:"y,omitempty"`      // y(t): every agent's released y_i(t)
	EveX0   []float64 `json:"eve_x0,omitempty"` // eavesdropper: its estimate of x(0) from y(0..t)
	// EveMissing is how many agents' y_i(t) the eavesdropper did not receive (its gap).
	EveMissing int `json:"eve_missing,omitempty"`
	// Down lists the agents whose process was down at this step (faults.crashes): their X is
	// frozen and their Y entry is 0 (nothing was released).
	Down []int `json:"down,omitempty"`
}

// AgentRecord is what agent i writes for one step: its state x_i(t) and message y_i(t) (Y is nil at
// the terminal step T, where nothing is published). MergeConsensus assembles ConsensusRecords.
type AgentRecord struct {
	Episode int      `json:"episode"`        // the episode, 0-based
	Step    int      `json:"step"`           // the step t, 0..T (T: the terminal record)
	Agent   int      `json:"agent"`          // the agent's index i
	X       float64  `json:"x"`              // x_i(t), the agent's state
	Y       *float64 `json:"y,omitempty"`    // y_i(t) = x_i(t) + gamma_i(t) as released; absent at t = T
	Down    bool     `json:"down,omitempty"` // the agent's process was down: nothing released
}

// Clone returns a deep copy of r.
func (r *ControlRecord) Clone() ControlRecord {
	return ControlRecord{Episode: r.Episode, Step: r.Step, X: slices.Clone(r.X), Ref: slices.Clone(r.Ref),
		Yhat: slices.Clone(r.Yhat), U: slices.Clone(r.U), Xhat: slices.Clone(r.Xhat), EveX0: slices.Clone(r.EveX0),
		EveMissing: r.EveMissing, Down: slices.Clone(r.Down)}
}

// Clone returns a deep copy of r.
func (r *ConsensusRecord) Clone() ConsensusRecord {
	return ConsensusRecord{Episode: r.Episode, Step: r.Step, X: slices.Clone(r.X), Y: slices.Clone(r.Y),
		EveX0: slices.Clone(r.EveX0), EveMissing: r.EveMissing, Down: slices.Clone(r.Down)}
}

// BlockRecord is what an agent host writes for one step: the states X and messages Y of its
// agents First, First+1, ..., First+len(X)-1 (Y nil at the terminal step T). It stands for
// len(X) AgentRecords - a host's step is one record, not one per agent - and is written to
// traces as those (AppendAgents).
type BlockRecord struct {
	Episode, Step, First int
	X, Y                 []float64
}

// AppendAgents appends the block's AgentRecords to dst (their Y point into b.Y).
func (b *BlockRecord) AppendAgents(dst []AgentRecord) []AgentRecord {
	for k, x := range b.X {
		r := AgentRecord{Episode: b.Episode, Step: b.Step, Agent: b.First + k, X: x}
		if b.Y != nil {
			r.Y = &b.Y[k]
		}
		dst = append(dst, r)
	}
	return dst
}

// Record is the set of trace record types.
type Record interface {
	ControlRecord | ConsensusRecord | AgentRecord
}

// Traces holds the per-step records of the episodes a run kept, in (episode, step) order.
type Traces struct {
	Control   []ControlRecord   `json:"control,omitempty"`
	Consensus []ConsensusRecord `json:"consensus,omitempty"`
	// Faults is what the injector did to the messages of these episodes: one event per
	// message whose fate on a link was not "on time, once", in release order.
	Faults []fault.Event `json:"faults,omitempty"`
}
