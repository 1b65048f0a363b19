package audit

import (
	"math"
	"sync"

	"github.com/dpsim/dpsim/pkg/rng"
)

// Trials accumulates the outcomes (secret bit, adversary score) of the distinguishing game, from any
// engine and in any order. Bit 0 means the challenger ran the system on x, bit 1 on the adjacent x'.
//
// Each trial also carries a split tag derived from its trial index alone (a hash, independent of the
// score), which decides whether the trial serves threshold selection or bounding (Options.Selection). The
// analysis therefore depends only on the multiset of (trial, bit, score): the same trials merged from
// workers in any order give bit-identical results.
//
// Concurrency: Add and AddTrial are not safe for concurrent use; give each worker its own Trials (a
// buffer) and Merge the buffers into the shared one, which is safe to call from several goroutines at
// once. Analyze may run concurrently with Merge (it works on a snapshot).
type Trials struct {
	mu    sync.Mutex
	score [2][]float64
	tag   [2][]uint8
	next  uint64 // trial index used by Add
	bad   int64  // rejected trials (bit not 0/1, score not finite)
}

// splitKey labels the hash that turns a trial index into its split tag.
var splitKey = rng.Label("audit-split")

// NewTrials returns an empty accumulator with room for capPerSide trials per bit (a hint; 0 is fine).
func NewTrials(capPerSide int) *Trials {
	t := &Trials{}
	if capPerSide > 0 {
		for b := 0; b < 2; b++ {
			t.score[b] = make([]float64, 0, capPerSide)
			t.tag[b] = make([]uint8, 0, capPerSide)
		}
	}
	return t
}

// splitTag is the top byte of a hash of the trial index: uniform on 0..255 and independent of the score.
func splitTag(trial uint64) uint8 {
	return uint8(rng.Derive(splitKey, trial) >> 56)
}

// AddTrial records trial number `trial` with secret bit (0: x, 1: x') and the adversary's score. The
// trial number must be unique across all merged buffers (engines use their episode/trial index; the
// challenger's stream is rng.New(seed, rng.Label("challenger"), trial)). A bit other than 0/1 or a
// non-finite score is counted as rejected and makes Analyze fail. Amortised O(1), no allocation once the
// capacity suffices.
func (t *Trials) AddTrial(trial uint64, bit int, score float64) {
	if (bit != 0 && bit != 1) || math.IsNaN(score) || math.IsInf(score, 0) {
		t.bad++
		return
	}
	t.score[bit] = append(t.score[bit], score)
	t.tag[bit] = append(t.tag[bit], splitTag(trial))
}

// Add records a trial numbered by an internal counter (0, 1, 2, ... per accumulator). Use it for a single
// sequential producer; parallel producers should use AddTrial with global trial numbers.
func (t *Trials) Add(bit int, score float64) {
	t.AddTrial(t.next, bit, score)
	t.next++
}

// Merge appends all trials of o (which must not be modified meanwhile) to t. Safe for concurrent use on
// the same t.
func (t *Trials) Merge(o *Trials) {
	if o == nil || o == t {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for b := 0; b < 2; b++ {
		t.score[b] = append(t.score[b], o.score[b]...)
		t.tag[b] = append(t.tag[b], o.tag[b]...)
	}
	t.bad += o.bad
}

// Reset empties the accumulator, keeping its capacity (a worker buffer can be reused after Merge).
func (t *Trials) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for b := 0; b < 2; b++ {
		t.score[b] = t.score[b][:0]
		t.tag[b] = t.tag[b][:0]
	}
	t.next, t.bad = 0, 0
}

// Count returns the number of accepted trials with bit 0 (x) and bit 1 (x'), and the rejected ones.
func (t *Trials) Count() (n0, n1 int, rejected int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.score[0]), len(t.score[1]), t.bad
}

// Scores returns a copy of the scores recorded for one bit (in insertion order).
func (t *Trials) Scores(bit int) []float64 {
	if bit != 0 && bit != 1 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]float64(nil), t.score[bit]...)
}
