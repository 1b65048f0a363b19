package sim

import (
	"fmt"

	"math/rand/v2"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/rng"
)

// CoreState is a core's checkpoint: everything a restarted process needs to continue the core
// where it stopped - its state, what it holds of its inputs, its counters and the episode's
// noise draw. It is plain data (JSON): the role process writes it to an fsync'd file before it
// is killed (faults.crashes), and its successor restores it.
type CoreState struct {
	Endpoint string `json:"endpoint"`
	Episode  int    `json:"episode"`
	Step     int    `json:"step"` // the step the core waits on (Cur)
	Crashed  bool   `json:"crashed"`
	Redraw   bool   `json:"redraw,omitempty"`
	Done     bool   `json:"done,omitempty"`
	// X is the state: the plant's x(t), the cloud's observer estimate xhat(t), agent i's [x_i(t)].
	X []float64 `json:"x"`
	// Held is what the core keeps between steps: the plant's u (its hold rule), an agent's
	// own last message [y_i].
	Held []float64 `json:"held,omitempty"`
	// ArithmeticStep is the arithmetic's step counter (Plant.Step, Agent.Step); Eta the
	// episode's noise draw (structured noise), NoiseStep the noise stream's position.
	ArithmeticStep int       `json:"node_step"`
	Eta            []float64 `json:"eta,omitempty"`
	NoiseStep      int       `json:"noise_step"`
	// The secure sampler's position (docs/math.md section 10): its generator's state (ChaCha8,
	// binary), the stream's state, and the public part of the release (the plant's x_np(t), an
	// agent's [pub(t)]). Absent for the float sampler, whose stream is replayed from its path.
	Generator []byte             `json:"generator,omitempty"`
	Secure    *noise.SecureState `json:"secure,omitempty"`
	Public    []float64          `json:"public,omitempty"`

	Senders    []SenderState     `json:"senders"`
	Ahead      []Msg             `json:"ahead,omitempty"`
	Links      []fault.LinkStats `json:"links"`
	Unexpected uint64            `json:"unexpected"`
	Stale      uint64            `json:"stale,omitempty"`
	// PrevEpisode is the episode whose copies' digests are in SenderState.Prev (-1: none).
	PrevEpisode int `json:"prev_episode"`
}

// SenderState is what a core knows of one expected sender.
type SenderState struct {
	NewestStep int       `json:"newest_step"`
	Newest     []float64 `json:"newest,omitempty"`
	Seen       []uint64  `json:"seen"`
	Have       bool      `json:"have,omitempty"`
	Done       bool      `json:"done,omitempty"`
	Vals       []float64 `json:"vals,omitempty"`
	// Used and Prev are the digests of the first copy of each step in this and the previous
	// episode (conflict detection; absent when the core keeps none).
	Used []uint64 `json:"used,omitempty"`
	Prev []uint64 `json:"prev,omitempty"`
}

// Checkpointer is implemented by the cores a crash can stop (plant, cloud, agent).
type Checkpointer interface {
	Core
	// Checkpoint returns the core's state (copies).
	Checkpoint() *CoreState
	// Restore puts a fresh core (same plan, same endpoint) in the state st.
	Restore(st *CoreState) error
}

func (b *base) checkpoint() *CoreState {
	in := b.in
	st := &CoreState{Endpoint: b.self.String(), Episode: in.ep, Step: in.cur, Crashed: b.crashed, Redraw: b.redraw, Done: b.done,
		Links: append([]fault.LinkStats(nil), in.stats...), Unexpected: in.unexpected, Stale: in.stale, PrevEpisode: in.prevEp}
	for k := range in.from {
		f := &in.from[k]
		st.Senders = append(st.Senders, SenderState{NewestStep: f.nstep, Newest: clone(f.newestVals()), Seen: clone(f.seen),
			Have: f.have, Done: f.done, Vals: clone(f.vals), Used: clone(f.used), Prev: clone(f.prev)})
	}
	for _, m := range in.ahead {
		m.Values = clone(m.Values)
		m.Except = append([]endpoint.Endpoint(nil), m.Except...)
		st.Ahead = append(st.Ahead, m)
	}
	return st
}

