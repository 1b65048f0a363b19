package launch

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// StallAfter is how long a group of episodes may go without progress (no ctl.done of its
// episodes and no step seen advancing on the bus) before the launcher says why it waits: a
// stalled run must not look healthy. A group whose like took long before waits
// longer (stallFactor times its observed time).
const StallAfter = 5 * time.Second

const (
	stallFactor = 3                      // times the observed time of a like group
	stallCheck  = 500 * time.Millisecond // how often a wait looks at its progress
	stallGrace  = time.Second            // the bus tap's time to see a step advance
	// stallLogTail is how much of the end of a process's log is read for its slow-consumer
	// drops while a stall lasts.
	stallLogTail = 256 << 10
)

// Stall says why a group of episodes makes no progress: the processes the launcher waits for,
// what was last seen of each, and the messages dropped on the way. PlayOptions.Stall receives
// it, repeatedly while it lasts (nil once progress resumed).
type Stall struct {
	Point    int     `json:"point"`
	Episodes string  `json:"episodes"`  // the group waited for ("episodes 40..47")
	SinceSec float64 `json:"since_sec"` // since the last progress
	// Awaiting are the processes that have not reported every episode of the group done.
	Awaiting []string `json:"awaiting"`
	// Last is, by process (awaited or not), the last ctl event it sent and the last step of
	// its seen on the bus while the launcher looked (during a stall only).
	Last map[string]string `json:"last"`
	// Drops are, by process, its NATS client's slow-consumer errors in its log (each one is
	// one or more messages dropped); Pending the bytes the embedded server holds for it
	// unsent (a process that stopped reading); ServerSlowConsumers the server's count of the
	// times it dropped messages for a client that did not read them.
	Drops               map[string]int `json:"drops,omitempty"`
	Pending             map[string]int `json:"pending_bytes,omitempty"`
	ServerSlowConsumers int64          `json:"server_slow_consumers,omitempty"`
}

// String is the stall on one line (the run's stderr).
func (st *Stall) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no progress for %.0f s at %s: waiting for %s", st.SinceSec, st.Episodes, strings.Join(st.Awaiting, ", "))
	var lasts []string
	for _, p := range st.Awaiting {
		if l := st.Last[p]; l != "" {
			lasts = append(lasts, p+": "+l)
		}
	}
	if len(lasts) > 0 {
		fmt.Fprintf(&b, " (last seen: %s)", strings.Join(lasts, "; "))
	}
	if len(st.Drops) > 0 {
		fmt.Fprintf(&b, "; slow consumer drops: %s", joinInts(st.Drops, "%d"))
	}
	if len(st.Pending) > 0 {
		fmt.Fprintf(&b, "; unsent on the server: %s", joinInts(st.Pending, "%d bytes"))
	}
	if st.ServerSlowConsumers > 0 {
		fmt.Fprintf(&b, "; the server dropped messages for a slow client %d time(s)", st.ServerSlowConsumers)
	}
	return b.String()
}

// joinInts is "a 3, b 1" (each value as format), sorted by key.
func joinInts(m map[string]int, format string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + " " + fmt.Sprintf(format, m[k])
	}
	return strings.Join(keys, ", ")
}

// ctlSeen is the last ctl event of a process (Session.lastCtl).
type ctlSeen struct {
	what string
	at   time.Time
}

// seen records ev as the last ctl event of its sender.
func (s *Session) seen(ev ctlEvent) {
	what := ev.word
	switch ev.word {
	case wire.CtlDone:
		what = fmt.Sprintf("ctl.done of episode %d", ev.ep)
	case wire.CtlReady:
		what = "ctl.ready"
	case kindConflict:
		return
	}
	if s.lastCtl == nil {
		s.lastCtl = map[string]ctlSeen{}
	}
	s.lastCtl[ev.sender] = ctlSeen{what: what, at: time.Now()}
}

// stallWatch watches the progress of one group's wait (awaitDone).
type stallWatch struct {
	s        *Session
	g        Group
	after    time.Duration
	progress time.Time // the group's start, its last ctl.done, the last step seen advancing
	tap      *stepTap  // the data subjects, while the wait looks like a stall (nil: not watched)
	reported bool
}

// watchStall returns the watch of the group g, started now. Its bound is StallAfter, or
// stallFactor times what such a group took so far when that is longer.
func (s *Session) watchStall(g Group) *stallWatch {
	after := StallAfter
	if s.Episodes > 0 {
		after = max(after, stallFactor*time.Duration(g.Count)*s.EpisodeNS/time.Duration(s.Episodes))
	}
	return &stallWatch{s: s, g: g, after: after, progress: time.Now()}
}

// advanced notes progress: a ctl.done of the group. A stall reported is over.
func (w *stallWatch) advanced() {
	w.progress = time.Now()
	w.stopTap()
	if w.reported {
		w.reported = false
		w.s.onStall(nil)
	}
}

