package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/trace"
)

// textHook records, per canvas, the box of every text drawn on it since it was last cleared
// whole (uPlot clears its canvas and draws every axis text with fillText): canvas pixels,
// through the transform in force (a rotated axis label too).
const textHook = `(() => {
	const P = CanvasRenderingContext2D.prototype;
	const fill = P.fillText, clear = P.clearRect;
	P.clearRect = function (x, y, w, h) {
		if (x <= 0 && y <= 0 && w >= this.canvas.width && h >= this.canvas.height) this.canvas.__texts = [];
		return clear.apply(this, arguments);
	};
	P.fillText = function (text, x, y) {
		const m = this.measureText(text), tr = this.getTransform();
		const l = x - m.actualBoundingBoxLeft, r = x + m.actualBoundingBoxRight;
		const t = y - m.actualBoundingBoxAscent, b = y + m.actualBoundingBoxDescent;
		const pts = [[l, t], [r, t], [l, b], [r, b]].map(([px, py]) => tr.transformPoint(new DOMPoint(px, py)));
		const xs = pts.map((p) => p.x), ys = pts.map((p) => p.y);
		(this.canvas.__texts = this.canvas.__texts || []).push({ text: String(text), rotated: tr.b !== 0,
			l: Math.min(...xs), r: Math.max(...xs), t: Math.min(...ys), b: Math.max(...ys) });
		return fill.apply(this, arguments);
	};
})()`

// layoutJS returns the layout of every uPlot plot of the page (plots: the page's uPlot
// instances): its texts and plotting area in CSS pixels of its canvas, its width against its
// container's and the window's, and where each constant "bound" series sits on its y axis.
const layoutJS = `((plots) => plots.map((u) => {
	const c = u.ctx.canvas, k = c.width / c.clientWidth;
	const box = (o) => ({ text: o.text, rotated: o.rotated, l: o.l / k, r: o.r / k, t: o.t / k, b: o.b / k });
	const root = u.root, cont = root.parentElement.classList.contains("plot") ? root.parentElement.parentElement : root.parentElement;
	const cs = getComputedStyle(cont);
	const inner = cont.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
	const top = (r) => r.parentElement.getBoundingClientRect().top; // the plot's box, with its title
	const row = Array.from(cont.querySelectorAll(".uplot")).filter((r) => Math.abs(top(r) - top(root)) < 2);
	const rowWidth = row.length ? Math.max(...row.map((r) => r.getBoundingClientRect().right)) - Math.min(...row.map((r) => r.getBoundingClientRect().left)) : 0;
	const bounds = [];
	u.series.forEach((s, i) => {
		if (i === 0 || !/bound|limit|claimed/i.test(s.label || "")) return;
		const vals = (u.data[i] || []).filter((v) => v !== null && v !== undefined);
		if (vals.length === 0 || vals.some((v) => v !== vals[0])) return;
		bounds.push({ label: s.label, value: vals[0], pos: u.valToPos(vals[0], s.scale || "y"), min: u.scales.y.min, max: u.scales.y.max });
	});
	return { title: (root.parentElement.querySelector("h3") || {}).textContent || root.parentElement.id, width: c.clientWidth, height: c.clientHeight,
		plot: { l: u.bbox.left / k, t: u.bbox.top / k, w: u.bbox.width / k, h: u.bbox.height / k },
		container: inner, window: window.innerWidth, row: rowWidth, texts: (c.__texts || []).map(box), bounds };
}))`

type textBox struct {
	Text       string
	Rotated    bool
	L, R, T, B float64
}

type plotLayout struct {
	Title         string
	Width, Height float64
	Plot          struct{ L, T, W, H float64 }
	Container     float64
	Window        float64
	Row           float64
	Texts         []textBox
	Bounds        []struct {
		Label    string
		Value    float64
		Pos      float64
		Min, Max float64
	}
}

