package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
)

// Reason classifies why a received message was dropped.
type Reason uint8

// Drop reasons. Validate reports ReasonVersion..ReasonKind; Decode reports ReasonDecode
// (and ReasonVersion for a binary message of another version); pkg/bus's Inbox ReasonSender for a
// subject nobody of the run publishes on, and the ctl receivers ReasonAhead when their queue
// is full.
const (
	ReasonDecode    Reason = iota // not a message: garbage, truncated, bad JSON
	ReasonVersion                 // schema version != Version
	ReasonRun                     // another run id
	ReasonEpisode                 // not the expected episode
	ReasonStep                    // step outside 0 <= step < steps
	ReasonDim                     // wrong number of values
	ReasonNonFinite               // NaN or +-Inf among the values
	ReasonSender                  // unexpected sender, or "from" disagrees with the subject
	ReasonKind                    // unexpected kind
	ReasonLate                    // for a step already completed or abandoned (realtime: late message)
	ReasonDuplicate               // a second message from the same sender for the same step
	ReasonAhead                   // too far ahead of the receiver: no buffer slot free
	ReasonSignature               // signing on: the signature is missing or does not verify
	ReasonSealed                  // a sealed box (the challenger's x(0)) that does not open with this process's key
	numReasons
)

var reasonNames = [numReasons]string{
	"decode", "version", "run", "episode", "step", "dim", "nonfinite", "sender", "kind",
	"late", "duplicate", "ahead", "signature", "sealed",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Reasons lists every drop reason in order.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// InvalidError is a dropped message: the reason (for counting) and a human-readable detail
// (for the caller's log).
type InvalidError struct {
	Reason Reason
	Detail string
}

func (e *InvalidError) Error() string {
	return "wire: invalid message (" + e.Reason.String() + "): " + e.Detail
}

// ReasonOf classifies err: the Reason of an *InvalidError in its chain, ReasonDecode
// otherwise.
func ReasonOf(err error) Reason {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return ReasonDecode
}

// AnyEpisode in Expect.Episode accepts every episode >= 0.
const AnyEpisode = -1

// Expect is what a receiver expects of every message.
type Expect struct {
	Run     string // required run id
	Dim     int    // required len(Values); 0 accepts any length (including none)
	Steps   int    // steps per episode: valid steps are 0 <= Step < Steps; 0 means no upper bound
	Episode int    // required episode; AnyEpisode (-1) accepts any episode >= 0
	// Episodes, when > 1, accepts the Episodes consecutive episodes from Episode (episodes in
	// flight); 0 or 1: Episode only.
	Episodes int
	Sender   string // required sender; "" accepts any
	Kind     string // required kind; "" accepts any
}

// Validate checks m against e: schema version, run id, episode, step range, dimension,
// finite values, sender and kind, in that order, and returns an *InvalidError naming the
// first violation, or nil. A batched message (m.Route.Episodes > 1) must fall wholly within
// the expected episodes and carry Dim values per episode. It never panics and does not
// allocate when m is valid.
func Validate(m *Message, e Expect) error {
	if m.V != Version {
		return &InvalidError{ReasonVersion, fmt.Sprintf("schema version %d, want %d", m.V, Version)}
	}
	if m.Run != e.Run {
		return &InvalidError{ReasonRun, fmt.Sprintf("run %q, want %q", m.Run, e.Run)}
	}
	n := m.Route.Count()
	if m.Episode < 0 || (e.Episode >= 0 && (m.Episode < e.Episode || m.Episode+n > e.Episode+max(e.Episodes, 1))) {
		if n > 1 {
			return &InvalidError{ReasonEpisode, fmt.Sprintf("episodes %d..%d, want %s", m.Episode, m.Episode+n-1, episodesWant(e.Episode, e.Episodes))}
		}
		return &InvalidError{ReasonEpisode, fmt.Sprintf("episode %d, want %s", m.Episode, episodesWant(e.Episode, e.Episodes))}
	}
	if m.Step < 0 || (e.Steps > 0 && m.Step >= e.Steps) {
		return &InvalidError{ReasonStep, fmt.Sprintf("step %d outside 0 <= step < %s", m.Step, stepsWant(e.Steps))}
	}
	if e.Dim > 0 && len(m.Values) != e.Dim*n {
		if n > 1 {
			return &InvalidError{ReasonDim, fmt.Sprintf("%d values, want %d (%d per episode, %d episodes)", len(m.Values), e.Dim*n, e.Dim, n)}
		}
		return &InvalidError{ReasonDim, fmt.Sprintf("%d values, want %d", len(m.Values), e.Dim)}
	}
	if e.Dim <= 0 && n > 1 && len(m.Values)%n != 0 {
		return &InvalidError{ReasonDim, fmt.Sprintf("%d values do not split into %d episodes", len(m.Values), n)}
	}
	for i, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &InvalidError{ReasonNonFinite, fmt.Sprintf("value %d is %v", i, v)}
		}
	}
	if e.Sender != "" && m.Sender != e.Sender {
		return &InvalidError{ReasonSender, fmt.Sprintf("from %q, want %q", m.Sender, e.Sender)}
	}
	if e.Kind != "" && m.Kind != e.Kind {
		return &InvalidError{ReasonKind, fmt.Sprintf("kind %q, want %q", m.Kind, e.Kind)}
	}
	return nil
}

