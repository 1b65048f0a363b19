package live

import (
	"math"
	"time"

	"github.com/dpsim/dpsim/internal/rss"
)

// RSSInterval is how often the resident set of each running process is sampled.
const RSSInterval = time.Second

// Started records the processes of point k as started, with their process ids (0: not known,
// e.g. attached): their resident set is sampled at once and while they run (SampleRSS).
func (h *Hub) Started(k int, names []string, pids []int) {
	if h == nil {
		return
	}
	h.started(k, names, pids)
	h.SampleRSS()
}

func (h *Hub) started(k int, names []string, pids []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rssProcs = h.rssProcs[:0]
	for i, n := range names {
		p := h.proc(k, n)
		p.State = "ready"
		if i < len(pids) && pids[i] > 0 {
			p.PID = pids[i]
			h.rssProcs = append(h.rssProcs, p)
		}
	}
	h.seq++
}

// SampleRSS reads the resident set of every running process of the point in progress
// (rss.Current) and records it. The reads happen outside the hub's lock.
func (h *Hub) SampleRSS() {
	if h == nil {
		return
	}
	h.mu.Lock()
	type target struct {
		p   *Proc
		pid int
	}
	var ts []target
	for _, p := range h.rssProcs {
		if !p.Finished {
			ts = append(ts, target{p, p.PID})
		}
	}
	h.mu.Unlock()
	vals := make([]int64, len(ts))
	for i, t := range ts {
		vals[i], _ = rss.Current(t.pid)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, t := range ts {
		if t.p.Finished || vals[i] <= 0 { // gone (a crash, its end): keep the last sample
			continue
		}
		t.p.RSSBytes = vals[i]
		t.p.RSSMaxBytes = max(t.p.RSSMaxBytes, vals[i])
	}
	if len(ts) > 0 {
		h.seq++
	}
}

// SampleRSSEvery samples the processes' resident sets every d until the run ends.
func (h *Hub) SampleRSSEvery(d time.Duration) {
	if h == nil {
		return
	}
	go func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-h.ended:
				return
			case <-tick.C:
				h.SampleRSS()
			}
		}
	}()
}

// LatenessBuckets are the upper bounds (seconds) of the lateness histogram: from 100 us to
// 1 s, about three per decade (a realtime period is 1 ms to 1 s).
var LatenessBuckets = []float64{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}

// latenessHist is a cumulative-bucket histogram of step lateness (seconds).
type latenessHist struct {
	counts []uint64 // per bucket (not cumulative), the last one +Inf
	n      uint64
	sum    float64
	max    float64
}

func newLatenessHist() *latenessHist {
	return &latenessHist{counts: make([]uint64, len(LatenessBuckets)+1)}
}

func (l *latenessHist) add(sec float64) {
	if math.IsNaN(sec) {
		return
	}
	sec = max(sec, 0) // a release before its tick (clock granularity) is on time
	i := 0
	for i < len(LatenessBuckets) && sec > LatenessBuckets[i] {
		i++
	}
	l.counts[i]++
	l.n++
	l.sum += sec
	l.max = max(l.max, sec)
}

// cumulative returns the counts at or below each bucket bound (Prometheus's form).
func (l *latenessHist) cumulative() map[float64]uint64 {
	out := make(map[float64]uint64, len(LatenessBuckets))
	var c uint64
	for i, b := range LatenessBuckets {
		c += l.counts[i]
		out[b] = c
	}
	return out
}

// LatenessSummary is a lateness histogram in the State: messages observed, their mean and worst
// lateness, and the count per bucket (upper bounds LatenessBuckets, then +Inf).
type LatenessSummary struct {
	N       uint64    `json:"n"`
	MeanSec float64   `json:"mean_sec"`
	MaxSec  float64   `json:"max_sec"`
	Le      []float64 `json:"le"`
	Counts  []uint64  `json:"counts"`
}

func (l *latenessHist) summary() *LatenessSummary {
	if l.n == 0 {
		return nil
	}
	return &LatenessSummary{N: l.n, MeanSec: l.sum / float64(l.n), MaxSec: l.max, Le: LatenessBuckets, Counts: append([]uint64(nil), l.counts...)}
}
