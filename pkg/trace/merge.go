package trace

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
)

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

// recordStream is a source of records ordered by episode: a Reader, or a sorted slice.
type recordStream[R Record] interface {
	// peekRecord returns the next record without consuming it; ok is false at the end or
	// after an error (see failure).
	peekRecord() (r *R, ok bool)
	// popRecord consumes it.
	popRecord()
	// failure is the error that stopped the stream, nil at a clean end.
	failure() error
}

func (tr *Reader[R]) peekRecord() (*R, bool) {
	tr.fill()
	return &tr.head, tr.has
}

func (tr *Reader[R]) popRecord() {
	if _, err := tr.Read(); err != nil && err != io.EOF && tr.err == nil {
		tr.err = err
	}
}

func (tr *Reader[R]) failure() error { return tr.err }

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

// episodeSource is a source of records grouped by episode in increasing order: a Reader, or
// a slice sorted by episode.
type episodeSource[R Record] interface {
	// Peek returns the episode of the next record (ok false at the end or after an error).
	Peek() (episode int, ok bool)
	// ReadEpisode appends the records of episode ep at the head of the source to dst.
	ReadEpisode(ep int, dst []R) ([]R, error)
}

// Peek returns the episode of the next record.
func (s *sliceStream[R]) Peek() (int, bool) {
	if s.i >= len(s.recs) {
		return 0, false
	}
	return episodeOf(&s.recs[s.i]), true
}

// ReadEpisode appends the records of episode ep at the head of the slice to dst.
func (s *sliceStream[R]) ReadEpisode(ep int, dst []R) ([]R, error) {
	for ; s.i < len(s.recs) && episodeOf(&s.recs[s.i]) == ep; s.i++ {
		dst = append(dst, s.recs[s.i])
	}
	return dst, nil
}

// byEpisode returns the records sorted by episode (stable: the order within an episode is kept).
func byEpisode[R Record](recs []R) *sliceStream[R] {
	s := slices.Clone(recs)
	slices.SortStableFunc(s, func(a, b R) int { return episodeOf(&a) - episodeOf(&b) })
	return &sliceStream[R]{recs: s}
}

