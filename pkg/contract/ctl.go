package contract

import (
	"strconv"
	"time"

	"github.com/dpsim/dpsim/pkg/wire"
)

// GridLead is how long after the launcher sent ctl.episode a realtime episode starts: the
// tick grid of episode e is t_k = sent(ctl.episode) + GridLead + k*Ts, shared by every
// process of the run (they run on one host, so they share the wall clock).
const GridLead = 50 * time.Millisecond

// ReadyRepeat is how often a process repeats ctl.ready until its first episode.
const ReadyRepeat = 500 * time.Millisecond

// The coordination messages. Each is a wire.Message on a dpsim.<run>.ctl subject whose Kind is
// the subject's word (wire.CtlReady, wire.CtlDone, ...); its Values carry the payload below, in
// the order given. A process's messages are sent as its endpoint ("<role>.<id>",
// endpoint.Endpoint.String); the launcher's as wire.LauncherSender.

// Ready is a process's ctl.ready (process -> launcher), repeated every ReadyRepeat until its
// first episode: Values [pid, plan].
type Ready struct {
	// PID is the process id: the launcher tells its processes from a stray one on the same
	// run id.
	PID int `json:"pid"`
	// Plan is the digest of the plan file the process runs (plan.FileDigest, below 2^53 so
	// exact in a float64); 0: it resolved the scenario itself.
	Plan uint64 `json:"plan"`
}

// Message is r as sent by sender in run.
func (r Ready) Message(run, sender string) *wire.Message {
	return ctlMessage(run, sender, wire.CtlReady, 0, []float64{float64(r.PID), float64(r.Plan)})
}

// ParseReady reads a ctl.ready: an error when its pid is not a process id; Plan is 0 when it
// carries none.
func ParseReady(m *wire.Message) (Ready, error) {
	pid, err := PID(m)
	if err != nil {
		return Ready{}, err
	}
	r := Ready{PID: pid}
	if len(m.Values) >= 2 {
		if v := m.Values[1]; v > 0 && v < 1<<53 && v == float64(int64(v)) {
			r.Plan = uint64(v)
		}
	}
	return r, nil
}

// Done is a process's ctl.done for an episode (process -> launcher), sent once its cores
// finished the episode and its files hold it (flushed): Values [steps, missed, pid, trace
// next].
type Done struct {
	Steps  int `json:"steps"`  // the episode's steps (the horizon T)
	Missed int `json:"missed"` // steps it finished at a deadline without all their messages, all episodes so far (realtime ticks missed, lockstep timeouts); the launcher reads the result's count instead
	PID    int `json:"pid"`
	// TraceNext is the offset in the process's TraceFile where its next episode's records
	// begin: the file's end, or, with --keep-episodes past the kept episodes, the end of the
	// kept ones (the process cuts the file back there when the next episode begins). The
	// launcher reads each episode from the TraceNext of the process's previous ctl.done (0
	// before its first) to the file's end, so the disk bound is computed by the process only.
	// A group (EpisodesMessage) is written whole, episode after episode, before its first
	// ctl.done, and the file is cut back only when the next group begins: the launcher reads
	// a group once its last ctl.done came, from the TraceNext before the group to the end.
	TraceNext int64 `json:"trace_next"`
}

// Message is d as sent by sender for episode ep of run.
func (d Done) Message(run, sender string, ep int) *wire.Message {
	return ctlMessage(run, sender, wire.CtlDone, ep, []float64{float64(d.Steps), float64(d.Missed), float64(d.PID), float64(d.TraceNext)})
}

// ParseDone reads a ctl.done: an error when its pid is not a process id or its trace offset
// is not an offset.
func ParseDone(m *wire.Message) (Done, error) {
	pid, err := PID(m)
	if err != nil {
		return Done{}, err
	}
	if len(m.Values) < 4 {
		return Done{}, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "no trace offset in ctl.done"}
	}
	next := m.Values[3]
	if next < 0 || next >= 1<<53 || next != float64(int64(next)) {
		return Done{}, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "trace offset " + strconv.FormatFloat(next, 'g', -1, 64) + " is not a file offset"}
	}
	return Done{Steps: int(m.Values[0]), Missed: int(m.Values[1]), PID: pid, TraceNext: int64(next)}, nil
}

// Rejoin is a restarted process's ctl.rejoin for an episode (process -> peers and launcher):
// it is subscribed again, and its peers hand it what they held for it from its restart step.
// Values [restart step, pid].
type Rejoin struct {
	Step int `json:"step"` // the restart step (scenario faults.crashes)
	PID  int `json:"pid"`
}

