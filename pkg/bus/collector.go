package bus

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrTimeout is returned (wrapped) when a wait reaches its deadline.
var ErrTimeout = errors.New("bus: timeout")

// ErrClosed is returned (wrapped) when a source can deliver no more messages.
var ErrClosed = errors.New("bus: source closed")

// Source delivers valid messages one at a time. Next blocks until a message is available
// or the deadline passes (then it returns an error wrapping ErrTimeout). A message already
// available is returned even if the deadline has passed. The returned *Message may be
// reused by the next call: copy what must be kept.
type Source interface {
	Next(deadline time.Time) (*Message, error)
}

// ChanSource adapts a channel of messages to Source (for tests and in-process use). It
// reuses one timer and does not allocate per message.
type ChanSource struct {
	c     <-chan *Message
	timer *time.Timer
}

// NewChanSource returns a Source reading from c. A closed channel yields ErrClosed.
func NewChanSource(c <-chan *Message) *ChanSource {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &ChanSource{c: c, timer: t}
}

// Next implements Source.
func (s *ChanSource) Next(deadline time.Time) (*Message, error) {
	select {
	case m, ok := <-s.c:
		return chanResult(m, ok)
	default:
	}
	d := time.Until(deadline)
	if d <= 0 {
		return nil, ErrTimeout
	}
	s.timer.Reset(d)
	defer s.timer.Stop()
	select {
	case m, ok := <-s.c:
		return chanResult(m, ok)
	case <-s.timer.C:
		return nil, ErrTimeout
	}
}

func chanResult(m *Message, ok bool) (*Message, error) {
	if !ok {
		return nil, ErrClosed
	}
	return m, nil
}

// TimeoutError is returned by StepCollector.Collect when a step's messages did not all
// arrive before the deadline (Cause wraps ErrTimeout) or the source closed first (Cause
// wraps ErrClosed). It names the senders that are missing.
type TimeoutError struct {
	Episode, Step int
	Missing       []string      // senders whose message for the step never arrived
	Waited        time.Duration // how long Collect waited
	Cause         error         // the source's error (wraps ErrTimeout or ErrClosed)
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("bus: episode %d step %d: gave up after %v waiting for %d message(s) from %s: %v",
		e.Episode, e.Step, e.Waited.Round(time.Microsecond), len(e.Missing), strings.Join(e.Missing, ", "), e.Cause)
}

// Unwrap returns the source's error, so errors.Is(err, ErrTimeout) works.
func (e *TimeoutError) Unwrap() error { return e.Cause }

// CollectorOptions configures a StepCollector.
type CollectorOptions struct {
	// Window is the number of (episode, step) positions buffered at once: the current one
	// and Window-1 ahead. Default 4. A peer in lockstep is at most one step ahead.
	Window int
	// Counters, if set, counts the collector's drops (late, duplicate, sender, ahead).
	Counters *Counters
}

type slot struct {
	used     bool
	ep, step int
	have     int // number of senders heard from
	got      []bool
	vals     [][]float64
	sent     []int64
}

// StepCollector gathers, for each (episode, step), one message from every expected sender
// (lockstep: a step proceeds when its messages arrived). It is the pure waiting logic: Offer
// and Ready do no I/O and no time; Collect adds the blocking wait on a Source with a
// deadline. Messages ahead of the current step are buffered (up to Window positions);
// messages for positions already passed are late and dropped. Values are copied into
// buffers owned by the collector, so the steady state does not allocate.
// A StepCollector is not safe for concurrent use.
type StepCollector struct {
	senders []string
	index   map[string]int
	slots   []slot
	curEp   int
	curStep int
	cur     *slot
	count   *Counters
}

// NewStepCollector returns a collector expecting one message per step from each sender
// ("<role>.<id>", as in Message.Sender). Senders must be distinct and non-empty.
func NewStepCollector(senders []string, opts CollectorOptions) (*StepCollector, error) {
	if len(senders) == 0 {
		return nil, errors.New("bus: step collector needs at least one expected sender")
	}
	if opts.Window == 0 {
		opts.Window = 4
	}
	if opts.Window < 1 {
		return nil, fmt.Errorf("bus: step collector window %d < 1", opts.Window)
	}
	c := &StepCollector{
		senders: append([]string(nil), senders...),
		index:   make(map[string]int, len(senders)),
		slots:   make([]slot, opts.Window),
		count:   opts.Counters,
	}
	for i, s := range senders {
		if s == "" {
			return nil, fmt.Errorf("bus: step collector sender %d is empty", i)
		}
		if _, dup := c.index[s]; dup {
			return nil, fmt.Errorf("bus: step collector sender %q listed twice", s)
		}
		c.index[s] = i
	}
	for i := range c.slots {
		c.slots[i].got = make([]bool, len(senders))
		c.slots[i].vals = make([][]float64, len(senders))
		c.slots[i].sent = make([]int64, len(senders))
	}
	return c, nil
}

// Senders returns the expected senders in order (index i of Values).
func (c *StepCollector) Senders() []string { return c.senders }

