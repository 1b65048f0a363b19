package view_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/figure"
)

// viewProcess is a running `dpsim view`.
type viewProcess struct {
	cmd    *exec.Cmd
	stderr dpsimtest.SyncBuffer
	done   <-chan struct{}
}

var viewURL = regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+)\n`)

// startView starts `dpsim view args...` and returns its URL once printed.
func startView(t *testing.T, args ...string) (*viewProcess, string) {
	t.Helper()
	v := &viewProcess{cmd: exec.Command(dpsimBin, append([]string{"view"}, args...)...)}
	v.cmd.Stderr = &v.stderr
	v.done = dpsimtest.Background(t, v.cmd)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := viewURL.FindStringSubmatch(v.stderr.String()); m != nil {
			return v, m[1]
		}
		select {
		case <-v.done:
			t.Fatalf("dpsim view ended before printing its URL:\n%s", v.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("dpsim view printed no URL:\n%s", v.stderr.String())
	return nil, ""
}

// reportFigures lists the figures report.md of dir shows, in order.
func reportFigures(t *testing.T, dir string) []string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\.png\)`).FindAllStringSubmatch(string(md), -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names)
	return names
}

// pageFigure is a figure as the page drew it.
type pageFigure struct {
	Name   string `json:"name"`
	Panels []struct {
		Title  string `json:"title"`
		X      string `json:"x"`
		Y      string `json:"y"`
		Points int    `json:"points"`
	} `json:"panels"`
}

// pageState is what the page drew (window.dpsimView).
type pageState struct {
	Ready       bool                `json:"ready"`
	Error       string              `json:"error"`
	Episode     int                 `json:"episode"`
	EpisodeNote string              `json:"episodeNote"`
	Specs       int                 `json:"specs"`
	PlotPoints  []int               `json:"plotPoints"`
	Cursors     []int               `json:"cursors"`
	Step        int                 `json:"step"`
	StepLabel   string              `json:"stepLabel"`
	Values      map[string]*float64 `json:"values"`
	Figures     []pageFigure        `json:"figures"`
	FigureNames []string            `json:"figureNames"`
	BadLabels   []string            `json:"badLabels"` // tick labels drawn wrong (uPlot\'s axis values)
	Timeline    int                 `json:"timeline"`
	Canvases    int                 `json:"canvases"`
}

const pageJS = `(() => { const v = window.dpsimView;
	const untraced = v && v.state && v.state.points.every((p) => p.episodes.length === 0);
	if (!v || !v.ready || (!untraced && (!v.episode || v.episodePlots.length === 0))) return {ready: false, error: v ? v.error : ""};
	return {ready: true, error: v.error, episode: v.episode ? v.episode.episode : -1, specs: v.specs ? v.specs.length : 0,
		episodeNote: document.getElementById("episode-note").textContent,
		plotPoints: v.episodePlots.map((u) => u.data.slice(1).reduce((n, s) => n + s.filter((x) => x !== null && x !== undefined).length, 0)),
		cursors: v.episodePlots.map((u) => u.cursor.idx), step: v.step, stepLabel: document.getElementById("view-step-label").textContent,
		values: v.values, figures: v.figures.map((f) => ({name: f.name, panels: f.panels.map((p) => ({
			title: p.u.root.parentNode.querySelector("h3").textContent, // as shown
			x: p.u.axes[0].label, y: p.u.axes[1].label, // as uPlot draws them
			points: p.points}))})),
		figureNames: [...document.querySelectorAll(".figure-name")].map((e) => e.textContent),
		badLabels: v.figures.flatMap((f) => f.panels).flatMap((p) => p.u.axes.flatMap((a) => a._values || [])).filter((s) => /Infinity|NaN|undefined/.test(String(s))),
		timeline: document.querySelectorAll("#timeline tr").length - 1,
		canvases: document.querySelectorAll(".uplot canvas").length}; })()`

// TestViewBrowser loads dpsim view of finished runs (a run with a process crash, a sweep, a
// run without traced episodes) in headless chromium: the page logs no error, the traced
// episode's plots have points, the slider moves the cursor and the values shown, and every
// figure of report.md is a plot with points, with the figure's titles and axes.
func TestViewBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	ctx, problems := dpsimtest.Browser(t, exe)

	for _, name := range []string{"faults", "sweep", "untraced"} {
		dir := finishedRun(t, name)
		proc, url := startView(t, dir)
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(url)))
		var st pageState
		for {
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(pageJS, &st)))
			if st.Ready || st.Error != "" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the page drew no episode: %+v\n%s", name, st, proc.stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		require.Empty(t, st.Error, name)
		checkFigures(t, name, dir, st)
		if name == "untraced" {
			require.Equal(t, -1, st.Episode)
			require.Contains(t, st.EpisodeNote, "No traced episode")
			continue
		}
		require.Equal(t, 0, st.Episode, name)
		require.GreaterOrEqual(t, st.Specs, 3, "%s: the traced episode's plots (app.js plotSpecs)", name)
		require.Len(t, st.PlotPoints, st.Specs, "%s: the traced episode's plots", name)
		for i, n := range st.PlotPoints {
			require.Greater(t, n, 10, "%s: episode plot %d has no points", name, i)
		}
		require.Equal(t, "t = 0", st.StepLabel)
		before := st.Values

		// the slider moves every episode plot's cursor to the step and shows its values
		const move = `(() => { const s = document.getElementById("view-step"); s.value = 17; s.dispatchEvent(new Event("input")); return true; })()`
		var ok bool
		st = pageState{}
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(move, &ok), chromedp.Evaluate(pageJS, &st)))
		require.Equal(t, 17, st.Step, name)
		require.Equal(t, "t = 17", st.StepLabel, name)
		for i, c := range st.Cursors {
			require.Equal(t, 17, c, "%s: episode plot %d's cursor", name, i)
		}
		require.NotEqual(t, before, st.Values, "%s: the values shown did not change with the step", name)
		if name == "faults" {
			require.Greater(t, st.Timeline, 0, "the crash's timeline")
		}
		require.GreaterOrEqual(t, st.Canvases, 3+len(st.Figures))
		require.Empty(t, problems(), "%s: the page logged errors", name)
	}
}

// checkFigures checks that the page shows every figure of report.md, in its order, as plots
// with points under the titles and axis labels of the figure's data.
func checkFigures(t *testing.T, name, dir string, st pageState) {
	t.Helper()
	want := reportFigures(t, dir)
	require.Equal(t, want, st.FigureNames, name)
	require.Len(t, st.Figures, len(want))
	for _, f := range st.Figures {
		b, err := os.ReadFile(filepath.Join(dir, "figures", f.Name+".json"))
		require.NoError(t, err)
		var d figure.Data
		require.NoError(t, json.Unmarshal(b, &d))
		var panels []figure.PanelData
		for _, row := range d.Panels {
			panels = append(panels, row...)
		}
		require.Len(t, f.Panels, len(panels), "%s: figure %s", name, f.Name)
		for i, p := range f.Panels {
			require.Equal(t, panels[i].Title, p.Title, "%s: figure %s panel %d", name, f.Name, i)
			require.Equal(t, panels[i].X.Label, p.X, "%s: figure %s panel %q: x label", name, f.Name, p.Title)
			require.Equal(t, panels[i].Y.Label, p.Y, "%s: figure %s panel %q: y label", name, f.Name, p.Title)
			require.Greater(t, p.Points, 1, "%s: figure %s panel %q has no points", name, f.Name, p.Title)
		}
	}
	require.Empty(t, st.BadLabels, "%s: tick labels", name)
}