// check looks at the wait's progress (waiting: the senders not done with the group; last
// their latest episode done). Past the bound without a ctl.done, it watches the bus; when no
// step advances there either, it reports the stall.
func (w *stallWatch) check(waiting map[string]bool) {
	if w.s.onStall == nil {
		return
	}
	now := time.Now()
	if now.Sub(w.progress) < w.after {
		return
	}
	if w.tap == nil {
		if err := w.startTap(); err != nil {
			w.s.cfg.Log.Debug().Err(err).Msg("stall: watching the bus")
			w.progress = now // try again after another bound
		}
		return
	}
	if now.Sub(w.tap.started) < max(stallGrace, 2*w.s.cfg.Period) {
		return
	}
	if at := w.tap.advancedAt(); !at.IsZero() { // the processes compute: slow, not stalled
		w.advanced()
		return
	}
	w.reported = true
	w.s.onStall(w.s.stall(w.g, waiting, now.Sub(w.progress), w.tap))
}

// end ends the watch with its wait: a stall reported is over.
func (w *stallWatch) end() {
	w.stopTap()
	if w.reported {
		w.reported = false
		w.s.onStall(nil)
	}
}

func (w *stallWatch) startTap() error {
	t := &stepTap{started: time.Now(), last: map[string][2]int{}}
	for _, subject := range []string{w.s.subj.AllPlantYhat(), w.s.subj.AllCloudU(), w.s.subj.AllAgentY(), w.s.subj.AllHostY()} {
		sub, err := w.s.conn.SubscribeDocuments(subject, nil, t.message)
		if err != nil {
			t.stop()
			return err
		}
		t.subs = append(t.subs, sub)
	}
	w.tap = t
	return nil
}

func (w *stallWatch) stopTap() {
	if w.tap != nil {
		w.tap.stop()
		w.tap = nil
	}
}

// stepTap sees the data messages while a wait looks stalled: the last (episode, step) of each
// sender, and when one advanced past what it had sent before.
type stepTap struct {
	started time.Time
	subs    []*bus.Subscription
	mu      sync.Mutex
	last    map[string][2]int
	advance time.Time
}

func (t *stepTap) message(_ string, data []byte) {
	var m wire.Message
	if wire.Decode(data, &m) != nil || m.Step < 0 {
		return
	}
	sender := processSender(m.Sender)
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, ok := t.last[sender]
	if ok && (m.Episode < prev[0] || (m.Episode == prev[0] && m.Step <= prev[1])) {
		return
	}
	t.last[sender] = [2]int{m.Episode, m.Step}
	if ok {
		t.advance = time.Now()
	}
}

// advancedAt is when a sender last sent a later step than its previous one (zero: none did).
func (t *stepTap) advancedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.advance
}

func (t *stepTap) lastStep(sender string) (ep, step int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.last[sender]
	return l[0], l[1], ok
}

func (t *stepTap) stop() {
	for _, sub := range t.subs {
		_ = sub.Unsubscribe()
	}
}

// stall is the Stall of the group g, without progress for since, waiting for the senders
// waiting.
func (s *Session) stall(g Group, waiting map[string]bool, since time.Duration, tap *stepTap) *Stall {
	st := &Stall{Point: s.cfg.PointIndex, Episodes: g.String(), SinceSec: since.Seconds(), Last: map[string]string{}}
	now := time.Now()
	for _, p := range s.procs {
		sender := endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()
		if waiting[sender] {
			st.Awaiting = append(st.Awaiting, p.Name)
		}
		var last []string
		if c, ok := s.lastCtl[sender]; ok {
			last = append(last, fmt.Sprintf("%s %.1f s ago", c.what, now.Sub(c.at).Seconds()))
		} else {
			last = append(last, "no ctl event yet")
		}
		if tap != nil {
			if ep, step, ok := tap.lastStep(sender); ok {
				last = append(last, fmt.Sprintf("sent episode %d step %d", ep, step))
			}
		}
		if p.running() && osStopped(p.PID()) {
			last = append(last, "its process is stopped (SIGSTOP or a debugger)")
		}
		st.Last[p.Name] = strings.Join(last, ", ")
		if n := slowConsumerErrors(p.LogPath); n > 0 {
			if st.Drops == nil {
				st.Drops = map[string]int{}
			}
			st.Drops[p.Name] = n
		}
	}
	if srv := s.cfg.Server; srv != nil {
		pending := srv.ClientPending()
		for _, p := range s.procs {
			for name, n := range pending {
				if strings.HasSuffix(name, p.Name) {
					if st.Pending == nil {
						st.Pending = map[string]int{}
					}
					st.Pending[p.Name] += n
				}
			}
		}
		st.ServerSlowConsumers = srv.SlowConsumers()
	}
	return st
}

// slowConsumerErrors counts the lines of the end of the log at path that report a slow
// consumer (the NATS client dropped messages the process did not read in time).
func slowConsumerErrors(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, stallLogTail)
	if fi, err := f.Stat(); err == nil && fi.Size() > stallLogTail {
		_, _ = f.Seek(fi.Size()-stallLogTail, 0)
	}
	n, _ := f.Read(buf)
	return strings.Count(strings.ToLower(string(buf[:n])), "slow consumer")
}

// lastSeen is what was last seen of each sender of waiting ("plant-0: ctl.done of episode 3
// 2.1 s ago; ..."), for the error of a wait that timed out.
func (s *Session) lastSeen(waiting map[string]bool) string {
	st := s.stall(Group{}, waiting, 0, nil)
	var out []string
	for _, p := range st.Awaiting {
		out = append(out, p+": "+st.Last[p])
	}
	return strings.Join(out, "; ")
}
