package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dpsim/dpsim/pkg/dynamics"
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
	Episode int       `json:"episode"`
	Step    int       `json:"step"`
	X       []float64 `json:"x,omitempty"`
	Ref     []float64 `json:"ref,omitempty"`
	Yhat    []float64 `json:"yhat,omitempty"`
	U       []float64 `json:"u,omitempty"`
	Xhat    []float64 `json:"xhat,omitempty"`
	EveX0   []float64 `json:"eve_x0,omitempty"`
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
	Episode int       `json:"episode"`
	Step    int       `json:"step"`
	X       []float64 `json:"x,omitempty"`
	Y       []float64 `json:"y,omitempty"`
	EveX0   []float64 `json:"eve_x0,omitempty"`
	// EveMissing is how many agents' y_i(t) the eavesdropper did not receive (its gap).
	EveMissing int `json:"eve_missing,omitempty"`
	// Down lists the agents whose process was down at this step (faults.crashes): their X is
	// frozen and their Y entry is 0 (nothing was released).
	Down []int `json:"down,omitempty"`
}

// AgentRecord is what agent i writes for one step: its state x_i(t) and message y_i(t) (Y is nil at
// the terminal step T, where nothing is published). MergeConsensus assembles ConsensusRecords.
type AgentRecord struct {
	Episode int      `json:"episode"`
	Step    int      `json:"step"`
	Agent   int      `json:"agent"`
	X       float64  `json:"x"`
	Y       *float64 `json:"y,omitempty"`
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

// TraceWriter writes records as JSON lines (one JSON object per line, fields as in the struct tags).
// Floats are written in the shortest form that round-trips, so ReadTrace gives back the same bits.
// Non-finite values cannot be encoded and are an error naming the record.
type TraceWriter[R Record] struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

// NewTraceWriter returns a writer to w; call Flush at the end.
func NewTraceWriter[R Record](w io.Writer) *TraceWriter[R] {
	tw := &TraceWriter[R]{w: bufio.NewWriterSize(w, 1<<16)}
	tw.enc = json.NewEncoder(&tw.buf)
	return tw
}

// Write appends one record as a line.
func (tw *TraceWriter[R]) Write(r *R) error {
	tw.buf.Reset()
	if err := tw.enc.Encode(r); err != nil {
		return fmt.Errorf("sim: trace record %d (%s): %w", tw.n, recordKey(r), err)
	}
	if _, err := tw.w.Write(tw.buf.Bytes()); err != nil {
		return fmt.Errorf("sim: trace record %d: %w", tw.n, err)
	}
	tw.n++
	return nil
}

// Flush writes buffered lines to the underlying writer.
func (tw *TraceWriter[R]) Flush() error {
	if err := tw.w.Flush(); err != nil {
		return fmt.Errorf("sim: trace: %w", err)
	}
	return nil
}

// Count returns the number of records written.
func (tw *TraceWriter[R]) Count() int { return tw.n }

func recordKey(r any) string {
	switch v := r.(type) {
	case *ControlRecord:
		return fmt.Sprintf("episode %d step %d", v.Episode, v.Step)
	case *ConsensusRecord:
		return fmt.Sprintf("episode %d step %d", v.Episode, v.Step)
	case *AgentRecord:
		return fmt.Sprintf("episode %d step %d agent %d", v.Episode, v.Step, v.Agent)
	}
	return "?"
}

// WriteTrace writes recs as JSON lines to w.
func WriteTrace[R Record](w io.Writer, recs []R) error {
	tw := NewTraceWriter[R](w)
	for i := range recs {
		if err := tw.Write(&recs[i]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// MaxTraceLine is the longest line ReadTrace accepts (bytes).
const MaxTraceLine = 64 << 20

// ReadTrace reads JSON-lines records written by WriteTrace (or a TraceWriter). Blank lines are
// skipped; unknown fields and malformed lines are errors naming the line.
func ReadTrace[R Record](r io.Reader) ([]R, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), MaxTraceLine)
	var out []R
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var rec R
		if err := dec.Decode(&rec); err != nil {
			return out, fmt.Errorf("sim: trace line %d: %w", line, err)
		}
		if dec.More() {
			return out, fmt.Errorf("sim: trace line %d: more than one JSON value", line)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("sim: trace line %d: %w", line+1, err)
	}
	return out, nil
}

// Missing names a piece of a record that no role supplied.
type Missing struct {
	Episode int    `json:"episode"`
	Step    int    `json:"step"`
	Role    string `json:"role"`
	Agent   int    `json:"agent"` // the agent for Role "agent", else -1
}

func (m Missing) String() string {
	if m.Role == RoleAgent.String() {
		return fmt.Sprintf("episode %d step %d: agent %d", m.Episode, m.Step, m.Agent)
	}
	return fmt.Sprintf("episode %d step %d: %s", m.Episode, m.Step, m.Role)
}

type key struct{ ep, step int }

func sortedKeys[V any](m map[key]V) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b key) int {
		if a.ep != b.ep {
			return a.ep - b.ep
		}
		return a.step - b.step
	})
	return ks
}