// MergeControl joins the partial records of the plant (X, Yhat), the cloud (U, Xhat) and the
// eavesdropper (EveX0) by (episode, step), taking from each part only its own fields, and fills Ref
// from ref (nil: left empty). steps is the horizon T. For every episode that appears in any part it
// returns records for t = 0..T and lists what is missing: the plant at t = 0..T, the cloud and the
// eavesdropper at t = 0..T-1 (pass eve == nil when no eavesdropper ran: then it is not reported).
// Duplicate (episode, step) records of one role and steps outside 0..T are errors. It is
// MergeControlStreams over the parts sorted by episode (the join is ControlJoin).
func MergeControl(steps int, ref dynamics.Reference, plant, cloud, eve []ControlRecord) ([]ControlRecord, []Missing, error) {
	var es episodeSource[ControlRecord]
	if eve != nil {
		es = byEpisode(eve)
	}
	var out []ControlRecord
	var missing []Missing
	err := joinControl(steps, ref, [3]episodeSource[ControlRecord]{byEpisode(plant), byEpisode(cloud), es},
		func(recs []ControlRecord, ms []Missing) error {
			out = append(out, recs...)
			missing = append(missing, ms...)
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	return out, missing, nil
}

// MergeControlStreams merges the partial records of the plant, the cloud and the eavesdropper
// (eve nil: no eavesdropper ran) one episode at a time, as MergeControl does for slices: for
// every episode present in any stream, in increasing order, it calls fn with the joined records
// of t = 0..T (fn may keep them) and what is missing. Each stream must be ordered by episode (as
// every role process writes its trace); memory is that of one episode whatever the length of the
// streams. A stream that breaks (a malformed line, records out of episode order) ends there:
// the others are merged to their end and the error, naming the role, is returned with the
// error of fn (which stops the merge) joined.
func MergeControlStreams(steps int, ref dynamics.Reference, plant, cloud, eve *Reader[ControlRecord],
	fn func(recs []ControlRecord, missing []Missing) error) error {
	var es episodeSource[ControlRecord]
	if eve != nil {
		es = eve
	}
	return joinControl(steps, ref, [3]episodeSource[ControlRecord]{plant, cloud, es}, fn)
}

// joinControl feeds the episodes of the plant's, the cloud's and the eavesdropper's sources
// (nil: none) to one ControlJoin, and hands fn the copies of each episode's records.
func joinControl(steps int, ref dynamics.Reference, srcs [3]episodeSource[ControlRecord],
	fn func(recs []ControlRecord, missing []Missing) error) error {
	j, err := NewControlJoin(steps, ref, srcs[2] != nil)
	if err != nil {
		return err
	}
	var se streamErrs
	live := func(s episodeSource[ControlRecord]) bool { return s != nil && !se.bad[s] }
	var parts [3][]ControlRecord
	for {
		ep, found := 0, false
		for _, s := range srcs {
			if !live(s) {
				continue
			}
			if e, ok := s.Peek(); ok && (!found || e < ep) {
				ep, found = e, true
			}
		}
		if !found {
			return errors.Join(se.errs...)
		}
		for k, s := range srcs {
			parts[k] = parts[k][:0]
			if live(s) {
				var err error
				parts[k], err = s.ReadEpisode(ep, parts[k])
				se.add(s, controlRoles[k].String(), err)
			}
		}
		recs, missing, err := joinControlEpisode(j, ep, &parts)
		if err == nil {
			err = fn(recs, missing)
		}
		if err != nil {
			return errors.Join(append(se.errs, err)...)
		}
	}
}

// joinControlEpisode joins the parts of episode ep (plant, cloud, eavesdropper) with j.
func joinControlEpisode(j *ControlJoin, ep int, parts *[3][]ControlRecord) ([]ControlRecord, []Missing, error) {
	j.Begin(ep)
	for k := range parts {
		for i := range parts[k] {
			if err := j.Add(controlRoles[k], &parts[k][i]); err != nil {
				return nil, nil, err
			}
		}
	}
	recs := make([]ControlRecord, 0, j.steps+1)
	var missing []Missing
	err := j.Emit(func(r *ControlRecord, ms []Missing) error {
		recs = append(recs, r.Clone())
		missing = append(missing, ms...)
		return nil
	})
	return recs, missing, err
}

// MergeConsensus assembles ConsensusRecords of n agents from the agents' AgentRecords and the
// eavesdropper's partial ConsensusRecords (EveX0 only; nil when no eavesdropper ran), for t = 0..T
// of every episode that appears, in (episode, step) order. When an agent's value is missing it is
// reported and the record's X (or Y) is left nil: the Accumulator then counts the episode as
// incomplete instead of aggregating a partial state. Y is nil at the terminal step T. The records
// may come in any order; the merge is MergeConsensusStreams' over the records sorted by episode.
func MergeConsensus(n, steps int, agents []AgentRecord, eve []ConsensusRecord) ([]ConsensusRecord, []Missing, error) {
	var es recordStream[ConsensusRecord]
	if eve != nil {
		es = byEpisode(eve)
	}
	var out []ConsensusRecord
	var missing []Missing
	err := mergeConsensus(n, steps, []recordStream[AgentRecord]{byEpisode(agents)}, nil, es,
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
func MergeConsensusStreams(n, steps int, agents []*Reader[AgentRecord], names []string, eve *Reader[ConsensusRecord],
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

// mergeConsensus feeds the streams to one ConsensusJoin (MergeConsensus, MergeConsensusStreams).
// Per episode it reads the streams through a window of steps growing one step at a time and
// releases, in step order, every step whose pieces are all there; at the end of the episode
// (every stream read past it) the remaining steps are released with what is missing.
func mergeConsensus(n, steps int, agents []recordStream[AgentRecord], names []string, eve recordStream[ConsensusRecord],
	fn func(r *ConsensusRecord, missing []Missing) error) error {
	j, err := NewConsensusJoin(n, steps, eve != nil)
	if err != nil {
		return err
	}
	m := &consensusMerge{j: j, fn: fn}
	for k, a := range agents {
		if a != nil {
			name := fmt.Sprintf("%s stream %d", endpoint.Agent, k)
			if k < len(names) {
				name = names[k]
			}
			m.streams = append(m.streams, &mergeStream{name: name, agent: a, last: -1})
		}
	}
	if eve != nil {
		m.streams = append(m.streams, &mergeStream{name: endpoint.Eavesdropper.String(), eve: eve, last: -1})
	}
	for {
		ep, found := 0, false
		for _, s := range m.streams {
			if e, ok := m.headEpisode(s); ok && (!found || e < ep) {
				ep, found = e, true
			}
		}
		if !found {
			return errors.Join(m.se.errs...)
		}
		if err := m.episode(ep); err != nil {
			return errors.Join(append(m.se.errs, err)...)
		}
	}
}

// consensusMerge is the state of mergeConsensus: the join, the inputs in a fixed order and
// their errors.
type consensusMerge struct {
	j       *ConsensusJoin
	fn      func(r *ConsensusRecord, missing []Missing) error
	streams []*mergeStream
	se      streamErrs
}

// headEpisode is the episode at the head of a live stream; a stream that failed or is out of
// episode order stops (the error names it).
func (m *consensusMerge) headEpisode(s *mergeStream) (int, bool) {
	if m.se.bad[s] {
		return 0, false
	}
	ep, ok, fail := s.head()
	if !ok {
		m.se.add(s, s.name, fail)
		return 0, false
	}
	if ep < s.last {
		m.se.add(s, s.name, fmt.Errorf("trace: episode %d after episode %d: records are not ordered by episode", ep, s.last))
		return 0, false
	}
	return ep, true
}

// episode merges episode ep: window w = 0..T takes every record of steps up to w from each
// stream and releases the steps complete so far, then the rest is released as it is.
func (m *consensusMerge) episode(ep int) error {
	j := m.j
	j.Begin(ep)
	for w := 0; w <= j.steps; w++ {
		for _, s := range m.streams {
			for {
				taken, err := m.take(s, ep, w)
				if err != nil {
					return err
				}
				if !taken {
					break
				}
			}
		}
		if err := j.EmitComplete(m.fn); err != nil {
			return err
		}
	}
	return j.Emit(m.fn)
}

// take adds the head of stream s to the join when it belongs to episode ep and a step up to w;
// taken is false when it does not (the stream waits).
func (m *consensusMerge) take(s *mergeStream, ep, w int) (taken bool, err error) {
	if e, ok := m.headEpisode(s); !ok || e != ep {
		return false, nil
	}
	j := m.j
	if s.agent != nil {
		r, _ := s.agent.peekRecord()
		if r.Step > w && r.Step <= j.steps && r.Agent >= 0 && r.Agent < j.n {
			return false, nil
		}
		if err := j.AddAgent(r); err != nil {
			return false, err
		}
		s.agent.popRecord()
	} else {
		r, _ := s.eve.peekRecord()
		if r.Step > w && r.Step <= j.steps {
			return false, nil
		}
		if err := j.AddEavesdropper(r); err != nil {
			return false, err
		}
		s.eve.popRecord()
	}
	s.last = ep
	return true, nil
}
