package live

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// The audit hub's pace and bounds: the bounds are recomputed at most every AuditInterval, and
// never sooner than AuditCost times the last recomputation took after it (so that they take at
// most about a quarter of one core from the engine); a point keeps at most MaxBoundPoints
// points of its bounds against trials (halved, the last kept, when full); the claim's
// trade-off curves have ClaimCurvePoints points.
const (
	AuditInterval    = 400 * time.Millisecond
	AuditCost        = 3
	MaxBoundPoints   = 1000
	ClaimCurvePoints = 201
)

// AuditInfo is what the audit hub knows of an audit before it starts.
type AuditInfo struct {
	Scenario   string  `json:"scenario"`
	Kind       string  `json:"kind"`       // cloud-control or consensus
	Engine     string  `json:"engine"`     // fast or wire
	Dispatch   bool    `json:"dispatch"`   // the fast engine's trials are played by workers
	Confidence float64 `json:"confidence"` // the joint level of every point's bounds
	Selection  string  `json:"selection"`  // split or bonferroni
	// Live says whether the bounds are recomputed as the trials come (false with --dispatch:
	// the workers' trials are folded by the coordinator; progress and the final bounds only).
	Live   bool             `json:"live"`
	Points []AuditPointInfo `json:"points"`
}

// AuditPointInfo is one audited point (a sweep, or --episodes-per-trial-sweep, has several):
// its claim and the trade-off curves the claim allows.
type AuditPointInfo struct {
	Name             string `json:"name"`
	Trials           int    `json:"trials"` // per value of the secret bit: 2 Trials are played
	EpisodesPerTrial int    `json:"episodes_per_trial"`
	Mechanism        string `json:"mechanism"`
	// EpsilonClaimed is the per-episode claim, EpsilonClaimedRun the claim the verdict judges
	// (composed over EpisodesPerTrial episodes), Delta its delta (0 for Laplace: pure eps) and
	// MuClaimed the mu of a Gaussian claim (0 otherwise).
	EpsilonClaimed    float64 `json:"epsilon_claimed"`
	EpsilonClaimedRun float64 `json:"epsilon_claimed_run"`
	Delta             float64 `json:"delta"`
	MuClaimed         float64 `json:"mu_claimed,omitempty"`
	// Claim is the trade-off curve of the claim (audit.AllowedFNR: FNR below it is
	// forbidden), and for a Gaussian claim its mu-GDP curve (audit.GDPFNR at MuClaimed).
	Claim TradeoffCurve `json:"claim"`

	game *audit.Game
	opts audit.ReportOptions
}

// TradeoffCurve is a trade-off curve: FNR against FPR (FNRGDP: a second curve on the same FPR).
type TradeoffCurve struct {
	FPR    Floats `json:"fpr"`
	FNR    Floats `json:"fnr"`
	FNRGDP Floats `json:"fnr_gdp,omitempty"`
}

// NewAuditPoint describes point name of an audit: game g, trials per value of the secret bit,
// analysed with o (the options of the audit's own Game.Analyze: the hub's bounds are the same
// function of the trials so far).
func NewAuditPoint(name string, g *audit.Game, trials int, o audit.ReportOptions) (AuditPointInfo, error) {
	claim, err := g.ClaimRun()
	if err != nil {
		return AuditPointInfo{}, err
	}
	pr := g.Plan.Scenario.Privacy
	p := AuditPointInfo{Name: name, Trials: trials, EpisodesPerTrial: g.EpisodesPerTrial(), Mechanism: string(g.Plan.Mechanism),
		EpsilonClaimed: pr.Epsilon, EpsilonClaimedRun: claim, Delta: pr.Delta, game: g, opts: o}
	if g.Plan.Mechanism == privacy.Laplace {
		p.Delta = 0 // Game.Analyze judges Laplace as pure eps
	} else if mu, err := privacy.KappaInverse(claim, p.Delta); err == nil {
		p.MuClaimed = mu
	}
	for i := range ClaimCurvePoints {
		x := float64(i) / (ClaimCurvePoints - 1)
		p.Claim.FPR = append(p.Claim.FPR, x)
		p.Claim.FNR = append(p.Claim.FNR, audit.AllowedFNR(claim, p.Delta, x))
		if p.MuClaimed > 0 {
			p.Claim.FNRGDP = append(p.Claim.FNRGDP, audit.GDPFNR(p.MuClaimed, x))
		}
	}
	return p, nil
}