func episodesOf(parts ...map[key]bool) []int {
	seen := map[int]bool{}
	for _, p := range parts {
		for k := range p {
			seen[k.ep] = true
		}
	}
	eps := make([]int, 0, len(seen))
	for e := range seen {
		eps = append(eps, e)
	}
	slices.Sort(eps)
	return eps
}

// MergeControl joins the partial records of the plant (X, Yhat), the cloud (U, Xhat) and the
// eavesdropper (EveX0) by (episode, step), taking from each part only its own fields, and fills Ref
// from ref (nil: left empty). steps is the horizon T. For every episode that appears in any part it
// returns records for t = 0..T and lists what is missing: the plant at t = 0..T, the cloud and the
// eavesdropper at t = 0..T-1 (pass eve == nil when no eavesdropper ran: then it is not reported).
// Duplicate (episode, step) records of one role and steps outside 0..T are errors.
func MergeControl(steps int, ref dynamics.Reference, plant, cloud, eve []ControlRecord) ([]ControlRecord, []Missing, error) {
	if steps < 1 {
		return nil, nil, fmt.Errorf("sim: merge: horizon %d < 1", steps)
	}
	index := func(role string, recs []ControlRecord) (map[key]*ControlRecord, map[key]bool, error) {
		m := make(map[key]*ControlRecord, len(recs))
		seen := make(map[key]bool, len(recs))
		for i := range recs {
			r := &recs[i]
			k := key{r.Episode, r.Step}
			if r.Episode < 0 || r.Step < 0 || r.Step > steps {
				return nil, nil, fmt.Errorf("sim: merge: %s record episode %d step %d outside 0..%d", role, r.Episode, r.Step, steps)
			}
			if seen[k] {
				return nil, nil, fmt.Errorf("sim: merge: %s wrote episode %d step %d twice", role, r.Episode, r.Step)
			}
			m[k], seen[k] = r, true
		}
		return m, seen, nil
	}
	pm, ps, err := index(RolePlant.String(), plant)
	if err != nil {
		return nil, nil, err
	}
	cm, cs, err := index(RoleCloud.String(), cloud)
	if err != nil {
		return nil, nil, err
	}
	em, es, err := index(RoleEavesdropper.String(), eve)
	if err != nil {
		return nil, nil, err
	}
	var out []ControlRecord
	var missing []Missing
	nref := 0
	if d, ok := ref.(dynamics.Dimensioned); ok {
		nref = d.Dim()
	}
	for _, ep := range episodesOf(ps, cs, es) {
		for t := 0; t <= steps; t++ {
			k := key{ep, t}
			r := ControlRecord{Episode: ep, Step: t}
			if p := pm[k]; p != nil {
				r.X = p.X
				if t < steps {
					r.Yhat = p.Yhat
				}
				r.Down = append(r.Down, p.Down...)
			} else {
				missing = append(missing, Missing{ep, t, RolePlant.String(), -1})
			}
			if t < steps {
				if c := cm[k]; c != nil {
					r.U, r.Xhat = c.U, c.Xhat
					r.Down = append(r.Down, c.Down...)
				} else {
					missing = append(missing, Missing{ep, t, RoleCloud.String(), -1})
				}
				if e := em[k]; e != nil {
					r.EveX0, r.EveMissing = e.EveX0, e.EveMissing
				} else if eve != nil {
					missing = append(missing, Missing{ep, t, RoleEavesdropper.String(), -1})
				}
			}
			slices.Sort(r.Down)
			if ref != nil {
				n := nref
				if n == 0 {
					n = len(r.X)
				}
				if n > 0 {
					r.Ref = make([]float64, n)
					ref.At(t, r.Ref)
				}
			}
			out = append(out, r)
		}
	}
	return out, missing, nil
}

