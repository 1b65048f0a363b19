package launch

import (
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/wire"
)

// latenessTap hands on, in realtime mode, each data message as it is published, with how late
// it was after its tick: the launcher subscribes to the publishers' data subjects and, for the
// message of step k of episode e, reports its send time (wire.Message.SentUnixNano, the
// sender's wall clock at publish; the processes share the launcher's host and clock) minus
// t_k = sent(ctl.episode e) + contract.GridLead + k*Ts, the grid every process paces by. Only
// the live view asks for it (PlayOptions.Data): the launcher otherwise never reads data.
type latenessTap struct {
	period time.Duration
	report func(DataMessage)
	mu     sync.Mutex
	grids  map[int]time.Time // episode -> its grid origin (the last few)
}

// DataMessage is a data message the launcher saw published in realtime mode (PlayOptions.Data):
// its sender ("plant.0"), episode, step and values (valid during the call only), and how late
// it was published after its step's tick, in seconds.
type DataMessage struct {
	Sender        string
	Episode, Step int
	Values        []float64
	LateSec       float64
}

// startLatenessTap subscribes s's data subjects when fn is set and the session is realtime.
func (s *Session) startLatenessTap(fn func(DataMessage)) error {
	if fn == nil || s.cfg.Mode != wire.Realtime || s.cfg.Period <= 0 {
		return nil
	}
	tap := &latenessTap{period: s.cfg.Period, report: fn, grids: map[int]time.Time{}}
	for _, subject := range []string{s.subj.AllPlantYhat(), s.subj.AllCloudU(), s.subj.AllAgentY(), s.subj.AllHostY()} {
		sub, err := s.conn.SubscribeDocuments(subject, nil, tap.message)
		if err != nil {
			return err
		}
		s.ctl.subs = append(s.ctl.subs, sub)
	}
	s.lateness = tap
	return nil
}

// episode records the grid of episode ep, whose ctl.episode was sent at sent.
func (t *latenessTap) episode(ep int, sentUnixNano int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.grids[ep] = time.Unix(0, sentUnixNano).Add(contract.GridLead)
	delete(t.grids, ep-4) // late copies of a few episodes back are still measured
}

// message measures one data message (on the client's goroutine: quick).
func (t *latenessTap) message(_ string, data []byte) {
	var m wire.Message
	if wire.Decode(data, &m) != nil || m.Step < 0 {
		return
	}
	t.mu.Lock()
	origin, ok := t.grids[m.Episode]
	t.mu.Unlock()
	if !ok {
		return
	}
	tick := origin.Add(time.Duration(m.Step) * t.period)
	t.report(DataMessage{Sender: m.Sender, Episode: m.Episode, Step: m.Step, Values: m.Values,
		LateSec: time.Unix(0, m.SentUnixNano).Sub(tick).Seconds()})
}
