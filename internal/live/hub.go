package live

import (
	"fmt"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The hub's bounds: the series of the last MaxEpisodes traced episodes are kept, each thinned
// to about MaxPoints steps, with at most MaxComponents components of a vector (x, x_r, the
// eavesdropper's estimate), and the last MaxTimeline events of the timeline are shown.
const (
	MaxEpisodes   = 3
	MaxPoints     = 400
	MaxComponents = 4
	MaxTimeline   = 200
)

// Info is what the hub knows of a run before it starts.
type Info struct {
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`   // cloud-control or consensus
	Engine   string `json:"engine"` // nats or fast
	Mode     string `json:"mode"`   // lockstep or realtime
	Runs     int    `json:"runs"`   // episodes per point
	// TraceEpisodes is --trace-episodes: episodes 0..TraceEpisodes-1 of each point are traced
	// (their series come in Episodes), -1 every one.
	TraceEpisodes int         `json:"trace_episodes"`
	Points        []PointInfo `json:"points"`
}

// PointInfo is one point of the run (a sweep has several).
type PointInfo struct {
	Name  string `json:"name"`
	Steps int    `json:"steps"` // T: an episode has the steps 0..T
	// Bound is the paper's bound of the point's plotted deviation (0: none): consensus,
	// Proposition 1's limit of E||x(t) - 1 x*||^2; cloud control, the limit Var(gamma) of
	// E||x(t) - x_r(t)||^2 for a constant offset on the paper's vehicle (the report's
	// position-offset check: p(t) - p_r(t) -> -gamma, v(t) - v_r(t) -> 0).
	Bound float64 `json:"bound,omitempty"`
}

// Floats is a series whose NaN entries (a value not known at that step) are JSON nulls.
type Floats []float64

// MarshalJSON writes NaN and the infinities as null.
func (f Floats) MarshalJSON() ([]byte, error) {
	return figure.AppendJSONArray(make([]byte, 0, 2+len(f)*12), f, 6), nil
}

// Series is one traced episode's per-step values, thinned (T: the steps kept).
type Series struct {
	Point    int   `json:"point"`
	Episode  int   `json:"episode"`
	Complete bool  `json:"complete"` // its terminal step came
	T        []int `json:"t"`
	// Cloud control: x(t) and the reference x_r(t) by component, the true x(0), the
	// eavesdropper's estimate of x(0) at t by component (null while not identifiable), the
	// tracking error ||x(t) - x_r(t)|| and the eavesdropper's error ||estimate - x(0)||.
	X             []Floats  `json:"x,omitempty"`
	Ref           []Floats  `json:"ref,omitempty"`
	X0            []float64 `json:"x0,omitempty"`
	EveX0         []Floats  `json:"eve_x0,omitempty"`
	TrackingError Floats    `json:"tracking_error,omitempty"`
	// SqTrackingError is ||x(t) - x_r(t)||^2 (against the point's Bound).
	SqTrackingError Floats `json:"sq_tracking_error,omitempty"`
	EveError        Floats `json:"eve_error"`
	// Consensus: ||x(t) - 1 x*||^2 (against the point's Bound) and max_i |x_i(t) - x*|,
	// x* = mean_i x_i(0).
	SqDeviation     Floats `json:"sq_deviation,omitempty"`
	MaxAbsDeviation Floats `json:"max_abs_deviation,omitempty"`

	stride int
	steps  int
	x0     []float64 // the whole x(0) (consensus: every agent's)
	xstar  float64
}

// LinkRow is one link's counters (fault.LinkStats): at a finished point, from the processes'
// results; in LiveLinks, the injector's side replayed while the point runs (LinkReplay), over
// Episodes episodes.
type LinkRow struct {
	Point    int `json:"point"`
	Episodes int `json:"episodes,omitempty"`
	fault.LinkStats
}

// Proc is one process's health: ready when its point started, then what its result said.
type Proc struct {
	Point int    `json:"point"`
	Name  string `json:"name"`
	Key   string `json:"key"` // its key in summary.json's invalid map (pNN/name in a sweep)
	// State is ready (running), then the process's status (ok, failed, interrupted, ...).
	State         string            `json:"state"`
	Error         string            `json:"error,omitempty"`
	ExitCode      int               `json:"exit_code"`
	PeakRSSBytes  int64             `json:"peak_rss_bytes"`
	Episodes      int               `json:"episodes"`
	Steps         int               `json:"steps"`
	Disconnects   uint64            `json:"disconnects"`
	Reconnects    uint64            `json:"reconnects"`
	AsyncErrors   uint64            `json:"async_errors"`
	SlowConsumers uint64            `json:"slow_consumers"`
	Invalid       map[string]uint64 `json:"invalid,omitempty"` // dropped data messages by reason
	Missed        int               `json:"missed"`            // steps that missed their deadline
	Overruns      int               `json:"overruns"`          // realtime: steps begun after their tick
	JitterMaxSec  float64           `json:"jitter_max_sec"`
	Finished      bool              `json:"finished"`
	// PID is the process id the launcher started; RSSBytes its resident set size when last
	// sampled while it ran (every RSSInterval, /proc/<pid>/status VmRSS; 0: not sampled), and
	// RSSMaxBytes the largest sample.
	PID         int   `json:"pid,omitempty"`
	RSSBytes    int64 `json:"rss_bytes"`
	RSSMaxBytes int64 `json:"rss_max_bytes"`
}

// State is the JSON snapshot of the hub (/api/state, the /events "state" events).
type State struct {
	Info
	Status        string                 `json:"status"` // running, then ok, degraded, failed or interrupted
	Error         string                 `json:"error,omitempty"`
	Point         int                    `json:"point"` // the point in progress
	Done          []int                  `json:"done"`  // episodes completed per point
	EpisodesDone  int                    `json:"episodes_done"`
	EpisodesTotal int                    `json:"episodes_total"`
	StepsDone     int                    `json:"steps_done"`
	ElapsedSec    float64                `json:"elapsed_sec"`
	RemainingSec  *float64               `json:"remaining_sec"` // null: not known yet
	Episodes      []*Series              `json:"episodes"`      // the last traced episodes, oldest first
	Links         []LinkRow              `json:"links"`
	LiveLinks     []LinkRow              `json:"live_links"` // the point in progress (or the last one played): injector side, replayed
	Processes     []*Proc                `json:"processes"`
	Timeline      []record.TimelineEvent `json:"timeline"`
	// Lateness is realtime mode's histogram of how late the steps' messages were published
	// after their tick, by publisher role (absent: none observed).
	Lateness map[string]*LatenessSummary `json:"lateness,omitempty"`
	Stream   *Stream                     `json:"stream,omitempty"`
	// Aggregate is the Monte Carlo mean square of the point in progress (or the last one
	// played) over its completed episodes (null: none yet).
	Aggregate *Aggregate `json:"aggregate"`
	// Stall says why the run makes no progress (absent: it does, or it ended).
	Stall *Stall `json:"stall,omitempty"`
}

// Stall is why a running point makes no progress (launch.Stall, and Line its one-line text).
type Stall struct {
	Point               int               `json:"point"`
	Episodes            string            `json:"episodes"`
	SinceSec            float64           `json:"since_sec"`
	Awaiting            []string          `json:"awaiting"`
	Last                map[string]string `json:"last"`
	Drops               map[string]int    `json:"drops,omitempty"`
	Pending             map[string]int    `json:"pending_bytes,omitempty"`
	ServerSlowConsumers int64             `json:"server_slow_consumers,omitempty"`
	Line                string            `json:"line"`
}

// Hub is the live state of one run. Every method may be called from any goroutine, and on a
// nil *Hub (no live view) does nothing.
type Hub struct {
	mu       sync.Mutex
	seq      uint64 // bumped by every change
	info     Info
	start    time.Time
	point    int
	done     []int
	played   int       // episodes played by this launcher (not resumed ones): the rate
	first    time.Time // when the first point began playing
	series   []*Series
	links    [][]fault.LinkStats // per point, when it finished
	replay   *LinkReplay         // the point in progress (nil: none)
	replayK  int
	live     []LinkRow                // its replayed counters
	rssProcs []*Proc                  // the processes sampled (SampleRSS)
	lateness map[string]*latenessHist // by publisher role
	stream   *Stream                  // realtime: the episode in progress as released
	procs    []*Proc
	procIdx  map[string]*Proc
	timeline func() []record.TimelineEvent
	status   string
	err      string
	endAt    time.Time // when the run ended (Finish)
	stall    *Stall    // nil: progressing
	ended    chan struct{}
	agg      *Aggregate // the point in progress (or the last one played)
	cache    jsonCache
}

type jsonCache struct {
	seq     uint64
	tl      int
	at      time.Time
	data    []byte
	version uint64
}

// NewHub returns the hub of a run described by info, started at start.
func NewHub(info Info, start time.Time) *Hub {
	return &Hub{info: info, start: start, done: make([]int, len(info.Points)), links: make([][]fault.LinkStats, len(info.Points)),
		procIdx: map[string]*Proc{}, status: "running", ended: make(chan struct{}), lateness: map[string]*latenessHist{}}
}

// SetTimeline sets where the hub reads the run's timeline of faults and exits (called when a
// snapshot is made).
func (h *Hub) SetTimeline(f func() []record.TimelineEvent) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timeline = f
}

// BeginPoint says point k starts playing.
func (h *Hub) BeginPoint(k int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.point = k
	if h.first.IsZero() {
		h.first = time.Now()
	}
	h.seq++
}

// Progress counts n more episodes completed at the current point.
func (h *Hub) Progress(n int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.point < len(h.done) {
		h.done[h.point] += n
		if r := h.replay; r != nil && h.replayK == h.point {
			r.Replay(h.done[h.point] - 1)
			h.live = liveRows(h.point, r)
		}
	}
	h.played += n
	h.seq++
}

// SetLinks sets the replay of point k's links (nil: none), from the episodes it has done.
func (h *Hub) SetLinks(k int, r *LinkReplay) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.replay, h.replayK, h.live = r, k, nil
	if r != nil && k < len(h.done) {
		r.Skip(h.done[k])
	}
	h.seq++
}

// LinkFaults says point k's faults changed (interventions): its links are replayed with them
// from the next episode (LinkReplay.SetFaults); on an error they are no longer replayed.
func (h *Hub) LinkFaults(k int, f scenario.FaultsSpec) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.replay == nil || h.replayK != k {
		return nil
	}
	if err := h.replay.SetFaults(&f); err != nil {
		h.replay, h.live = nil, nil
		h.seq++
		return err
	}
	return nil
}

func liveRows(k int, r *LinkReplay) []LinkRow {
	st := r.Stats()
	rows := make([]LinkRow, len(st))
	for i := range st {
		rows[i] = LinkRow{Point: k, Episodes: r.Episodes(), LinkStats: st[i]}
	}
	return rows
}

// SetStall records why the run makes no progress (nil: it progresses again).
func (h *Hub) SetStall(st *Stall) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stall = st
	h.seq++
}

// Ready records the processes of point k as ready.
func (h *Hub) Ready(k int, names []string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		p := h.proc(k, n)
		p.State = "ready"
	}
	h.seq++
}

// ProcessDone records what a process of point p.Point reported at its end (p.Name, p.State
// and its counters; Key is set by the hub).
func (h *Hub) ProcessDone(p Proc) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.proc(p.Point, p.Name)
	p.Key, p.Finished = q.Key, true
	p.PID, p.RSSBytes, p.RSSMaxBytes = q.PID, q.RSSBytes, q.RSSMaxBytes // the samples taken while it ran
	*q = p
	h.seq++
}

// proc returns the process name of point k, added when new.
func (h *Hub) proc(k int, name string) *Proc {
	key := name
	if len(h.info.Points) > 1 {
		key = fmt.Sprintf("p%02d/%s", k, name)
	}
	if p := h.procIdx[key]; p != nil {
		return p
	}
	p := &Proc{Point: k, Name: name, Key: key, ExitCode: -1}
	h.procIdx[key] = p
	h.procs = append(h.procs, p)
	return p
}

// PointDone records point k's final counts: its completed episodes and its links.
func (h *Hub) PointDone(k, episodes int, links []fault.LinkStats) {
	if h == nil || k >= len(h.done) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done[k] = episodes
	h.links[k] = append([]fault.LinkStats(nil), links...)
	if h.replayK == k {
		h.replay = nil // its replayed counters stay until the next point begins (SetLinks)
	}
	h.seq++
}

// Finish records how the run ended (its summary's status and error) and ends the event
// streams.
func (h *Hub) Finish(status, err string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != "running" {
		return
	}
	h.status, h.err, h.endAt = status, err, time.Now()
	h.seq++
	close(h.ended)
}

// Ended is closed when the run ended (Finish).
func (h *Hub) Ended() <-chan struct{} { return h.ended }

// Control takes one merged record of a traced cloud-control episode of point k
// (launch.RecordWatcher).
func (h *Hub) Control(k int, r *trace.ControlRecord) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.episode(k, r.Episode)
	if !s.keeps(r.Step) {
		return
	}
	s.addControl(r)
	h.seq++
}

// Consensus takes one merged record of a traced consensus episode of point k
// (launch.RecordWatcher).
func (h *Hub) Consensus(k int, r *trace.ConsensusRecord) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.episode(k, r.Episode)
	if !s.keeps(r.Step) {
		return
	}
	s.addConsensus(r)
	h.seq++
}

// Traces takes one traced episode's records of point k (the fast engine's trace sink).
func (h *Hub) Traces(k int, tr *trace.Traces) {
	for i := range tr.Control {
		h.Control(k, &tr.Control[i])
	}
	for i := range tr.Consensus {
		h.Consensus(k, &tr.Consensus[i])
	}
}

// episode returns the series of episode ep of point k: the newest, or a new one (the oldest
// dropped beyond MaxEpisodes).
func (h *Hub) episode(k, ep int) *Series {
	if n := len(h.series); n > 0 && h.series[n-1].Point == k && h.series[n-1].Episode == ep {
		return h.series[n-1]
	}
	steps := 0
	if k < len(h.info.Points) {
		steps = h.info.Points[k].Steps
	}
	s := &Series{Point: k, Episode: ep, steps: steps, stride: max(1, (steps+MaxPoints)/MaxPoints)}
	if len(h.series) == MaxEpisodes {
		copy(h.series, h.series[1:])
		h.series = h.series[:MaxEpisodes-1]
	}
	h.series = append(h.series, s)
	return s
}

// keeps says whether step t is kept (every stride-th and the terminal one), and marks the
// series complete at the terminal step.
func (s *Series) keeps(t int) bool {
	if s.Complete {
		return false
	}
	if t == s.steps {
		s.Complete = true
		return true
	}
	return t%s.stride == 0
}