// MergeConsensus assembles ConsensusRecords of n agents from the agents' AgentRecords and the
// eavesdropper's partial ConsensusRecords (EveX0 only; nil when no eavesdropper ran), for t = 0..T
// of every episode that appears, in (episode, step) order. When an agent's value is missing it is
// reported and the record's X (or Y) is left nil: the Accumulator then counts the episode as
// incomplete instead of aggregating a partial state. Y is nil at the terminal step T. The records
// may come in any order; the merge is MergeConsensusStreams' over the records sorted by episode.
func MergeConsensus(n, steps int, agents []AgentRecord, eve []ConsensusRecord) ([]ConsensusRecord, []Missing, error) {
	byEpisode := func(a, b int) int { return a - b }
	as := slices.Clone(agents)
	slices.SortStableFunc(as, func(a, b AgentRecord) int { return byEpisode(a.Episode, b.Episode) })
	var es recordStream[ConsensusRecord]
	if eve != nil {
		ev := slices.Clone(eve)
		slices.SortStableFunc(ev, func(a, b ConsensusRecord) int { return byEpisode(a.Episode, b.Episode) })
		es = &sliceStream[ConsensusRecord]{recs: ev}
	}
	var out []ConsensusRecord
	var missing []Missing
	err := mergeConsensus(n, steps, []recordStream[AgentRecord]{&sliceStream[AgentRecord]{recs: as}}, nil, es,
		func(r *ConsensusRecord, ms []Missing) error {
			out = append(out, r.Clone())
			missing = append(missing, ms...)
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	return out, missing, nil
}

// errMissing is wrapped by MissingError.
var errMissing = errors.New("missing record pieces")

// MissingError summarises a non-empty Missing list as an error (nil when none is missing).
func MissingError(ms []Missing) error { return MissingErrorN(ms, len(ms)) }

// MissingErrorN is MissingError for a list that holds the first pieces of total missing ones
// (a caller that keeps only the head of a long list).
func MissingErrorN(ms []Missing, total int) error {
	total = max(total, len(ms))
	if total == 0 {
		return nil
	}
	const show = 5
	parts := make([]string, 0, show)
	for i, m := range ms {
		if i == show {
			break
		}
		parts = append(parts, m.String())
	}
	more := ""
	if total > len(parts) {
		more = fmt.Sprintf(" and %d more", total-len(parts))
	}
	return fmt.Errorf("sim: %w: %v%s", errMissing, parts, more)
}

// TraceReader reads JSON-lines records (as ReadTrace) one at a time, so that a trace file of
// any length is read in constant memory. The records of a role process's trace are grouped
// by episode in increasing order (a process runs its episodes one after the other), which is
// what ReadEpisode and the stream merges rely on.
type TraceReader[R Record] struct {
	sc   *bufio.Scanner
	line int
	head R
	has  bool // head holds the next record
	err  error
	eof  bool
	last int // episode of the last record returned (-1: none)
}

// NewTraceReader returns a reader of the records in r.
func NewTraceReader[R Record](r io.Reader) *TraceReader[R] {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), MaxTraceLine)
	return &TraceReader[R]{sc: sc, last: -1}
}