// legibility returns how the plot breaks figure.Check's rules as a page can: a text clipped
// by its canvas, two texts that overlap, an axis with fewer than two labels, a constant bound
// outside the y range or pressed against its ends (invisible beside the data), a plot that
// leaves much of its container's width unused.
func (p *plotLayout) legibility() []string {
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf("%q: ", p.Title)+fmt.Sprintf(f, a...)) }
	const eps = 0.5
	var yTicks, xTicks int
	for i, a := range p.Texts {
		if strings.TrimSpace(a.Text) == "" {
			continue
		}
		if a.L < -eps || a.T < -eps || a.R > p.Width+eps || a.B > p.Height+eps {
			bad("text %q at [%.1f, %.1f] x [%.1f, %.1f] is clipped by the plot's box %.0f x %.0f", a.Text, a.L, a.R, a.T, a.B, p.Width, p.Height)
		}
		for _, b := range p.Texts[i+1:] {
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
			if a.L < b.R-eps && b.L < a.R-eps && a.T < b.B-eps && b.T < a.B-eps {
				bad("texts %q and %q overlap", a.Text, b.Text)
			}
		}
		switch {
		case a.Rotated:
		case a.R <= p.Plot.L+eps:
			yTicks++
		case a.T >= p.Plot.T+p.Plot.H-eps:
			xTicks++
		}
	}
	if yTicks < 2 {
		bad("%d y tick labels", yTicks)
	}
	if xTicks < 2 {
		bad("%d x tick labels", xTicks)
	}
	for _, b := range p.Bounds {
		switch {
		case b.Value < b.Min || b.Value > b.Max:
			bad("%s = %g outside the y range [%g, %g]", b.Label, b.Value, b.Min, b.Max)
		case b.Pos < 0.05*p.Plot.H || b.Pos > 0.95*p.Plot.H:
			bad("%s = %g drawn %.1f px from the top of a %.0f px tall plot (y range [%g, %g]): pressed against an end, invisible", b.Label, b.Value, b.Pos, p.Plot.H, b.Min, b.Max)
		}
	}
	if p.Row < 0.9*p.Container {
		bad("its row of plots is %.0f px wide in a container of %.0f px", p.Row, p.Container)
	}
	if p.Container < 0.85*p.Window {
		bad("its container is %.0f px wide in a window of %.0f px", p.Container, p.Window)
	}
	return probs
}

// The window sizes the pages are checked at.
var windows = [][2]int64{{1400, 900}, {800, 600}}

// TestPagesLegibleBrowser opens the run page (a consensus and a cloud-control run) and the audit
// page at two window sizes with data of large magnitude (squared errors about 20,000, 2e6
// trials) and checks every plot as figure.Check checks a figure: no axis text clipped, no two
// texts overlapping, two labels or more on each axis, the paper's bound (or the claim) inside
// the y range and away from its ends, the plots using the window's width. The run page also
// shows the Monte Carlo aggregate and says which episode it plots.
func TestPagesLegibleBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	ctx, problems := dpsimtest.Browser(t, exe)
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(c context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(textHook).Do(c)
		return err
	})))
	awaitJS := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	check := func(t *testing.T, url, plotsJS, ready string) []plotLayout {
		var all []plotLayout
		for _, w := range windows {
			require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(w[0], w[1]), chromedp.Navigate(url)))
			var ok bool
			for range 100 {
				require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(ready, &ok, awaitJS)))
				if ok {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			require.True(t, ok, "the page did not draw")
			var layout []plotLayout
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(layoutJS+"("+plotsJS+")", &layout)))
			require.NotEmpty(t, layout)
			var probs []string
			for i := range layout {
				probs = append(probs, layout[i].legibility()...)
			}
			require.Empty(t, probs, "window %dx%d", w[0], w[1])
			all = append(all, layout...)
		}
		return all
	}

	for _, kind := range []string{"consensus", "cloud-control"} {
		t.Run(kind, func(t *testing.T) {
			h := bigRun(kind)
			srv, err := live.Serve("127.0.0.1:0", h)
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			const ready = `(async () => { const l = window.dpsimLive; if (!l || !l.state || !l.plots.aggregate) return false; await l.drained(); return true; })()`
			layout := check(t, srv.TokenURL(), `Object.values(window.dpsimLive.plots).map((p) => p.u)`, ready)
			titles := ""
			for _, p := range layout {
				titles += p.Title + "\n"
			}
			require.Contains(t, titles, "over 2345 completed episodes")
			var text string
			require.NoError(t, chromedp.Run(ctx, chromedp.Text("#episode-title", &text)))
			require.Contains(t, text, "episode 99")
			require.NoError(t, chromedp.Run(ctx, chromedp.Text("#episode-note", &text)))
			require.Contains(t, text, "not traced")
		})
	}

	t.Run("audit", func(t *testing.T) {
		h := live.NewAuditHub(live.AuditInfo{Scenario: "audit-big", Kind: "cloud-control", Engine: "fast", Confidence: 0.95, Selection: "split", Live: true,
			Points: []live.AuditPointInfo{{Name: "p", Trials: 1_000_000, EpisodesPerTrial: 1, Mechanism: "gaussian", EpsilonClaimed: 1.8, EpsilonClaimedRun: 1.8, Delta: 1e-5}}}, time.Now())
		srv, err := live.ServeAudit("127.0.0.1:0", h)
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		h.Finish("ok", "", "pass")
		// the bounds of an audit of 2e6 trials, recomputed 100 times, drawn from the page's own
		// render as the event stream would bring them
		var trials []int
		var cp, gdp, fdp, fpr, fnr []float64
		for k := 1; k <= 100; k++ {
			trials = append(trials, 20000*k)
			cp = append(cp, 1.5*(1-math.Exp(-float64(k)/20)))
			gdp = append(gdp, 1.6*(1-math.Exp(-float64(k)/15)))
			fdp = append(fdp, 1.55*(1-math.Exp(-float64(k)/18)))
		}
		for i := 0; i <= 200; i++ {
			x := float64(i) / 200
			fpr = append(fpr, x)
			fnr = append(fnr, math.Max(0, 1-x*4))
		}
		data, err := json.Marshal(map[string]any{"trials": trials, "eps_lb_cp": cp, "eps_lb_gdp": gdp, "eps_lb_fdp": fdp, "fpr": fpr, "fnr": fnr})
		require.NoError(t, err)
		ready := `(() => { const v = window.dpsimAudit; if (!v || !v.ended) return false; const d = ` + string(data) + `;
			const st = JSON.parse(JSON.stringify(v.state)); const p = st.points[0];
			p.bounds = {trials: d.trials, eps_lb_cp: d.eps_lb_cp, eps_lb_gdp: d.eps_lb_gdp, eps_lb_fdp: d.eps_lb_fdp};
			p.curve = {fpr: d.fpr, fnr: d.fnr}; p.claim = {fpr: d.fpr, fnr: d.fpr.map((x) => Math.max(0, 1 - 6 * x))};
			p.played = 2000000; p.final = true; st.trials_done = 2000000; render(st); return true; })()`
		check(t, srv.TokenURL(), `Object.values(window.dpsimAudit.plots).map((p) => p.u)`, ready)
	})
	var probs []string
	for _, p := range problems() {
		if !strings.Contains(p, "/api/faults") && !strings.Contains(p, "/events") { // no interventions here; a closed server
			probs = append(probs, p)
		}
	}
	require.Empty(t, probs, "the pages logged errors")
}