// AuditBounds are a point's lower bounds on eps against the trials they were computed from
// (both values of the secret bit), oldest first: one series per row of audit.Bounds, its JSON
// key the row's Name (series lines them up; audit_bounds_test.go checks the keys).
type AuditBounds struct {
	Trials []int       `json:"trials"`
	CP     ExactFloats `json:"eps_lb_cp"`
	GDP    ExactFloats `json:"eps_lb_gdp"` // null for a Laplace claim
	FDP    ExactFloats `json:"eps_lb_fdp"`
}

// series are b's series in the order of audit.Bounds: series()[i] is audit.Bounds[i]'s.
func (b *AuditBounds) series() []*ExactFloats { return []*ExactFloats{&b.CP, &b.GDP, &b.FDP} }

// newAuditBounds are the empty series of a point before its first recomputation.
func newAuditBounds() AuditBounds {
	b := AuditBounds{Trials: []int{}}
	for _, s := range b.series() {
		*s = ExactFloats{}
	}
	return b
}

// ExactFloats is a series written with every digit (the final bounds equal --json's numbers
// to the bit), NaN and the infinities as null: figure.Values, the figures' data series.
type ExactFloats = figure.Values

// AuditPoint is the state of one point of the audit.
type AuditPoint struct {
	AuditPointInfo
	Played int `json:"played"` // trials played (both bits)
	// Scored are the trials the hub received by secret bit: those the bounds can use.
	Scored audit.Sides `json:"scored"`
	// Bounds against trials: one point per recomputation, the last one the audit's result
	// when Final.
	Bounds AuditBounds `json:"bounds"`
	// Score is the strongest score at the latest bounds, Curve its empirical trade-off curve
	// (Result.Curve: the point estimates of every threshold's FPR and FNR).
	Score       string        `json:"score"`
	Curve       TradeoffCurve `json:"curve"`
	Analyses    int           `json:"analyses"`     // recomputations of the bounds
	AnalysisSec float64       `json:"analysis_sec"` // how long the last one took
	Note        string        `json:"note,omitempty"`
	// Final: the point's audit ended, and Verdict, VerdictLine and the last bounds are its
	// result's (the numbers of --json).
	Final       bool   `json:"final"`
	Verdict     string `json:"verdict,omitempty"`
	VerdictLine string `json:"verdict_line,omitempty"`
	// Sequential is the running evidence of dpsim audit --sequential: at every look, each
	// family's ln e-value of the claim against ln(1/alpha) and its anytime-valid lower bound
	// (nil without --sequential). Unlike the fixed-size bounds, it may be watched and stopped on.
	Sequential *audit.SequentialReport `json:"sequential,omitempty"`

	pending, spare *audit.Outcome // trials received, not yet analysed (two buffers, swapped)
	stop, stopped  chan struct{}
}

// AuditState is the JSON snapshot of the audit hub (/api/state, the /events "state" events).
type AuditState struct {
	AuditInfo
	Status       string        `json:"status"` // running, then ok, failed or interrupted
	Error        string        `json:"error,omitempty"`
	Verdict      string        `json:"verdict,omitempty"` // over every point, at the end
	Point        int           `json:"point"`             // the point in progress
	TrialsDone   int           `json:"trials_done"`       // played, over the points
	TrialsTotal  int           `json:"trials_total"`
	ElapsedSec   float64       `json:"elapsed_sec"`
	RemainingSec *float64      `json:"remaining_sec"` // null: not known yet
	RatePerSec   float64       `json:"rate_per_sec"`  // trials played per second
	Points       []*AuditPoint `json:"points"`
}

// AuditHub is the live state of one audit (dpsim audit --ui): progress, and each point's lower
// bounds recomputed from the trials so far by the audit's own analysis (Game.Analyze with the
// audit's options) at most every AuditInterval, on a goroutine of its own. Feeding it (Chunk)
// copies the trials under a mutex. Every method may be called from any goroutine, and on a nil
// *AuditHub does nothing.
type AuditHub struct {
	mu      sync.Mutex
	seq     uint64
	info    AuditInfo
	start   time.Time
	first   time.Time // when the first point began
	played  int       // trials played over the finished points
	point   int
	points  []*AuditPoint
	status  string
	err     string
	verdict string
	endAt   time.Time
	ended   chan struct{}
	cache   jsonCache
}

