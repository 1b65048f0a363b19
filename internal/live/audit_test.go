package live

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// auditHub returns a hub of one point of the shipped scenario name, with its game, started.
func auditHub(t *testing.T, name string, trials int, o audit.ReportOptions) (*AuditHub, *audit.Game) {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"))
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	g, err := audit.NewGame(p, audit.GameOptions{})
	require.NoError(t, err)
	pi, err := NewAuditPoint(name, g, trials, o)
	require.NoError(t, err)
	h := NewAuditHub(AuditInfo{Scenario: name, Engine: audit.EngineFast, Live: true, Points: []AuditPointInfo{pi}}, time.Now())
	h.BeginPoint(0)
	return h, g
}

// play plays the game with the hub fed by the fast engine's chunk hook, and returns the
// audit's own result.
func play(t *testing.T, h *AuditHub, g *audit.Game, trials int, o audit.ReportOptions) *audit.GameReport {
	t.Helper()
	out, err := audit.PlayFast(context.Background(), g, audit.FastOptions{Trials: trials, Seed: 5, Chunk: h.Chunk,
		Progress: func(done, _ int) { h.Progress(done) }})
	require.NoError(t, err)
	rep, err := g.Analyze(out, o)
	require.NoError(t, err)
	return rep
}

// The hub's bounds are the audit's analysis of the trials so far: once it has analysed every
// trial, its bounds are the result's, to the bit. PointDone then ends the point with them.
func TestAuditHubBoundsAreTheAnalysis(t *testing.T) {
	const n = 20000
	o := audit.ReportOptions{Confidence: 0.9, Selection: audit.SelectSplit}
	h, g := auditHub(t, "audit-vehicle-structured", n, o)
	rep := play(t, h, g, n, o)
	var p *AuditPoint
	require.Eventually(t, func() bool {
		st, err := h.State()
		require.NoError(t, err)
		p = st.Points[0]
		return len(p.Bounds.Trials) > 0 && p.Bounds.Trials[len(p.Bounds.Trials)-1] == 2*n
	}, 10*time.Second, 20*time.Millisecond, "the hub never analysed every trial")
	k := len(p.Bounds.Trials) - 1
	require.Equal(t, rep.EpsilonLBCP, p.Bounds.CP[k])
	require.Equal(t, rep.EpsilonLBGDP, p.Bounds.GDP[k])
	require.Equal(t, rep.EpsilonLBFDP, p.Bounds.FDP[k])
	require.Equal(t, audit.Sides{X: n, XPrime: n}, p.Scored)
	require.False(t, p.Final)

	h.PointDone(0, rep)
	h.Finish("ok", "", rep.Verdict)
	st, err := h.State()
	require.NoError(t, err)
	p = st.Points[0]
	require.True(t, p.Final)
	require.Len(t, p.Bounds.Trials, k+1, "the result replaces the analysis of the same trials")
	require.Equal(t, rep.EpsilonLBCP, p.Bounds.CP[k])
	require.Equal(t, "ok", st.Status)
	require.Equal(t, 2*n, st.TrialsDone)
	select {
	case <-h.Ended():
	default:
		t.Fatal("Finish did not end the streams")
	}
}

// PointDone while the hub is recomputing the bounds waits for that recomputation and returns:
// it never hangs, whenever it comes.
func TestAuditHubPointDoneDuringAnalysis(t *testing.T) {
	const n = 20000
	o := audit.ReportOptions{Confidence: 0.95}
	h, g := auditHub(t, "audit-vehicle-structured", n, o)
	out, err := audit.PlayFast(context.Background(), g, audit.FastOptions{Trials: n, Seed: 5})
	require.NoError(t, err)
	rep, err := g.Analyze(out, o)
	require.NoError(t, err)
	for i := range 3 {
		if i > 0 {
			h, _ = auditHub(t, "audit-vehicle-structured", n, o)
		}
		h.Chunk(out)
		// the analyser took the trials (its buffer is empty): it is analysing them now
		require.Eventually(t, func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.points[0].pending.Episodes == 0
		}, 5*time.Second, time.Millisecond)
		done := make(chan struct{})
		go func() { h.PointDone(0, rep); h.Finish("ok", "", rep.Verdict); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: PointDone hangs", i)
		}
	}
}

// The bounds kept stay within MaxBoundPoints, oldest thinned, newest kept; a nil hub does nothing.
func TestAuditHubBounded(t *testing.T) {
	p := &AuditPoint{}
	rep := &audit.GameReport{EpsilonLBCP: 1, Scores: []audit.ScoreResult{{Name: "s", Result: &audit.Result{}}}}
	for i := range 3 * MaxBoundPoints {
		rep.Scores[0].Result.Trials = audit.Sides{X: i, XPrime: i}
		p.record(rep, false)
	}
	require.LessOrEqual(t, len(p.Bounds.Trials), MaxBoundPoints)
	require.Equal(t, 2*(3*MaxBoundPoints-1), p.Bounds.Trials[len(p.Bounds.Trials)-1])
	require.Equal(t, 0, p.Bounds.Trials[0])
	require.Len(t, p.Bounds.CP, len(p.Bounds.Trials))

	var h *AuditHub
	h.BeginPoint(0)
	h.Progress(1)
	h.Chunk(nil)
	h.PointDone(0, rep)
	h.Finish("ok", "", "")
}