func episodesWant(ep, count int) string {
	switch {
	case ep < 0:
		return ">= 0"
	case count > 1:
		return strconv.Itoa(ep) + ".." + strconv.Itoa(ep+count-1)
	}
	return strconv.Itoa(ep)
}

func stepsWant(steps int) string {
	if steps <= 0 {
		return "inf"
	}
	return strconv.Itoa(steps)
}

// Counters counts received messages and the dropped ones by Reason. Each message is
// counted as received once (pkg/bus's Inbox or a ctl subscription does this) and dropped at most
// once (when it fails to decode or validate, or later by its handler); the accepted count is
// the difference. All methods are safe for concurrent use and allocation-free except
// Snapshot. The zero value is ready.
type Counters struct {
	received atomic.Uint64
	dropped  [numReasons]atomic.Uint64
	// bySender counts the drops again by the sender the subject names, so that a run can
	// name the process whose messages were wrong (rare: a mutex is cheap enough).
	mu       sync.Mutex
	bySender map[string]*[numReasons]uint64
}

// Receive counts one received message.
func (c *Counters) Receive() { c.received.Add(1) }

// Drop counts one dropped message.
func (c *Counters) Drop(r Reason) {
	if r < numReasons {
		c.dropped[r].Add(1)
	}
}

// DropErr counts one dropped message classified by ReasonOf(err).
func (c *Counters) DropErr(err error) { c.Drop(ReasonOf(err)) }

// DropFrom counts one dropped message that came on subject, classified by ReasonOf(err), and
// again under the sender the subject names ("cloud.0"; a subject that names none counts under
// "?"): CountersSnapshot.BySender.
func (c *Counters) DropFrom(subject string, err error) {
	r := ReasonOf(err)
	c.Drop(r)
	if r >= numReasons {
		return
	}
	sender := SenderOfSubject(subject)
	if sender == "" {
		sender = "?"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bySender == nil {
		c.bySender = map[string]*[numReasons]uint64{}
	}
	n := c.bySender[sender]
	if n == nil {
		n = new([numReasons]uint64)
		c.bySender[sender] = n
	}
	n[r]++
}

// Received returns the number of messages received.
func (c *Counters) Received() uint64 { return c.received.Load() }

// Dropped returns the number of messages dropped for reason r.
func (c *Counters) Dropped(r Reason) uint64 {
	if r < numReasons {
		return c.dropped[r].Load()
	}
	return 0
}

// CountersSnapshot is a point-in-time copy of Counters, ready for a results file.
type CountersSnapshot struct {
	Received uint64            `json:"received"`
	Accepted uint64            `json:"accepted"` // Received - Dropped (0 if more were dropped than received)
	Dropped  uint64            `json:"dropped"`
	ByReason map[string]uint64 `json:"dropped_by_reason,omitempty"` // non-zero reasons only
	// BySender splits the drops by the sender their subject names, then by reason: who sent
	// what was wrong (non-zero counts only; "?" for a subject that names no sender).
	BySender map[string]map[string]uint64 `json:"dropped_by_sender,omitempty"`
}

// Snapshot returns the current counts.
func (c *Counters) Snapshot() CountersSnapshot {
	s := CountersSnapshot{Received: c.received.Load()}
	for r := Reason(0); r < numReasons; r++ {
		if n := c.dropped[r].Load(); n > 0 {
			if s.ByReason == nil {
				s.ByReason = make(map[string]uint64)
			}
			s.ByReason[r.String()] = n
			s.Dropped += n
		}
	}
	if s.Received > s.Dropped {
		s.Accepted = s.Received - s.Dropped
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for sender, n := range c.bySender {
		for r := Reason(0); r < numReasons; r++ {
			if n[r] > 0 {
				if s.BySender == nil {
					s.BySender = map[string]map[string]uint64{}
				}
				if s.BySender[sender] == nil {
					s.BySender[sender] = map[string]uint64{}
				}
				s.BySender[sender][r.String()] = n[r]
			}
		}
	}
	return s
}