// NewAuditHub returns the hub of the audit described by info, started at start.
func NewAuditHub(info AuditInfo, start time.Time) *AuditHub {
	h := &AuditHub{info: info, start: start, status: "running", ended: make(chan struct{})}
	for _, pi := range info.Points {
		h.points = append(h.points, &AuditPoint{AuditPointInfo: pi, Bounds: newAuditBounds()})
	}
	return h
}

// ServeAudit starts serving the audit hub h on addr (see Serve): the page / is web/audit.html.
func ServeAudit(addr string, h *AuditHub) (*Server, error) { return serve(addr, h, "audit.html") }

// BeginPoint says point k starts playing: its bounds are recomputed from the trials Chunk
// hands over until PointDone.
func (h *AuditHub) BeginPoint(k int) {
	if h == nil || k >= len(h.points) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.point = k
	if h.first.IsZero() {
		h.first = time.Now()
	}
	p := h.points[k]
	g := p.game
	p.pending, p.spare = g.NewOutcome(h.info.Engine, 0, p.Trials), g.NewOutcome(h.info.Engine, 0, p.Trials)
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go h.analyse(p, p.stop, p.stopped)
	h.seq++
}

// Progress says done trials of the current point were played (of 2 Trials).
func (h *AuditHub) Progress(done int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.points[h.point].Played = done
	h.seq++
}

// Chunk takes trials of the current point (an engine's, valid during the call: they are
// copied; audit.FastOptions.Chunk).
func (h *AuditHub) Chunk(part *audit.Outcome) {
	if h == nil {
		return
	}
	n0, n1, _ := part.Trials[0].Count()
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.points[h.point]
	if p.pending == nil || p.Final {
		return
	}
	p.pending.Merge(part)
	p.Scored.X += n0
	p.Scored.XPrime += n1
	h.seq++
}

// analyse recomputes point p's bounds from the trials received so far, paced (AuditInterval,
// AuditCost), until stop is closed (PointDone, Finish); it closes stopped when it returns.
func (h *AuditHub) analyse(p *AuditPoint, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	acc := p.game.NewOutcome(h.info.Engine, 0, p.Trials) // every trial received, owned here
	wait := AuditInterval
	for {
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
		h.mu.Lock()
		part := p.pending
		p.pending, p.spare = p.spare, part
		h.mu.Unlock()
		if part.Episodes == 0 {
			wait = AuditInterval
			continue
		}
		acc.Merge(part) // part is the spare now: Chunk merges into the other buffer
		part.Reset()
		t0 := time.Now()
		rep, err := p.game.Analyze(acc, p.opts)
		took := time.Since(t0)
		wait = max(AuditInterval, AuditCost*took)
		h.mu.Lock()
		if !p.Final {
			p.Analyses++
			p.AnalysisSec = took.Seconds()
			if err != nil { // too few trials yet to split them
				p.Note = err.Error()
			} else {
				p.Note = ""
				p.record(rep, false)
			}
			h.seq++
		}
		h.mu.Unlock()
	}
}

// record appends the bounds of rep (an analysis of the trials so far, or the final one) and
// takes its strongest score's empirical trade-off curve. The final one replaces a last point
// of as many trials (the same analysis of the same trials).
func (p *AuditPoint) record(rep *audit.GameReport, final bool) {
	n := 0
	if len(rep.Scores) > 0 {
		n = rep.Scores[0].Result.Trials.X + rep.Scores[0].Result.Trials.XPrime
	}
	b := &p.Bounds
	if k := len(b.Trials) - 1; final && k >= 0 && b.Trials[k] == n {
		b.Trials = b.Trials[:k]
		for _, s := range b.series() {
			*s = (*s)[:k]
		}
	}
	if len(b.Trials) >= MaxBoundPoints { // keep every other point, and the newest
		thin := func(v ExactFloats) ExactFloats {
			k := 0
			for i := 0; i < len(v); i += 2 {
				v[k] = v[i]
				k++
			}
			return v[:k]
		}
		ts := b.Trials[:0]
		for i := 0; i < len(b.Trials); i += 2 {
			ts = append(ts, b.Trials[i])
		}
		b.Trials = ts
		for _, s := range b.series() {
			*s = thin(*s)
		}
	}
	b.Trials = append(b.Trials, n)
	for i, s := range b.series() {
		v := math.NaN() // a bound the claim's audit does not compute (pure eps: no GDP or f-DP bound) is null
		if lb := audit.Bounds[i]; lb.ValidFor(p.Mechanism) {
			v = lb.OfReport(rep)
		}
		*s = append(*s, v)
	}
	p.Score = rep.Score
	p.Curve = TradeoffCurve{FPR: Floats{}, FNR: Floats{}}
	if best := rep.Best(); best != nil {
		for _, c := range best.Curve {
			p.Curve.FPR = append(p.Curve.FPR, c.FPR)
			p.Curve.FNR = append(p.Curve.FNR, c.FNR)
		}
	}
}