// bigRun is the hub of a run of 3,000 episodes of 3,000 steps, 2,345 of them done, the first
// 100 traced: the latest traced episode, 99, and the Monte Carlo aggregate have squared errors
// of about 20,000 decaying to the paper's bound (Prop. 1: 35; Var(gamma): 4).
func bigRun(kind string) *live.Hub {
	const steps, runs, done, traced = 3000, 3000, 2345, 100
	bound := 35.0
	if kind == "cloud-control" {
		bound = 4
	}
	h := live.NewHub(live.Info{Scenario: "big", Kind: kind, Engine: "nats", Mode: "lockstep", Runs: runs, TraceEpisodes: traced,
		Points: []live.PointInfo{{Name: "big", Steps: steps, Bound: bound}}}, time.Now())
	h.BeginPoint(0)
	msq := func(t int) float64 { return 20000*math.Pow(0.995, float64(t)) + bound*0.9 }
	for ep := traced - 3; ep < traced; ep++ {
		for st := 0; st <= steps; st++ {
			a := math.Sqrt(msq(st))
			if kind == "consensus" {
				x := make([]float64, 10)
				for i := range x {
					x[i] = a / math.Sqrt(10) * float64(1-2*(i%2))
				}
				h.Consensus(0, &trace.ConsensusRecord{Episode: ep, Step: st, X: x})
				continue
			}
			r := trace.ControlRecord{Episode: ep, Step: st, X: []float64{a, 0.01 * a}, Ref: []float64{0, 0}}
			if st < steps {
				r.EveX0 = []float64{a * 1.1, 0.5 * a}
			}
			h.Control(0, &r)
		}
	}
	h.Progress(done)
	n := metrics.SeriesPoints(steps + 1)
	s := &metrics.Series{N: make([]int, n), Mean: make([]float64, n), SE: make([]float64, n), Lo: make([]float64, n), Hi: make([]float64, n), Step: make([]int, n)}
	for i := range n {
		t := (steps * i) / (n - 1)
		s.Step[i], s.N[i], s.Mean[i] = t, done, msq(t)
		s.Lo[i], s.Hi[i] = 0.97*s.Mean[i], 1.03*s.Mean[i]
	}
	h.Aggregate(0, done, s)
	return h
}
