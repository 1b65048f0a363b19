package bus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/wire"
)

// A wire.Route travels in NATS headers (wire.HeaderTo, ...): routeHeader writes them,
// routeOf reads and checks them.

// routeHeader returns r as NATS headers (nil for the zero Route): wire.Route.Header.
func routeHeader(r wire.Route) nats.Header {
	return r.Header()
}

// routeOf parses the route headers of a message (zero Route without headers).
func routeOf(h nats.Header) (wire.Route, error) {
	var r wire.Route
	if len(h) == 0 {
		return r, nil
	}
	r.To = h.Get(wire.HeaderTo)
	if r.To != "" && senderPattern(r.To) != nil {
		return r, &wire.InvalidError{Reason: wire.ReasonSender, Detail: fmt.Sprintf("header %s %q is not <role>.<id>", wire.HeaderTo, r.To)}
	}
	if v := h.Get(wire.HeaderAt); v != "" {
		at, err := strconv.Atoi(v)
		if err != nil || at < 0 {
			return r, &wire.InvalidError{Reason: wire.ReasonStep, Detail: fmt.Sprintf("header %s %q is not a step", wire.HeaderAt, v)}
		}
		r.At = at
	}
	r.More = h.Get(wire.HeaderMore) == "1"
	r.Gap = h.Get(wire.HeaderGap) == "1"
	if v := h.Get(wire.HeaderExcept); v != "" {
		if r.To != "" {
			return r, &wire.InvalidError{Reason: wire.ReasonSender, Detail: "header " + wire.HeaderExcept + " on a message for one subscriber"}
		}
		r.Except = strings.Split(v, ",")
		for _, e := range r.Except {
			if senderPattern(e) != nil {
				return r, &wire.InvalidError{Reason: wire.ReasonSender, Detail: fmt.Sprintf("header %s: %q is not <role>.<id>", wire.HeaderExcept, e)}
			}
		}
	}
	if v := h.Get(wire.HeaderEpisodes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > wire.MaxEpisodes {
			return r, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("header %s %q is not a count of episodes in 2..%d", wire.HeaderEpisodes, v, wire.MaxEpisodes)}
		}
		if r.To != "" || r.At != 0 || r.More || r.Gap || len(r.Except) > 0 {
			return r, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "header " + wire.HeaderEpisodes + " on a message that is no plain broadcast"}
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
func (c *Conn) PublishRouted(subject string, m *wire.Message, r wire.Route) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, err := wire.Encode(c.buf[:0], m, c.enc)
	if err != nil {
		return fmt.Errorf("bus: publish %s step %d on %s: %w", m.Sender, m.Step, subject, err)
	}
	c.buf = buf
	switch {
	case c.signer != nil:
		h := routeHeader(r)
		if h == nil {
			h = nats.Header{}
		}
		sig, serr := sign(c.signer, buf)
		if serr != nil {
			return serr
		}
		h.Set(wire.HeaderSig, sig)
		err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Data: buf, Header: h})
	case r.IsZero():
		err = c.nc.Publish(subject, buf)
	default:
		err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Data: buf, Header: routeHeader(r)})
	}
	if err != nil {
		return fmt.Errorf("bus: publish %s step %d on %s: %w", m.Sender, m.Step, subject, err)
	}
	return nil
}

// SendRouted publishes values for (episode, step) with route r, stamped with the current
// wall time (a gap carries no values).
func (p *Publisher) SendRouted(episode, step int, values []float64, r wire.Route) error {
	p.msg.Episode, p.msg.Step, p.msg.Values = episode, step, values
	p.msg.SentUnixNano = time.Now().UnixNano()
	err := p.c.PublishRouted(p.subject, &p.msg, r)
	p.msg.Values = nil
	return err
}
