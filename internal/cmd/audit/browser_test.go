package auditcmd

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// auditPage is what the audit page drew (window.dpsimAudit) at one moment.
type auditPage struct {
	Events    int    `json:"events"`
	Ended     bool   `json:"ended"`
	Status    string `json:"status"`
	Bounds    int    `json:"bounds"`    // points of the bounds plot
	Empirical int    `json:"empirical"` // points of the empirical trade-off curve
	Claim     int    `json:"claim"`     // points of the claim's (eps, delta) curve
	GDP       int    `json:"gdp"`       // points of the claim's mu-GDP curve
	Plots     int    `json:"plots"`
	Canvases  int    `json:"canvases"`
	Series    string `json:"series"` // the trade-off plot's series labels
	Verdict   string `json:"verdict"`
}

// TestLiveUIBrowser loads the audit's live view in headless chromium: the page logs no error,
// the bounds plot gains points while the audit plays, the trade-off plot has the empirical and
// the claim's curves, and the page shows the verdict at the end.
func TestLiveUIBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	// the wire engine: about 1,000 trials a second whatever the machine, so the page sees the
	// bounds recomputed several times
	l := startAudit(t, scenarioPath("audit-vehicle-structured"), "--engine", "wire", "--trials", "1200", "--seed", "8", "--json",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.url(t)

	ctx, problems := dpsimtest.Browser(t, exe)
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(url)))

	const js = `(() => { const v = window.dpsimAudit; const s = v.state || {}; const t = v.plots.tradeoff;
		return {events: v.events, ended: v.ended, status: s.status || "", bounds: v.bounds, empirical: v.empirical, claim: v.claim,
			gdp: v.gdp, plots: Object.keys(v.plots).length, canvases: document.querySelectorAll(".uplot canvas").length,
			series: t ? t.u.series.slice(1).map((x) => x.label).join("|") : "", verdict: document.getElementById("verdict-title").textContent}; })()`
	views, ok := dpsimtest.PollPage(t, ctx, js, func(v auditPage) bool { return v.Ended })
	if !ok {
		t.Fatalf("the page did not show the audit's end: %+v\n%s", views[len(views)-1], l.stderr.String())
	}
	code, rep := l.stop(t)
	require.Equal(t, 0, code, l.stderr.String())
	end := views[len(views)-1]
	require.Equal(t, "ok", end.Status)
	require.Equal(t, 2, end.Plots)
	require.GreaterOrEqual(t, end.Canvases, 2)
	require.Equal(t, "Verdict: "+strings.ToUpper(rep.Verdict), end.Verdict)
	require.Positive(t, end.Empirical, "no empirical trade-off curve")
	require.Equal(t, 201, end.Claim, "the claim's (eps, delta) curve")
	require.Equal(t, 201, end.GDP, "the claim's mu-GDP curve")
	require.Contains(t, end.Series, "claim (eps, delta) boundary")
	require.Contains(t, end.Series, "empirical")
	gained := map[int]bool{}
	for _, v := range views[:len(views)-1] {
		if v.Status == "running" && v.Bounds > 0 {
			gained[v.Bounds] = true
			require.Positive(t, v.Empirical, "bounds without the empirical curve: %+v", v)
		}
	}
	require.GreaterOrEqual(t, len(gained), 2, "the bounds plot gained no point while the audit ran: %+v", views)
	require.Empty(t, problems(), "the page logged errors")
}

// seqPage is what TestLiveUISequentialBrowser reads of the page.
type seqPage struct {
	Ended    bool   `json:"ended"`
	Status   string `json:"status"`
	Evidence int    `json:"evidence"`
	Note     string `json:"note"`
	Hidden   bool   `json:"hidden"`
}

// TestLiveUISequentialBrowser: with --sequential the page shows the running evidence - the
// evidence plot gains looks while the audit plays, and its note ends with the decision.
func TestLiveUISequentialBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	l := startAudit(t, scenarioPath("audit-vehicle-structured"), "--engine", "wire", "--sequential", "--trials", "1500", "--seed", "8", "--json",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.url(t)
	ctx, problems := dpsimtest.Browser(t, exe)
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(url)))
	const js = `(() => { const v = window.dpsimAudit; const s = v.state || {};
		return {ended: v.ended, status: s.status || "", evidence: v.evidence, note: document.getElementById("evidence-note").textContent,
			hidden: document.getElementById("evidence").hidden}; })()`
	views, ok := dpsimtest.PollPage(t, ctx, js, func(v seqPage) bool { return v.Ended })
	if !ok {
		t.Fatalf("the page did not show the audit's end: %+v\n%s", views[len(views)-1], l.stderr.String())
	}
	code, rep := l.stop(t)
	require.Equal(t, 0, code, l.stderr.String())
	end := views[len(views)-1]
	require.False(t, end.Hidden)
	require.NotNil(t, rep.Sequential)
	require.Equal(t, rep.Sequential.Looks, end.Evidence, "the evidence plot has every look")
	require.Contains(t, end.Note, "stopped ("+rep.Sequential.StoppedBecause+") after")
	gained := map[int]bool{}
	for _, v := range views[:len(views)-1] {
		if v.Status == "running" && v.Evidence > 0 {
			gained[v.Evidence] = true
			if v.Evidence < end.Evidence {
				require.Contains(t, v.Note, "running: ", "before the last look the evidence says it runs")
			}
		}
	}
	require.GreaterOrEqual(t, len(gained), 2, "the evidence gained no look while the audit ran: %+v", views)
	require.Empty(t, problems(), "the page logged errors")
}