// fill reads the next record into head; at the end or on an error has stays false.
func (tr *TraceReader[R]) fill() {
	for !tr.has && !tr.eof && tr.err == nil {
		if !tr.sc.Scan() {
			if err := tr.sc.Err(); err != nil {
				tr.err = fmt.Errorf("sim: trace line %d: %w", tr.line+1, err)
			}
			tr.eof = true
			return
		}
		tr.line++
		b := bytes.TrimSpace(tr.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var rec R
		if err := dec.Decode(&rec); err != nil {
			tr.err = fmt.Errorf("sim: trace line %d: %w", tr.line, err)
			return
		}
		if dec.More() {
			tr.err = fmt.Errorf("sim: trace line %d: more than one JSON value", tr.line)
			return
		}
		tr.head, tr.has = rec, true
	}
}

// Peek returns the episode of the next record; ok is false at the end of the records or
// after an error (see Err).
func (tr *TraceReader[R]) Peek() (episode int, ok bool) {
	tr.fill()
	if !tr.has {
		return 0, false
	}
	return episodeOf(&tr.head), true
}

// Read returns the next record; io.EOF at the end, or the error that stopped the reader.
func (tr *TraceReader[R]) Read() (R, error) {
	tr.fill()
	var zero R
	if !tr.has {
		if tr.err != nil {
			return zero, tr.err
		}
		return zero, io.EOF
	}
	r := tr.head
	tr.head, tr.has = zero, false
	tr.last = episodeOf(&r)
	return r, nil
}

// ReadEpisode appends to dst the records of episode ep at the head of the stream (it stops at
// the first record of another episode) and returns dst. Records of an episode below one
// already read are an error: the stream is not ordered by episode.
func (tr *TraceReader[R]) ReadEpisode(ep int, dst []R) ([]R, error) {
	for {
		e, ok := tr.Peek()
		if !ok {
			return dst, tr.err
		}
		if e < tr.last {
			return dst, fmt.Errorf("sim: trace line %d: episode %d after episode %d: records are not ordered by episode", tr.line, e, tr.last)
		}
		if e != ep {
			return dst, nil
		}
		r, err := tr.Read()
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
}

// Err returns the error that stopped the reader (a malformed line), nil at a clean end.
func (tr *TraceReader[R]) Err() error { return tr.err }

func episodeOf(r any) int {
	switch v := r.(type) {
	case *ControlRecord:
		return v.Episode
	case *ConsensusRecord:
		return v.Episode
	case *AgentRecord:
		return v.Episode
	}
	return 0
}

// nextEpisode returns the smallest episode at the head of the streams (ok false when all are
// at their end).
func nextEpisode[R Record](streams []*TraceReader[R]) (ep int, ok bool) {
	for _, s := range streams {
		if s == nil {
			continue
		}
		if e, has := s.Peek(); has && (!ok || e < ep) {
			ep, ok = e, true
		}
	}
	return ep, ok
}

// streamErrs collects the reading errors of the streams; a stream that failed stops
// contributing (the records read before the bad line are merged), the others go on.
type streamErrs struct {
	errs []error
	bad  map[any]bool
}

func (se *streamErrs) add(stream any, name string, err error) {
	if err == nil || se.bad[stream] {
		return
	}
	if se.bad == nil {
		se.bad = map[any]bool{}
	}
	se.bad[stream] = true
	se.errs = append(se.errs, fmt.Errorf("%s: %w", name, err))
}

// MergeControlStreams merges the partial records of the plant, the cloud and the eavesdropper
// (eve nil: no eavesdropper ran) one episode at a time, as MergeControl does for slices: for
// every episode present in any stream, in increasing order, it calls fn with the joined records
// of t = 0..T and what is missing. Each stream must be ordered by episode (as every role
// process writes its trace); memory is that of one episode whatever the length of the
// streams. A stream that breaks (a malformed line, records out of episode order) ends there:
// the others are merged to their end and the error, naming the role, is returned with the
// error of fn (which stops the merge) joined.
func MergeControlStreams(steps int, ref dynamics.Reference, plant, cloud, eve *TraceReader[ControlRecord],
	fn func(recs []ControlRecord, missing []Missing) error) error {
	names := map[*TraceReader[ControlRecord]]string{plant: RolePlant.String(), cloud: RoleCloud.String()}
	if eve != nil {
		names[eve] = RoleEavesdropper.String()
	}
	var se streamErrs
	var p, c, e []ControlRecord
	for {
		var live []*TraceReader[ControlRecord]
		for _, s := range []*TraceReader[ControlRecord]{plant, cloud, eve} {
			if s != nil && !se.bad[s] {
				live = append(live, s)
			}
		}
		ep, ok := nextEpisode(live)
		if !ok {
			break
		}
		read := func(s *TraceReader[ControlRecord], dst []ControlRecord) []ControlRecord {
			if s == nil || se.bad[s] {
				return dst
			}
			out, err := s.ReadEpisode(ep, dst)
			se.add(s, names[s], err)
			return out
		}
		p, c, e = read(plant, p[:0]), read(cloud, c[:0]), read(eve, e[:0])
		var ev []ControlRecord
		if eve != nil {
			ev = e
			if ev == nil {
				ev = []ControlRecord{}
			}
		}
		recs, missing, err := MergeControl(steps, ref, p, c, ev)
		if err != nil {
			return errors.Join(append(se.errs, err)...)
		}
		if err := fn(recs, missing); err != nil {
			return errors.Join(append(se.errs, err)...)
		}
	}
	return errors.Join(se.errs...)
}

// MergeConsensusStreams merges the agents' records (one stream per agent process, each
// holding any of the n agents) and the eavesdropper's (nil: none ran) step by step, as
// MergeConsensus does for slices: for every episode present in any stream, in increasing order,
// it calls fn with the joined record of each step t = 0..T, in order, and what is missing from
// it. The record's slices are views valid during the call only (copy what you keep). Each
// stream must be ordered by episode (as every role process writes its trace); within an
// episode the records of different agents may come in any step order, but memory is that of
// the steps between the earliest step not yet complete and the latest step read, so streams
// written step by step (as the processes do) are merged in O(n) memory whatever the horizon
// and the number of episodes. A step with a missing piece is held until every stream has
// passed its episode. Errors as MergeControlStreams; names[k] names agents[k].
func MergeConsensusStreams(n, steps int, agents []*TraceReader[AgentRecord], names []string, eve *TraceReader[ConsensusRecord],
	fn func(r *ConsensusRecord, missing []Missing) error) error {
	as := make([]recordStream[AgentRecord], len(agents))
	for k, a := range agents {
		if a != nil {
			as[k] = a
		}
	}
	var es recordStream[ConsensusRecord]
	if eve != nil {
		es = eve
	}
	return mergeConsensus(n, steps, as, names, es, fn)
}

// recordStream is a source of records ordered by episode: a TraceReader, or a sorted slice.
type recordStream[R Record] interface {
	// peekRecord returns the next record without consuming it; ok is false at the end or
	// after an error (see failure).
	peekRecord() (r *R, ok bool)
	// popRecord consumes it.
	popRecord()
	// failure is the error that stopped the stream, nil at a clean end.
	failure() error
}

func (tr *TraceReader[R]) peekRecord() (*R, bool) {
	tr.fill()
	return &tr.head, tr.has
}

func (tr *TraceReader[R]) popRecord() {
	if _, err := tr.Read(); err != nil && err != io.EOF && tr.err == nil {
		tr.err = err
	}
}

func (tr *TraceReader[R]) failure() error { return tr.err }

type sliceStream[R Record] struct {
	recs []R
	i    int
}

func (s *sliceStream[R]) peekRecord() (*R, bool) {
	if s.i >= len(s.recs) {
		return nil, false
	}
	return &s.recs[s.i], true
}
func (s *sliceStream[R]) popRecord()     { s.i++ }
func (s *sliceStream[R]) failure() error { return nil }

// mergeStream is one input of mergeConsensus: an agent process's records or the
// eavesdropper's (exactly one of agent, eve is set), with its name for errors and the episode
// of the last record taken from it.
type mergeStream struct {
	name  string
	agent recordStream[AgentRecord]
	eve   recordStream[ConsensusRecord]
	last  int
}

// head returns the episode of the next record (ok false at the end or after an error, fail).
func (m *mergeStream) head() (ep int, ok bool, fail error) {
	if m.agent != nil {
		r, ok := m.agent.peekRecord()
		if ok {
			ep = r.Episode
		}
		return ep, ok, m.agent.failure()
	}
	r, ok := m.eve.peekRecord()
	if ok {
		ep = r.Episode
	}
	return ep, ok, m.eve.failure()
}

// consensusSlot gathers the pieces of one step's record.
type consensusSlot struct {
	x, y       []float64
	hx, hy     []bool
	down       []bool
	nx, ny     int
	eve        []float64
	eveMissing int
	hasEve     bool
}

func (s *consensusSlot) reset() {
	clear(s.hx)
	clear(s.hy)
	clear(s.down)
	s.nx, s.ny, s.eve, s.eveMissing, s.hasEve = 0, 0, nil, 0, false
}

// mergeConsensus is the one consensus merge (MergeConsensus, MergeConsensusStreams). Per
// episode it reads the streams through a window of steps growing one step at a time and
// releases, in step order, every step whose pieces are all there; at the end of the episode
// (every stream read past it) the remaining steps are released with what is missing.
func mergeConsensus(n, steps int, agents []recordStream[AgentRecord], names []string, eve recordStream[ConsensusRecord],
	fn func(r *ConsensusRecord, missing []Missing) error) error {
	if n < 1 || steps < 1 {
		return fmt.Errorf("sim: merge: %d agents, horizon %d", n, steps)
	}
	T := steps
	name := func(k int) string {
		if k < len(names) {
			return names[k]
		}
		return fmt.Sprintf("%s stream %d", RoleAgent.String(), k)
	}
	var se streamErrs
	var streams []*mergeStream // the inputs, in a fixed order
	for k, a := range agents {
		if a != nil {
			streams = append(streams, &mergeStream{name: name(k), agent: a, last: -1})
		}
	}
	if eve != nil {
		streams = append(streams, &mergeStream{name: RoleEavesdropper.String(), eve: eve, last: -1})
	}
	// headEpisode is the episode at the head of a live stream; a stream that failed or is out
	// of episode order stops (the error names it).
	headEpisode := func(s *mergeStream) (int, bool) {
		if se.bad[s] {
			return 0, false
		}
		ep, ok, fail := s.head()
		if !ok {
			se.add(s, s.name, fail)
			return 0, false
		}
		if ep < s.last {
			se.add(s, s.name, fmt.Errorf("sim: episode %d after episode %d: records are not ordered by episode", ep, s.last))
			return 0, false
		}
		return ep, true
	}
	var pool []*consensusSlot
	window := make([]*consensusSlot, T+1)
	slot := func(t int) *consensusSlot {
		if window[t] == nil {
			if k := len(pool); k > 0 {
				window[t], pool = pool[k-1], pool[:k-1]
				window[t].reset()
			} else {
				window[t] = &consensusSlot{x: make([]float64, n), y: make([]float64, n),
					hx: make([]bool, n), hy: make([]bool, n), down: make([]bool, n)}
			}
		}
		return window[t]
	}
	var rec ConsensusRecord
	var missing []Missing
	for {
		ep, found := 0, false
		for _, s := range streams {
			if e, ok := headEpisode(s); ok && (!found || e < ep) {
				ep, found = e, true
			}
		}
		if !found {
			return errors.Join(se.errs...)
		}
		fail := func(err error) error { return errors.Join(append(se.errs, err)...) }
		// take puts the head of stream s into its step's slot when it belongs to episode ep
		// and a step up to w; taken is false when it does not (the stream waits).
		take := func(s *mergeStream, w, emitted int) (taken bool, err error) {
			if e, ok := headEpisode(s); !ok || e != ep {
				return false, nil
			}
			if s.agent != nil {
				r, _ := s.agent.peekRecord()
				if r.Step < 0 || r.Step > T || r.Agent < 0 || r.Agent >= n {
					return false, fmt.Errorf("sim: merge: agent record episode %d step %d agent %d outside 0..%d / 0..%d", r.Episode, r.Step, r.Agent, T, n-1)
				}
				if r.Step > w {
					return false, nil
				}
				var sl *consensusSlot
				if r.Step >= emitted {
					sl = slot(r.Step)
				}
				if sl == nil || sl.hx[r.Agent] {
					return false, fmt.Errorf("sim: merge: agent %d wrote episode %d step %d twice", r.Agent, r.Episode, r.Step)
				}
				sl.x[r.Agent], sl.hx[r.Agent] = r.X, true
				sl.nx++
				switch {
				case r.Down: // nothing released: the entry is 0, and the record says so
					sl.y[r.Agent], sl.hy[r.Agent], sl.down[r.Agent] = 0, true, true
					sl.ny++
				case r.Y != nil:
					sl.y[r.Agent], sl.hy[r.Agent] = *r.Y, true
					sl.ny++
				}
				s.agent.popRecord()
			} else {
				r, _ := s.eve.peekRecord()
				if r.Step < 0 || r.Step > T {
					return false, fmt.Errorf("sim: merge: eavesdropper record episode %d step %d outside 0..%d", r.Episode, r.Step, T)
				}
				if r.Step > w {
					return false, nil
				}
				var sl *consensusSlot
				if r.Step >= emitted {
					sl = slot(r.Step)
				}
				if sl == nil || sl.hasEve {
					return false, fmt.Errorf("sim: merge: eavesdropper wrote episode %d step %d twice", r.Episode, r.Step)
				}
				sl.eve, sl.eveMissing, sl.hasEve = r.EveX0, r.EveMissing, true
				s.eve.popRecord()
			}
			s.last = ep
			return true, nil
		}
		// read takes every record of episode ep up to step w from the streams.
		read := func(w, emitted int) error {
			for _, s := range streams {
				for {
					taken, err := take(s, w, emitted)
					if err != nil {
						return err
					}
					if !taken {
						break
					}
				}
			}
			return nil
		}
		complete := func(t int) bool {
			sl := window[t]
			return sl != nil && sl.nx == n && (t == T || sl.ny == n) && (eve == nil || t == T || sl.hasEve)
		}
		// emit releases step t (complete or not) and returns its slot to the pool.
		emit := func(t int) error {
			sl := window[t]
			rec = ConsensusRecord{Episode: ep, Step: t}
			missing = missing[:0]
			for i := 0; i < n; i++ {
				if sl == nil || !sl.hx[i] || (t < T && !sl.hy[i]) {
					missing = append(missing, Missing{ep, t, RoleAgent.String(), i})
				}
			}
			if sl != nil {
				if sl.nx == n {
					rec.X = sl.x
				}
				if t < T && sl.ny == n {
					rec.Y = sl.y
				}
				for i, d := range sl.down {
					if d {
						rec.Down = append(rec.Down, i)
					}
				}
			}
			if t < T {
				if sl != nil && sl.hasEve {
					rec.EveX0, rec.EveMissing = sl.eve, sl.eveMissing
				} else if eve != nil {
					missing = append(missing, Missing{ep, t, RoleEavesdropper.String(), -1})
				}
			}
			err := fn(&rec, missing)
			if sl != nil {
				pool = append(pool, sl)
				window[t] = nil
			}
			return err
		}
		t := 0
		for w := 0; w <= T; w++ {
			if err := read(w, t); err != nil {
				return fail(err)
			}
			for ; t <= w && complete(t); t++ {
				if err := emit(t); err != nil {
					return fail(err)
				}
			}
		}
		for ; t <= T; t++ {
			if err := emit(t); err != nil {
				return fail(err)
			}
		}
	}
}
