package wire

import (
	"strconv"
	"strings"
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

// Header returns r as the NATS headers that carry it (nil for the zero Route): the one
// encoding pkg/bus publishes and a recording of a run writes.
func (r Route) Header() map[string][]string {
	if r.IsZero() {
		return nil
	}
	h := map[string][]string{}
	if r.To != "" {
		h[HeaderTo] = []string{r.To}
	}
	if r.At > 0 {
		h[HeaderAt] = []string{strconv.Itoa(r.At)}
	}
	if r.More {
		h[HeaderMore] = []string{"1"}
	}
	if r.Gap {
		h[HeaderGap] = []string{"1"}
	}
	if len(r.Except) > 0 {
		h[HeaderExcept] = []string{strings.Join(r.Except, ",")}
	}
	if r.Episodes > 1 {
		h[HeaderEpisodes] = []string{strconv.Itoa(r.Episodes)}
	}
	return h
}

// MaxEpisodes bounds Route.Episodes: the episodes one message may carry.
const MaxEpisodes = 1 << 12

// Count returns how many episodes a message with route r carries (1 unless batched).
func (r Route) Count() int { return max(r.Episodes, 1) }

// The header names of a Route (NATS headers: pkg/bus writes and reads them).
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

// HeaderSig is the header carrying a data message's signature (base64, raw URL; pkg/bus
// signs and verifies).
const HeaderSig = "Dpsim-Sig"

// IsZero reports whether r carries nothing (a plain broadcast).
func (r Route) IsZero() bool {
	return r.To == "" && r.At == 0 && !r.More && !r.Gap && len(r.Except) == 0 && r.Episodes <= 1
}
