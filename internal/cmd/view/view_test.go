package view_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/cmd/view"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/live"
)

// loaded is what a test checks of a loaded run.
func load(t *testing.T, dir string) *live.ViewState {
	t.Helper()
	v, err := live.LoadView(dir)
	require.NoError(t, err)
	return v.State()
}

// The view loads each kind of finished run: its points with their traced episodes, every
// figure of report.md with its data (titles, axes, series with points), the timeline and a
// summary without the long per-step series.
func TestLoadFinishedRuns(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		points     int
	}{{"cloud", "cloud-control", 1}, {"consensus", "consensus", 3}, {"sweep", "cloud-control", 21}, {"faults", "consensus", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := finishedRun(t, tc.name)
			st := load(t, dir)
			require.Equal(t, "view", st.Page)
			require.Equal(t, tc.kind, st.Kind)
			require.Equal(t, "ok", st.Status)
			require.Len(t, st.Points, tc.points)
			for _, p := range st.Points {
				require.NotEmpty(t, p.TraceFile, p.Name)
				require.Equal(t, p.Traced, len(p.Episodes), "%s: every traced episode", p.Name)
				require.Equal(t, 0, p.Episodes[0])
			}
			want := reportFigures(t, dir)
			require.Len(t, st.Figures, len(want))
			for i, f := range st.Figures {
				require.Equal(t, want[i], f.Name)
				require.NotNil(t, f.Data, "figure %s has its data", f.Name)
				for _, row := range f.Data.Panels {
					for _, p := range row {
						require.NotEmpty(t, p.X.Label, f.Name)
						require.NotEmpty(t, p.Y.Label, f.Name)
						require.NotEmpty(t, p.Series, "figure %s panel %q", f.Name, p.Title)
						for _, s := range p.Series {
							require.NotEmpty(t, s.X, "figure %s panel %q series %q", f.Name, p.Title, s.Label)
						}
					}
				}
			}
			require.Empty(t, st.Notes)
			b, err := json.Marshal(st.Summary)
			require.NoError(t, err)
			require.NotContains(t, string(b), `"mean":[`, "the per-step series are trimmed")
			require.Contains(t, string(b), `"links":[`)
			if tc.name == "faults" {
				var killed bool
				for _, e := range st.Timeline {
					killed = killed || e.Event == "killed"
				}
				require.True(t, killed, "the crash is on the timeline: %+v", st.Timeline)
			}
		})
	}
}

// The server: the page in view mode, the state, a traced episode's series (unknown values
// null), a bad request; the command prints its URL and ends at Ctrl-C with status 0.
func TestViewServes(t *testing.T) {
	dir := finishedRun(t, "cloud")
	proc, url := startView(t, dir)
	get := func(path string, code int) []byte {
		resp, err := http.Get(dpsimtest.LivePath(url, path))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, code, resp.StatusCode, "%s: %s", path, b)
		return b
	}
	require.Contains(t, string(get("", 200)), `<body data-mode="view">`)
	require.Contains(t, string(get("view.js", 200)), "dpsimView")
	var st live.ViewState
	require.NoError(t, json.Unmarshal(get("api/state", 200), &st))
	require.Equal(t, "cloud-vehicle", st.Scenario)
	var ep struct {
		Point    int        `json:"point"`
		Episode  int        `json:"episode"`
		Complete bool       `json:"complete"`
		T        []int      `json:"t"`
		X        [][]any    `json:"x"`
		EveError []*float64 `json:"eve_error"`
	}
	require.NoError(t, json.Unmarshal(get("api/episode?point=0&episode=3", 200), &ep))
	require.Equal(t, 3, ep.Episode)
	require.True(t, ep.Complete)
	require.Len(t, ep.T, st.Points[0].Steps+1)
	require.Len(t, ep.X, 2)
	require.Nil(t, ep.EveError[0], "not identifiable at t = 0: null")
	require.Nil(t, ep.EveError[len(ep.EveError)-1], "the terminal record has no estimate: null")
	get("api/episode?point=0&episode=999", 404)
	get("api/episode?point=x", 400)
	get("out/summary.json", 404) // only the images of figures without data
	require.NoError(t, proc.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-proc.done:
	case <-time.After(10 * time.Second):
		t.Fatal("dpsim view did not end at SIGINT")
	}
	require.Equal(t, 0, proc.cmd.ProcessState.ExitCode(), proc.stderr.String())
}