// Position returns the current (episode, step): messages before it are late.
func (c *StepCollector) Position() (episode, step int) { return c.curEp, c.curStep }

func before(ep1, st1, ep2, st2 int) bool {
	return ep1 < ep2 || (ep1 == ep2 && st1 < st2)
}

func (c *StepCollector) drop(r Reason, format string, args ...any) error {
	if c.count != nil {
		c.count.Drop(r)
	}
	return &InvalidError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func (c *StepCollector) find(ep, step int) *slot {
	for i := range c.slots {
		s := &c.slots[i]
		if s.used && s.ep == ep && s.step == step {
			return s
		}
	}
	return nil
}

// Advance moves the current position to (episode, step), freeing the buffers of earlier
// positions: their messages are late from now on. Moving backwards is an error.
func (c *StepCollector) Advance(episode, step int) error {
	if before(episode, step, c.curEp, c.curStep) {
		return fmt.Errorf("bus: step collector cannot move back from episode %d step %d to episode %d step %d",
			c.curEp, c.curStep, episode, step)
	}
	c.curEp, c.curStep = episode, step
	c.cur = nil
	for i := range c.slots {
		s := &c.slots[i]
		if s.used && before(s.ep, s.step, episode, step) {
			s.used = false
		}
		if s.used && s.ep == episode && s.step == step {
			c.cur = s
		}
	}
	return nil
}

// Offer files one (already validated) message. It returns nil if the message was kept, or
// an *InvalidError (counted in Counters) if it was dropped: ReasonSender (not an expected
// sender), ReasonLate (for a position before the current one), ReasonDuplicate (a second
// message from the sender for that position) or ReasonAhead (no free buffer slot).
func (c *StepCollector) Offer(m *Message) error {
	idx, ok := c.index[m.Sender]
	if !ok {
		return c.drop(ReasonSender, "unexpected sender %q", m.Sender)
	}
	if before(m.Episode, m.Step, c.curEp, c.curStep) {
		return c.drop(ReasonLate, "%s: episode %d step %d arrived at episode %d step %d",
			m.Sender, m.Episode, m.Step, c.curEp, c.curStep)
	}
	s := c.find(m.Episode, m.Step)
	if s == nil {
		for i := range c.slots {
			if !c.slots[i].used {
				s = &c.slots[i]
				break
			}
		}
		if s == nil {
			return c.drop(ReasonAhead, "%s: episode %d step %d is more than %d positions ahead of episode %d step %d",
				m.Sender, m.Episode, m.Step, len(c.slots)-1, c.curEp, c.curStep)
		}
		s.used, s.ep, s.step, s.have = true, m.Episode, m.Step, 0
		clear(s.got)
		if m.Episode == c.curEp && m.Step == c.curStep {
			c.cur = s
		}
	}
	if s.got[idx] {
		return c.drop(ReasonDuplicate, "%s: second message for episode %d step %d", m.Sender, m.Episode, m.Step)
	}
	s.got[idx] = true
	s.have++
	s.vals[idx] = append(s.vals[idx][:0], m.Values...)
	s.sent[idx] = m.SentUnixNano
	return nil
}

// Ready reports whether every expected message for the current position arrived.
func (c *StepCollector) Ready() bool {
	return c.cur != nil && c.cur.have == len(c.senders)
}

// Missing lists the senders whose message for the current position has not arrived.
func (c *StepCollector) Missing() []string {
	var out []string
	for i, s := range c.senders {
		if c.cur == nil || !c.cur.got[i] {
			out = append(out, s)
		}
	}
	return out
}

// Values returns the values sent by sender i (in Senders order) for the current position,
// or nil if they have not arrived. The slice is owned by the collector and valid until the
// position is advanced past it.
func (c *StepCollector) Values(i int) []float64 {
	if c.cur == nil || i < 0 || i >= len(c.senders) || !c.cur.got[i] {
		return nil
	}
	return c.cur.vals[i]
}

// SentUnixNano returns the send time of sender i's message for the current position
// (0 if it has not arrived), for latency measurements.
func (c *StepCollector) SentUnixNano(i int) int64 {
	if c.cur == nil || i < 0 || i >= len(c.senders) || !c.cur.got[i] {
		return 0
	}
	return c.cur.sent[i]
}

// Collect advances to (episode, step) and reads src until every expected message for it
// arrived or the deadline passes. Messages for other positions are buffered or dropped as
// in Offer (drops are counted, not returned). On timeout it returns a *TimeoutError naming
// the missing senders; the collector stays at the position, so a realtime caller may go on
// with what it has. Collect does not allocate in the steady state.
func (c *StepCollector) Collect(src Source, episode, step int, deadline time.Time) error {
	if err := c.Advance(episode, step); err != nil {
		return err
	}
	start := time.Now()
	for !c.Ready() {
		m, err := src.Next(deadline)
		if err != nil {
			return &TimeoutError{Episode: episode, Step: step, Missing: c.Missing(), Waited: time.Since(start), Cause: err}
		}
		_ = c.Offer(m) // drops are counted; the caller watches Counters
	}
	return nil
}