// Message is j as sent by sender for episode ep of run.
func (j Rejoin) Message(run, sender string, ep int) *wire.Message {
	return ctlMessage(run, sender, wire.CtlRejoin, ep, []float64{float64(j.Step), float64(j.PID)})
}

// ParseRejoin reads a ctl.rejoin: an error when its pid is not a process id.
func ParseRejoin(m *wire.Message) (Rejoin, error) {
	pid, err := PID(m)
	if err != nil {
		return Rejoin{}, err
	}
	return Rejoin{Step: int(m.Values[0]), PID: pid}, nil
}

// EpisodeMessage is the launcher's ctl.episode starting episode ep with the scenario's x(0),
// or, with private set, an episode whose explicit x(0) is sent on the private challenger
// subject by X0Message, sealed (Kind wire.CtlEpisodeX0): the public message then carries no values, so
// nothing on dpsim.<run>.> reveals the secret.
func EpisodeMessage(run string, ep int, private bool) *wire.Message {
	kind := wire.CtlEpisode
	if private {
		kind = wire.CtlEpisodeX0
	}
	return ctlMessage(run, wire.LauncherSender, kind, ep, nil)
}

// MaxInflight bounds the episodes of one ctl.episode group (EpisodesMessage): a process holds
// one set of cores per episode in flight.
const MaxInflight = 1024

// EpisodesMessage is the launcher's ctl.episode starting the count consecutive episodes
// first..first+count-1 at once (episodes in flight; count >= 1): Kind wire.CtlEpisodes, or
// wire.CtlEpisodesX0 with private set, when every episode's explicit x(0) is sent on the private
// challenger subject by X0Message. Values [count]. Each process answers with one ctl.done per
// episode, in episode order, once the whole group is done.
func EpisodesMessage(run string, first, count int, private bool) *wire.Message {
	kind := wire.CtlEpisodes
	if private {
		kind = wire.CtlEpisodesX0
	}
	return ctlMessage(run, wire.LauncherSender, kind, first, []float64{float64(count)})
}

// ParseEpisodes reads a group's ctl.episode (EpisodesMessage): its first episode and count;
// an error (wire.ReasonDim) when the count is not an integer in 1..MaxInflight.
func ParseEpisodes(m *wire.Message) (first, count int, err error) {
	if len(m.Values) != 1 {
		return 0, 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "ctl." + m.Kind + " carries [count]"}
	}
	v := m.Values[0]
	if v < 1 || v > MaxInflight || v != float64(int64(v)) {
		return 0, 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "episodes in flight " + strconv.FormatFloat(v, 'g', -1, 64) + " is not in 1.." + strconv.Itoa(MaxInflight)}
	}
	return m.Episode, int(v), nil
}

// X0 is the explicit initial state a ctl.episode of a hand-driven run carries: a copy of its
// Values, nil when it carries none. The challenger's x0 message is sealed: OpenX0 (x0.go).
func X0(m *wire.Message) []float64 {
	if len(m.Values) == 0 {
		return nil
	}
	return append([]float64(nil), m.Values...)
}

// StopMessage is the launcher's ctl.stop: finish (abandoning a running episode), flush, write
// the result, exit.
func StopMessage(run string) *wire.Message {
	return ctlMessage(run, wire.LauncherSender, wire.CtlStop, 0, nil)
}

// PID reads the pid a ready ([pid, plan]), done ([steps, missed, pid]) or rejoin ([step,
// pid]) carries: a positive integer, else an error (wire.ReasonDim).
func PID(m *wire.Message) (int, error) {
	at := 0
	switch m.Kind {
	case wire.CtlDone:
		at = 2
	case wire.CtlRejoin:
		at = 1
	}
	if len(m.Values) <= at {
		return 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "no pid in ctl." + m.Kind}
	}
	v := m.Values[at]
	if v < 1 || v > 1<<31-1 || v != float64(int64(v)) {
		return 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "pid " + strconv.FormatFloat(v, 'g', -1, 64) + " is not a process id"}
	}
	return int(v), nil
}

func ctlMessage(run, sender, kind string, ep int, vals []float64) *wire.Message {
	return &wire.Message{V: wire.Version, Run: run, Episode: ep, Sender: sender, SentUnixNano: time.Now().UnixNano(), Kind: kind, Values: vals}
}