func clone[T any](v []T) []T {
	if v == nil {
		return nil
	}
	return append([]T(nil), v...)
}

func (b *base) restore(st *CoreState) error {
	if st.Endpoint != b.self.String() {
		return fmt.Errorf("sim: checkpoint of %s restored into %s", st.Endpoint, b.self)
	}
	in := b.in
	if len(st.Senders) != len(in.from) || len(st.Links) != len(in.stats) {
		return fmt.Errorf("sim: %s: checkpoint has %d senders, the core %d", b.self, len(st.Senders), len(in.from))
	}
	if st.Step < 0 || st.Step > b.T {
		return fmt.Errorf("sim: %s: checkpoint step %d outside 0..%d", b.self, st.Step, b.T)
	}
	b.beginBase(st.Episode) // down windows of the episode
	in.cur, in.ndone, in.nhave = st.Step, 0, 0
	for k, s := range st.Senders {
		f := &in.from[k]
		if len(s.Seen) != len(f.seen) {
			return fmt.Errorf("sim: %s: checkpoint sender %d: %d words of seen steps, want %d", b.self, k, len(s.Seen), len(f.seen))
		}
		f.nstep, f.newest, f.have, f.done, f.vals, f.fresh = s.NewestStep, clone(s.Newest), s.Have, s.Done, clone(s.Vals), false
		copy(f.seen, s.Seen)
		if (s.Used != nil || s.Prev != nil) && (len(s.Used) != len(f.used) || len(s.Prev) != len(f.prev)) {
			return fmt.Errorf("sim: %s: checkpoint sender %d: %d and %d copy digests, want %d", b.self, k, len(s.Used), len(s.Prev), len(f.used))
		}
		copy(f.used, s.Used)
		copy(f.prev, s.Prev)
		if f.done {
			in.ndone++
		}
		if f.have {
			in.nhave++
		}
	}
	copy(in.stats, st.Links)
	in.unexpected, in.stale, in.prevEp = st.Unexpected, st.Stale, st.PrevEpisode
	in.ahead = append(in.ahead[:0], st.Ahead...)
	b.crashed, b.redraw, b.done = st.Crashed, st.Redraw, st.Done
	return nil
}

// resumeNoise puts a noise stream at step t of episode ep with the checkpoint's draw eta: the
// stream is reset from its episode path (what an i.i.d. stream replays), the structured
// stream's draw replaced by eta, and t steps are passed.
func resumeNoise(s noise.Stream, path func() *rand.Rand, eta []float64, t int, scratch []float64) error {
	s.Reset(path())
	if eta != nil {
		ss, ok := s.(*noise.StructuredStream)
		if !ok {
			return fmt.Errorf("sim: the checkpoint has a noise draw, the stream draws none")
		}
		if err := ss.SetEta(eta); err != nil {
			return err
		}
	}
	for k := 0; k < t; k++ {
		s.Next(scratch)
	}
	return nil
}

// etaOf returns a copy of a stream's once-per-episode draw (nil: none).
func etaOf(s noise.Stream) []float64 {
	if a, ok := s.(noise.Auditable); ok {
		return a.Eta()
	}
	return nil
}

// noiseStep returns the position of a stream (the next t Next writes).
func noiseStep(s noise.Stream) int {
	if a, ok := s.(noise.Auditable); ok {
		return a.Step()
	}
	return 0
}

// Checkpoint implements Checkpointer.
func (c *PlantCore) Checkpoint() *CoreState {
	st := c.checkpoint()
	n := c.plant
	st.X, st.Held, st.ArithmeticStep = clone(n.State()), clone(c.u), n.t
	if n.secure != nil {
		st.Generator, st.Secure, st.Public = generatorState(n.secureSource()), n.secure.State(), clone(n.np.State())
		return st
	}
	st.Eta, st.NoiseStep = etaOf(n.noise), noiseStep(n.noise)
	return st
}

