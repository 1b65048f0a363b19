package live

import (
	"encoding/json"
	"time"
)

// snapshot is the State of the hub, made under its lock (its series are the hub's own: encode
// it before the lock is released).
func (h *Hub) snapshot() *State {
	st := &State{Info: h.info, Status: h.status, Error: h.err, Point: h.point, Done: append([]int(nil), h.done...),
		Episodes: h.series, Processes: make([]*Proc, 0, len(h.procs)), Links: []LinkRow{}, LiveLinks: append([]LinkRow{}, h.live...)}
	for _, p := range h.procs { // copies: ProcessDone rewrites them
		c := *p
		st.Processes = append(st.Processes, &c)
	}
	for k, n := range h.done {
		st.EpisodesDone += n
		st.StepsDone += n * h.info.Points[k].Steps
	}
	st.EpisodesTotal = h.info.Runs * len(h.info.Points)
	if h.endAt.IsZero() {
		st.ElapsedSec = time.Since(h.start).Seconds()
	} else {
		st.ElapsedSec = h.endAt.Sub(h.start).Seconds()
	}
	if h.played > 0 && h.status == "running" {
		rate := float64(h.played) / time.Since(h.first).Seconds() // episodes per second
		left := float64(st.EpisodesTotal-st.EpisodesDone) / rate
		st.RemainingSec = &left
	} else if h.status != "running" {
		zero := 0.0
		st.RemainingSec = &zero
	}
	for k, ls := range h.links {
		for _, l := range ls {
			st.Links = append(st.Links, LinkRow{Point: k, LinkStats: l})
		}
	}
	st.Stream = h.stream
	st.Aggregate = h.agg // never changed in place: Aggregate replaces it
	if h.status == "running" {
		st.Stall = h.stall
	}
	for role, l := range h.lateness {
		if st.Lateness == nil {
			st.Lateness = map[string]*LatenessSummary{}
		}
		st.Lateness[role] = l.summary()
	}
	if h.timeline != nil {
		tl := h.timeline()
		st.Timeline = tl[max(0, len(tl)-MaxTimeline):]
	}
	return st
}

// JSON returns the hub's State as JSON and its version: a new encoding when the state changed
// (or the cached one is older than maxAge: the elapsed time moves on), else the cached one
// with the same version.
func (h *Hub) JSON(maxAge time.Duration) (version uint64, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tl := 0
	if h.timeline != nil {
		tl = len(h.timeline())
	}
	c := &h.cache
	if c.data != nil && c.seq == h.seq && c.tl == tl && time.Since(c.at) < maxAge {
		return c.version, c.data
	}
	b, err := json.Marshal(h.snapshot())
	if err != nil { // the state holds no value JSON refuses (Floats writes NaN as null)
		b = []byte(`{"status":"error"}`)
	}
	c.seq, c.tl, c.at, c.data = h.seq, tl, time.Now(), b
	c.version++
	return c.version, b
}

// State returns a copy of the hub's state (decoded from JSON: for tests and tools).
func (h *Hub) State() (*State, error) {
	_, b := h.JSON(0)
	var st State
	return &st, json.Unmarshal(b, &st)
}
