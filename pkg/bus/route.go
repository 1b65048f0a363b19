package bus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Route is the delivery metadata of a data message under link faults (see pkg/fault): the
// subscriber it is addressed to, the logical step it is delivered at, and the lockstep end
// marker. It travels in NATS headers, not in the payload, and only when it says something:
// a fault-free run publishes plain messages, and its zero value means "for every subscriber,
// delivered at its own step, the last one of the step".
type Route struct {
	To string // "<role>.<id>" of the one subscriber it is for; "" = every subscriber ...
	// Except: ... but these (they get deliveries of their own).
	Except []string
	At     int  // logical delivery step when later than the message's own (> 0); 0 = its own step
	More   bool // more deliveries from this sender to To for step At follow
	Gap    bool // no message: the sender has nothing more for To at step At (no values)
	// Episodes, when > 1, says the message carries the same step of that many consecutive
	// episodes (episodes in flight): Message.Episode is the first, Values the episodes'
	// vectors concatenated in episode order. Only a plain broadcast is batched (no To, Except,
	// At, More or Gap). 0 or 1: one episode.
	Episodes int
}

// MaxEpisodes bounds Route.Episodes: the episodes one message may carry.
const MaxEpisodes = 1 << 12

// Count returns how many episodes a message with route r carries (1 unless batched).
func (r Route) Count() int { return max(r.Episodes, 1) }

// The NATS header names of a Route.
const (
	HeaderTo   = "Dpsim-To"
	HeaderAt   = "Dpsim-At"
	HeaderMore = "Dpsim-More"
	HeaderGap  = "Dpsim-Gap"
	// HeaderExcept lists the subscribers a broadcast is not for, comma-separated.
	HeaderExcept = "Dpsim-Except"
	// HeaderEpisodes is Route.Episodes of a batched message. It is outside the signed
	// payload, yet bound to it: a receiver requires exactly Dim values per episode, so a
	// count other than the sender's cannot validate against the signed values.
	HeaderEpisodes = "Dpsim-Episodes"
)

// IsZero reports whether r carries nothing (a plain broadcast).
func (r Route) IsZero() bool {
	return r.To == "" && r.At == 0 && !r.More && !r.Gap && len(r.Except) == 0 && r.Episodes <= 1
}

// header returns r as NATS headers (nil for the zero Route).
func (r Route) header() nats.Header {
	if r.IsZero() {
		return nil
	}
	h := nats.Header{}
	if r.To != "" {
		h.Set(HeaderTo, r.To)
	}
	if r.At > 0 {
		h.Set(HeaderAt, strconv.Itoa(r.At))
	}
	if r.More {
		h.Set(HeaderMore, "1")
	}
	if r.Gap {
		h.Set(HeaderGap, "1")
	}
	if len(r.Except) > 0 {
		h.Set(HeaderExcept, strings.Join(r.Except, ","))
	}
	if r.Episodes > 1 {
		h.Set(HeaderEpisodes, strconv.Itoa(r.Episodes))
	}
	return h
}

// routeOf parses the route headers of a message (zero Route without headers).
func routeOf(h nats.Header) (Route, error) {
	var r Route
	if len(h) == 0 {
		return r, nil
	}
	r.To = h.Get(HeaderTo)
	if r.To != "" && senderPattern(r.To) != nil {
		return r, &InvalidError{ReasonSender, fmt.Sprintf("header %s %q is not <role>.<id>", HeaderTo, r.To)}
	}
	if v := h.Get(HeaderAt); v != "" {
		at, err := strconv.Atoi(v)
		if err != nil || at < 0 {
			return r, &InvalidError{ReasonStep, fmt.Sprintf("header %s %q is not a step", HeaderAt, v)}
		}
		r.At = at
	}
	r.More = h.Get(HeaderMore) == "1"
	r.Gap = h.Get(HeaderGap) == "1"
	if v := h.Get(HeaderExcept); v != "" {
		if r.To != "" {
			return r, &InvalidError{ReasonSender, "header " + HeaderExcept + " on a message for one subscriber"}
		}
		r.Except = strings.Split(v, ",")
		for _, e := range r.Except {
			if senderPattern(e) != nil {
				return r, &InvalidError{ReasonSender, fmt.Sprintf("header %s: %q is not <role>.<id>", HeaderExcept, e)}
			}
		}
	}
	if v := h.Get(HeaderEpisodes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > MaxEpisodes {
			return r, &InvalidError{ReasonDim, fmt.Sprintf("header %s %q is not a count of episodes in 2..%d", HeaderEpisodes, v, MaxEpisodes)}
		}
		if r.To != "" || r.At != 0 || r.More || r.Gap || len(r.Except) > 0 {
			return r, &InvalidError{ReasonDim, "header " + HeaderEpisodes + " on a message that is no plain broadcast"}
		}
		r.Episodes = n
	}
	return r, nil
}

// senderPattern checks "<role>.<id>".
func senderPattern(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if i == 0 || i == len(s)-1 {
				break
			}
			if _, err := strconv.Atoi(s[i+1:]); err != nil {
				break
			}
			return nil
		}
	}
	return fmt.Errorf("bus: %q is not <role>.<id>", s)
}

// PublishRouted publishes m on subject with route r in the headers (none when r is zero: a
// plain publish, which does not allocate). Safe for concurrent use.
func (c *Conn) PublishRouted(subject string, m *Message, r Route) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, err := Encode(c.buf[:0], m, c.enc)
	if err != nil {
		return fmt.Errorf("bus: publish %s step %d on %s: %w", m.Sender, m.Step, subject, err)
	}
	c.buf = buf
	switch {
	case c.signer != nil:
		h := r.header()
		if h == nil {
			h = nats.Header{}
		}
		sig, serr := sign(c.signer, buf)
		if serr != nil {
			return serr
		}
		h.Set(HeaderSig, sig)
		err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Data: buf, Header: h})
	case r.IsZero():
		err = c.nc.Publish(subject, buf)
	default:
		err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Data: buf, Header: r.header()})
	}
	if err != nil {
		return fmt.Errorf("bus: publish %s step %d on %s: %w", m.Sender, m.Step, subject, err)
	}
	return nil
}

// SendRouted publishes values for (episode, step) with route r, stamped with the current
// wall time (a gap carries no values).
func (p *Publisher) SendRouted(episode, step int, values []float64, r Route) error {
	p.msg.Episode, p.msg.Step, p.msg.Values = episode, step, values
	p.msg.SentUnixNano = time.Now().UnixNano()
	err := p.c.PublishRouted(p.subject, &p.msg, r)
	p.msg.Values = nil
	return err
}