// Restore implements Checkpointer.
func (c *PlantCore) Restore(st *CoreState) error {
	if err := c.restore(st); err != nil {
		return err
	}
	n := c.plant
	if len(st.X) != n.nx || len(st.Held) != len(c.u) {
		return fmt.Errorf("sim: plant: checkpoint state has %d values (want %d), input %d (want %d)", len(st.X), n.nx, len(st.Held), len(c.u))
	}
	n.plant.Reset(st.X)
	copy(c.u, st.Held)
	n.episode, n.t = st.Episode, st.ArithmeticStep
	if n.secure != nil {
		if len(st.Public) != n.nx {
			return fmt.Errorf("sim: plant: checkpoint has %d public state values, want %d", len(st.Public), n.nx)
		}
		n.np.Reset(st.Public)
		n.src = &n.chacha
		return resumeSecure(n.secure, &n.chacha, st)
	}
	return resumeNoise(n.noise, func() *rand.Rand { return rng.NewNoise(n.seed, rng.Label(LabelPlant), 0, uint64(st.Episode)) },
		st.Eta, st.NoiseStep, n.gamma)
}

// Checkpoint implements Checkpointer.
func (c *CloudCore) Checkpoint() *CoreState {
	st := c.checkpoint()
	st.X, st.Held = clone(c.ctl.ctl.Estimate()), clone(c.ctl.used)
	return st
}

// Restore implements Checkpointer.
func (c *CloudCore) Restore(st *CoreState) error {
	if err := c.restore(st); err != nil {
		return err
	}
	if len(st.X) != c.ctl.nx || len(st.Held) != c.ctl.nx {
		return fmt.Errorf("sim: cloud: checkpoint estimate has %d values, want %d", len(st.X), c.ctl.nx)
	}
	c.ctl.ctl.Reset(st.X)
	copy(c.ctl.used, st.Held)
	c.ctl.episode = st.Episode
	return nil
}

// Checkpoint implements Checkpointer.
func (c *AgentCore) Checkpoint() *CoreState {
	st := c.checkpoint()
	n := c.agent
	st.X, st.Held, st.ArithmeticStep = []float64{n.State()}, []float64{c.y}, n.t
	if n.secure != nil {
		st.Generator, st.Secure, st.Public = generatorState(n.secureSource()), n.secure.State(), []float64{n.pub}
		return st
	}
	st.Eta, st.NoiseStep = etaOf(n.noise), noiseStep(n.noise)
	return st
}

// Restore implements Checkpointer.
func (c *AgentCore) Restore(st *CoreState) error {
	if err := c.restore(st); err != nil {
		return err
	}
	n := c.agent
	if len(st.X) != 1 || len(st.Held) != 1 {
		return fmt.Errorf("sim: agent %d: checkpoint state has %d values, want 1", n.i, len(st.X))
	}
	n.agent.Reset(st.X[0])
	c.y = st.Held[0]
	n.episode, n.t = st.Episode, st.ArithmeticStep
	if n.secure != nil {
		if len(st.Public) != 1 {
			return fmt.Errorf("sim: agent %d: checkpoint has %d public values, want 1", n.i, len(st.Public))
		}
		n.pub = st.Public[0]
		n.src = &n.chacha
		return resumeSecure(n.secure, &n.chacha, st)
	}
	return resumeNoise(n.noise, func() *rand.Rand { return rng.NewNoise(n.seed, rng.Label(LabelAgent), uint64(n.i), uint64(st.Episode)) },
		st.Eta, st.NoiseStep, n.gamma[:])
}

// generatorState is the binary state of the secure stream's generator (nil if it has none).
func generatorState(c *rand.ChaCha8) []byte {
	if c == nil {
		return nil
	}
	b, err := c.MarshalBinary()
	if err != nil {
		return nil // ChaCha8 always marshals
	}
	return b
}

// resumeSecure puts a secure stream where the checkpoint left it: the generator's state into
// chacha (which the stream then reads), and the stream's own state.
func resumeSecure(s *noise.SecureStream, chacha *rand.ChaCha8, st *CoreState) error {
	if st.Secure == nil || st.Generator == nil {
		return fmt.Errorf("sim: the checkpoint has no secure noise state (written by a float-sampler process?)")
	}
	if err := chacha.UnmarshalBinary(st.Generator); err != nil {
		return fmt.Errorf("sim: checkpoint generator: %w", err)
	}
	return s.Restore(chacha, st.Secure)
}
