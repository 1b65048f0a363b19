package metrics

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"slices"
)

// episodeWire is an Episode in transit (internal/farm: a worker on another host reduces episodes
// and the coordinator folds them): every field the fold reads, and the records held ahead of
// their turn (an incomplete episode keeps them, as it would in one process).
type episodeWire struct {
	Episode, Steps, Next         int
	X0, Err, Sq, MaxDev, Eve     []float64
	EveOK                        []bool
	Avg, AbsMax                  []float64
	Xstar, Sum0, Scale           float64
	SumDev, Drift                float64
	Held                         map[int][3][]float64 // step -> x, ref, eve
	Control                      bool
	KeptX, KeptEve, Dim, Tracked int // the accumulator's shape, checked on arrival
}

// MarshalEpisode encodes the reduced episode e of accumulator a exactly (float64 bits, gob), for
// UnmarshalEpisode on an accumulator of the same plan.
func (a *Accumulator) MarshalEpisode(e *Episode) ([]byte, error) {
	w := episodeWire{Episode: e.episode, Steps: e.steps, Next: e.next, X0: e.x0, Err: e.err, Sq: e.sq,
		MaxDev: e.maxDev, Eve: e.eve, EveOK: e.eveOK, Avg: e.avg, AbsMax: e.absMax, Xstar: e.xstar,
		Sum0: e.sum0, Scale: e.scale, SumDev: e.sumDev, Drift: e.drift, Control: a.control,
		KeptX: a.thinX.count, KeptEve: a.thinEve.count, Dim: a.dim, Tracked: len(a.tracked)}
	if len(e.held) > 0 {
		w.Held = make(map[int][3][]float64, len(e.held))
		for t, h := range e.held {
			w.Held[t] = [3][]float64{h.x, h.ref, h.eve}
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&w); err != nil {
		return nil, fmt.Errorf("metrics: encode episode %d: %w", e.episode, err)
	}
	return b.Bytes(), nil
}

// CanonicalEpisode returns a form of an encoded episode (MarshalEpisode's) that any two
// encodings of the same episode share byte for byte: gob's bytes are not that form - its type
// numbers depend on what a process encoded first, and a map's order on chance - while the values
// are (internal/farm compares two hosts' computations of a chunk by it). Every float is written by
// its bits, the held records by step.
func CanonicalEpisode(data []byte) ([]byte, error) {
	var w episodeWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("metrics: decode episode: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %d %d %v %v %d %d %d %d|", w.Episode, w.Steps, w.Next, w.Control, w.EveOK, w.KeptX, w.KeptEve, w.Dim, w.Tracked)
	floats := func(v []float64) {
		fmt.Fprintf(&b, "%d:", len(v))
		for _, x := range v {
			_ = binary.Write(&b, binary.LittleEndian, math.Float64bits(x))
		}
	}
	for _, v := range [][]float64{w.X0, w.Err, w.Sq, w.MaxDev, w.Eve, w.Avg, w.AbsMax, {w.Xstar, w.Sum0, w.Scale, w.SumDev, w.Drift}} {
		floats(v)
	}
	steps := make([]int, 0, len(w.Held))
	for t := range w.Held {
		steps = append(steps, t)
	}
	slices.Sort(steps)
	for _, t := range steps {
		fmt.Fprintf(&b, "held %d:", t)
		for _, v := range w.Held[t] {
			floats(v)
		}
	}
	return b.Bytes(), nil
}

// UnmarshalEpisode decodes an episode of MarshalEpisode into a buffer of a (NewEpisode), ready
// for AddEpisode. It refuses an episode of another shape (another plan: steps, dimension, kept
// steps) and one whose counters are out of range, so a malformed answer never reaches the fold.
func (a *Accumulator) UnmarshalEpisode(data []byte) (*Episode, error) {
	var w episodeWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("metrics: decode episode: %w", err)
	}
	if w.Control != a.control || w.Steps != a.steps || w.KeptX != a.thinX.count || w.KeptEve != a.thinEve.count ||
		w.Dim != a.dim || w.Tracked != len(a.tracked) {
		return nil, fmt.Errorf("metrics: episode %d: shape (control %v, T %d, d %d) is not the accumulator's (control %v, T %d, d %d)",
			w.Episode, w.Control, w.Steps, w.Dim, a.control, a.steps, a.dim)
	}
	if w.Episode < 0 || w.Next < 0 || w.Next > w.Steps+1 {
		return nil, fmt.Errorf("metrics: episode %d: %d of %d steps reduced", w.Episode, w.Next, w.Steps+1)
	}
	e := a.NewEpisode(w.Episode)
	for _, f := range []struct {
		name     string
		dst, src []float64
	}{{"x0", e.x0, w.X0}, {"err", e.err, w.Err}, {"sq", e.sq, w.Sq}, {"maxDev", e.maxDev, w.MaxDev},
		{"eve", e.eve, w.Eve}, {"avg", e.avg, w.Avg}, {"absMax", e.absMax, w.AbsMax}} {
		if len(f.src) != len(f.dst) {
			return nil, fmt.Errorf("metrics: episode %d: %s has %d values, want %d", w.Episode, f.name, len(f.src), len(f.dst))
		}
		copy(f.dst, f.src)
	}
	if len(w.EveOK) != len(e.eveOK) {
		return nil, fmt.Errorf("metrics: episode %d: eveOK has %d values, want %d", w.Episode, len(w.EveOK), len(e.eveOK))
	}
	copy(e.eveOK, w.EveOK)
	e.next, e.xstar, e.sum0, e.scale, e.sumDev, e.drift = w.Next, w.Xstar, w.Sum0, w.Scale, w.SumDev, w.Drift
	for t, h := range w.Held {
		if t <= e.next || t > e.steps {
			return nil, fmt.Errorf("metrics: episode %d: held step %d outside %d..%d", w.Episode, t, e.next+1, e.steps)
		}
		if err := a.valid(w.Episode, t, h[0], h[1], h[2]); err != nil {
			return nil, err
		}
		if e.held == nil {
			e.held = map[int]heldRecord{}
		}
		e.held[t] = heldRecord{x: h[0], ref: h[1], eve: h[2]}
	}
	return e, nil
}

// Index is the episode e reduces.
func (e *Episode) Index() int { return e.episode }
