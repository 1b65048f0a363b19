package contract

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The challenger's x(0), sealed. The x0 message of an episode (X0Message) carries one sealed
// box per process that owns a part of x(0) - the plant all of it, each agent host its own
// agents' x_i(0) - sealed by the launcher's curve key (a Sealer: bus.CurveKey) to that
// process's: a subscriber to dpsim-challenger.<run>.x0 reads ciphertext only, and a process
// opens only its own box. Its Values are the boxes one after the other, each
//
//	[id, n, w_1, ..., w_k]
//
// id the receiver's id (the plant's; a host's first agent), n the box's length in bytes, and
// w_1..w_k (k = ceil(n/6)) its bytes, six per value as an integer in [0, 2^48) (big-endian; the
// last one padded with zeros): exact in a float64, so both encodings carry them and --sign
// signs them. A box opens (an Opener: bus.CurveKey) to the JSON of x0Sealed: the run, the
// episode and the receiver it was sealed for, which must be the message's and the process's
// own (a box moved to another episode or run is refused), and the receiver's values.

// x0WordBytes is how many bytes of a box one value carries (48 bits: exact in a float64).
const x0WordBytes = 6

// MaxX0Box bounds a box's length in bytes (x0 of up to about 4000 values).
const MaxX0Box = 1 << 16

// X0Recipient is a process the challenger's x(0) is sealed to: its endpoint (plant.<id>, or
// agent.<first> for an agent host), the part of x(0) it owns, x0[First..Last], and its public
// curve key.
type X0Recipient struct {
	Endpoint    endpoint.Endpoint
	First, Last int
	Public      string
}

// Sealer seals data to the holder of the public curve key recipient: the launcher's curve key
// (bus.CurveKey). The cryptography is the transport's (nkeys), so this package, and what
// imports it, does not depend on it.
type Sealer interface {
	Seal(data []byte, recipient string) ([]byte, error)
}

// Opener opens a box sealed to it by the holder of the public curve key sender: a process's
// curve key (bus.CurveKey). It fails with a *wire.InvalidError (ReasonSealed) when the box was
// not sealed to it by sender, or was altered.
type Opener interface {
	Open(box []byte, sender string) ([]byte, error)
}

// x0Sealed is what a box holds.
type x0Sealed struct {
	Run     string    `json:"run"`
	Episode int       `json:"ep"`
	To      string    `json:"to"`
	X0      []float64 `json:"x0"`
}

// X0Message is the private challenger message with episode ep's explicit initial state x0,
// sealed with the launcher's curve key to each recipient (its own values only).
func X0Message(run string, ep int, x0 []float64, launcher Sealer, to []X0Recipient) (*wire.Message, error) {
	var vals []float64
	for _, r := range to {
		if r.First < 0 || r.Last < r.First || r.Last >= len(x0) {
			return nil, fmt.Errorf("contract: x0 of %d values has no part %d..%d for %s", len(x0), r.First, r.Last, r.Endpoint)
		}
		data, err := json.Marshal(x0Sealed{Run: run, Episode: ep, To: r.Endpoint.String(), X0: x0[r.First : r.Last+1]})
		if err != nil {
			return nil, fmt.Errorf("contract: x0 for %s: %w", r.Endpoint, err)
		}
		box, err := launcher.Seal(data, r.Public)
		if err != nil {
			return nil, fmt.Errorf("contract: x0 for %s: %w", r.Endpoint, err)
		}
		vals = appendBox(vals, r.Endpoint.ID, box)
	}
	return ctlMessage(run, wire.LauncherSender, wire.CtlX0, ep, vals), nil
}

// appendBox appends the record [id, n, words...] of box to vals.
func appendBox(vals []float64, id int, box []byte) []float64 {
	vals = append(vals, float64(id), float64(len(box)))
	for i := 0; i < len(box); i += x0WordBytes {
		var w uint64
		for k := range x0WordBytes {
			w <<= 8
			if i+k < len(box) {
				w |= uint64(box[i+k])
			}
		}
		vals = append(vals, float64(w))
	}
	return vals
}

// OpenX0 opens the box of process self in the x0 message m with its curve key, sealed by the
// launcher's public curve key sender, and returns its values of x(0): a *wire.InvalidError -
// ReasonDim when the message is malformed or holds no box for self, ReasonSealed when the box
// does not open with the key or was sealed for another run, episode or process.
func OpenX0(m *wire.Message, self endpoint.Endpoint, key Opener, sender string) ([]float64, error) {
	box, err := findBox(m.Values, self.ID)
	if err != nil {
		return nil, err
	}
	data, err := key.Open(box, sender)
	if err != nil {
		return nil, err
	}
	var s x0Sealed
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, &wire.InvalidError{Reason: wire.ReasonSealed, Detail: "sealed x0: " + err.Error()}
	}
	if s.Run != m.Run || s.Episode != m.Episode || s.To != self.String() {
		return nil, &wire.InvalidError{Reason: wire.ReasonSealed, Detail: fmt.Sprintf("sealed x0 of run %q episode %d for %s, in a message of run %q episode %d to %s",
			s.Run, s.Episode, s.To, m.Run, m.Episode, self)}
	}
	return s.X0, nil
}

// findBox returns the bytes of the box of the receiver id in vals.
func findBox(vals []float64, id int) ([]byte, error) {
	for i := 0; i < len(vals); {
		if i+2 > len(vals) {
			return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "x0: a truncated box record"}
		}
		n := vals[i+1]
		if n < 1 || n > MaxX0Box || n != math.Trunc(n) {
			return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("x0: box length %v", n)}
		}
		words := (int(n) + x0WordBytes - 1) / x0WordBytes
		if i+2+words > len(vals) {
			return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "x0: a truncated box"}
		}
		if vals[i] == float64(id) {
			box := make([]byte, 0, words*x0WordBytes)
			for _, v := range vals[i+2 : i+2+words] {
				if v < 0 || v >= 1<<48 || v != math.Trunc(v) {
					return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("x0: box word %v", v)}
				}
				w := uint64(v)
				for k := x0WordBytes - 1; k >= 0; k-- {
					box = append(box, byte(w>>(8*k)))
				}
			}
			return box[:int(n)], nil
		}
		i += 2 + words
	}
	return nil, &wire.InvalidError{Reason: wire.ReasonDim, Detail: fmt.Sprintf("x0: no box for id %d", id)}
}