// PointDone ends point k with the audit's result rep (the report --json prints): its bounds
// are the last point of the point's bounds, its verdict the point's. Computed by the same
// Game.Analyze on every trial, they are where the recomputed bounds were heading.
func (h *AuditHub) PointDone(k int, rep *audit.GameReport) {
	if h == nil || k >= len(h.points) {
		return
	}
	h.stopPoint(k)
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.points[k]
	if p.Final {
		return
	}
	p.Final, p.Note = true, ""
	p.Played = rep.Episodes / max(1, rep.EpisodesPerTrial)
	if len(rep.Scores) > 0 {
		p.Scored = rep.Scores[0].Result.Trials
	}
	p.record(rep, true)
	p.Verdict, p.VerdictLine = rep.Verdict, rep.VerdictLine()
	h.played += p.Played
	h.seq++
}

// Evidence records the sequential test's evidence of point k at its latest look.
func (h *AuditHub) Evidence(k int, rep *audit.SequentialReport) {
	if h == nil || k >= len(h.points) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.points[k].Sequential = rep
	h.seq++
}

// stopPoint stops point k's recomputations (waiting for one under way).
func (h *AuditHub) stopPoint(k int) {
	h.mu.Lock()
	p := h.points[k]
	stop, stopped := p.stop, p.stopped
	p.stop = nil
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
}

// Finish records how the audit ended (status ok, failed or interrupted; its error; the verdict
// over every point) and ends the event streams.
func (h *AuditHub) Finish(status, err, verdict string) {
	if h == nil {
		return
	}
	for k := range h.points {
		h.stopPoint(k)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != "running" {
		return
	}
	h.status, h.err, h.verdict, h.endAt = status, err, verdict, time.Now()
	h.seq++
	close(h.ended)
}

// Ended is closed when the audit ended (Finish).
func (h *AuditHub) Ended() <-chan struct{} { return h.ended }

// snapshot is the hub's AuditState, made under its lock (its points are the hub's own: encode
// it before the lock is released).
func (h *AuditHub) snapshot() *AuditState {
	st := &AuditState{AuditInfo: h.info, Status: h.status, Error: h.err, Verdict: h.verdict, Point: h.point, Points: h.points}
	played := h.played
	for _, p := range h.points {
		st.TrialsTotal += 2 * p.Trials
		if !p.Final {
			played += p.Played
		}
	}
	st.TrialsDone = played
	end := time.Now()
	if !h.endAt.IsZero() {
		end = h.endAt
	}
	st.ElapsedSec = end.Sub(h.start).Seconds()
	if played > 0 {
		st.RatePerSec = float64(played) / end.Sub(h.first).Seconds()
	}
	switch {
	case h.status != "running":
		zero := 0.0
		st.RemainingSec = &zero
	case played > 0:
		left := float64(st.TrialsTotal-played) / st.RatePerSec
		st.RemainingSec = &left
	}
	return st
}

// JSON returns the hub's AuditState as JSON and its version (see Hub.JSON).
func (h *AuditHub) JSON(maxAge time.Duration) (version uint64, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &h.cache
	if c.data != nil && c.seq == h.seq && time.Since(c.at) < maxAge {
		return c.version, c.data
	}
	b, err := json.Marshal(h.snapshot())
	if err != nil {
		b = []byte(fmt.Sprintf(`{"status":"error","error":%q}`, err.Error()))
	}
	c.seq, c.at, c.data = h.seq, time.Now(), b
	c.version++
	return c.version, b
}

// State returns a copy of the hub's state (decoded from JSON: for tests and tools).
func (h *AuditHub) State() (*AuditState, error) {
	_, b := h.JSON(0)
	var st AuditState
	return &st, json.Unmarshal(b, &st)
}