// A figure without its data (a run of an older dpsim) shows its image; faults.applied.yaml is
// shown when there is one.
func TestViewOlderRunAndAppliedFaults(t *testing.T) {
	dir := copyRun(t, "faults")
	require.NoError(t, os.Remove(filepath.Join(dir, "figures", "consensus-mse.json")))
	applied := "crashes:\n  - proc: agent.0\n    step: 10\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, live.FaultsAppliedFile), []byte(applied), 0o644))
	st := load(t, dir)
	require.Equal(t, applied, st.FaultsApplied)
	var img *live.ViewFigure
	for i := range st.Figures {
		if st.Figures[i].Name == "consensus-mse" {
			img = &st.Figures[i]
		}
	}
	require.NotNil(t, img)
	require.Nil(t, img.Data)
	require.Equal(t, "consensus-mse.png", img.Image)
	require.Len(t, st.Notes, 1)
	require.Contains(t, st.Notes[0], "consensus-mse")

	_, url := startView(t, dir)
	resp, err := http.Get(dpsimtest.LivePath(url, "out/consensus-mse.png"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
}

// Errors name the file and what is wrong; usage errors are usage errors (exit 2), the others
// failures (exit 1).
func TestViewErrors(t *testing.T) {
	src := finishedRun(t, "cloud")
	write := func(name, text string) func(string) {
		return func(dir string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)) }
	}
	remove := func(name string) func(string) {
		return func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, name))) }
	}
	summary, err := os.ReadFile(filepath.Join(src, "summary.json"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		breakIt func(dir string)
		want    []string
	}{
		{"no summary", remove("summary.json"), []string{"is not a dpsim run directory", "summary.json"}},
		{"summary not JSON", write("summary.json", "{not json"), []string{"summary.json: invalid JSON"}},
		{"summary of something else", write("summary.json", `{"kind":"vecsum","points":[]}`), []string{"summary.json: not a dpsim run summary", `kind "vecsum"`}},
		{"summary without points", write("summary.json", strings.Replace(string(summary), `"points": [`, `"points_": [`, 1)), []string{"summary.json: not a dpsim run summary: no points"}},
		{"trace missing", remove("trace.jsonl"), []string{"trace.jsonl", "the trace of point cloud-vehicle", "no such file"}},
		{"trace corrupt", write("trace.jsonl", "{\"episode\":0,\"step\":0,\"x\":[1,2]}\n{\"episode\":0,\"step\":1,\"x\":[1,\n"), []string{"trace.jsonl", "line 2"}},
		{"report missing", remove("report.md"), []string{"report.md (the run's report)", "no such file"}},
		{"figure data invalid", write(filepath.Join("figures", "tracking-mse.json"), `{"name":"tracking-mse","panels":[[{"title":1}]]}`),
			[]string{filepath.Join("figures", "tracking-mse.json") + ": invalid figure data"}},
		{"figure data of another figure", write(filepath.Join("figures", "tracking-mse.json"), `{"name":"other","panels":[[]]}`),
			[]string{"tracking-mse.json: invalid figure data", `figure "other"`}},
		{"faults.applied.yaml invalid", write(live.FaultsAppliedFile, "crashes: [\n"), []string{"faults.applied.yaml: invalid YAML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun(t, "cloud")
			tc.breakIt(dir)
			err := view.Run([]string{dir}, io.Discard, io.Discard)
			require.Error(t, err)
			require.False(t, errors.Is(err, cli.ErrUsage), "a failure, not a usage error: %v", err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	t.Run("no directory", func(t *testing.T) { // a mistake on the command line: usage
		err := view.Run([]string{filepath.Join(t.TempDir(), "nothing")}, io.Discard, io.Discard)
		require.ErrorIs(t, err, cli.ErrUsage)
		require.ErrorContains(t, err, "nothing: no such directory")
	})
	t.Run("a file", func(t *testing.T) {
		err := view.Run([]string{filepath.Join(src, "summary.json")}, io.Discard, io.Discard)
		require.ErrorIs(t, err, cli.ErrUsage)
		require.ErrorContains(t, err, "summary.json is not a directory")
	})
	t.Run("library", func(t *testing.T) { // LoadView says the same
		_, err := live.LoadView(filepath.Join(t.TempDir(), "nothing"))
		require.ErrorContains(t, err, "nothing: no such directory")
	})
	for _, args := range [][]string{{}, {src, src}, {"--for", "-1s", src}, {src, "--for", "-1s"}, {"--addr", "nonsense", src}, {"--bogus", src}} {
		err := view.Run(args, io.Discard, io.Discard)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", args)
	}
	// the binary's exit codes
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"view"}, 2}, {[]string{"view", filepath.Join(t.TempDir(), "nothing")}, 2}, {[]string{"view", t.TempDir()}, 1}, {[]string{"view", src, "--for", "100ms"}, 0}} {
		cmd := exec.Command(dpsimBin, tc.args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		require.Equal(t, tc.code, cmd.ProcessState.ExitCode(), "dpsim %v:\n%s", tc.args, out.String())
	}
}

// TestViewPublic: an --addr other than loopback needs --public (a usage error naming it), and
// is warned about with it; the URL printed carries the token.
func TestViewPublic(t *testing.T) {
	dir := finishedRun(t, "cloud")
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		err := view.Run([]string{dir, "--addr", addr}, io.Discard, io.Discard)
		require.ErrorIs(t, err, cli.ErrUsage, addr)
		require.ErrorContains(t, err, "--public")
	}
	var stderr bytes.Buffer
	require.NoError(t, view.Run([]string{dir, "--addr", "0.0.0.0:0", "--public", "--for", "10ms"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "warning: the live view on 0.0.0.0:0 serves the network (--public)")
	require.Regexp(t, `at http://[^/ ]+:\d+/\?token=[0-9a-f]{48}\n`, stderr.String())
}
