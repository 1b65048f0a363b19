package auditcmd

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
)

type liveAudit struct {
	cmd            *exec.Cmd
	stdout, stderr dpsimtest.SyncBuffer
	done           <-chan struct{}
}

func startAudit(t *testing.T, args ...string) *liveAudit {
	t.Helper()
	l := &liveAudit{cmd: exec.Command(dpsimBin, append([]string{"audit"}, args...)...)}
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	l.cmd.Env = append(os.Environ(), "NATS_URL=")
	l.done = dpsimtest.Background(t, l.cmd)
	return l
}

var uiURL = regexp.MustCompile(`live view (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+) `)

// url waits for the live view's URL on stderr.
func (l *liveAudit) url(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := uiURL.FindStringSubmatch(l.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-l.done:
			t.Fatalf("dpsim audit ended (%v) before the live view's URL:\n%s", l.cmd.ProcessState, l.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no live view URL on stderr:\n%s", l.stderr.String())
	return ""
}

// stop ends --ui-hold with Ctrl-C and returns the exit code and the report of --json.
func (l *liveAudit) stop(t *testing.T) (int, *audit.GameReport) {
	t.Helper()
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("dpsim audit did not end:\n%s", l.stderr.String())
	}
	return l.cmd.ProcessState.ExitCode(), decodeReport(t, l.stdout.String())
}

// readAuditEvents reads /events until its "end" event and returns every state in order.
func readAuditEvents(t *testing.T, url string) []*live.AuditState {
	t.Helper()
	resp, err := http.Get(dpsimtest.LivePath(url, "events"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var states []*live.AuditState
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var st live.AuditState
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st))
			states = append(states, &st)
			if event == "end" {
				return states
			}
		}
	}
	t.Fatalf("the event stream closed without an end event (%v) after %d states", sc.Err(), len(states))
	return nil
}

// checkFinal checks that the last point of the bounds of the state's point is the report's:
// the numbers of --json, to the bit, with its verdict.
func checkFinal(t *testing.T, st *live.AuditState, rep *audit.GameReport) {
	t.Helper()
	require.Equal(t, "ok", st.Status)
	require.Equal(t, rep.Verdict, st.Verdict)
	require.Len(t, st.Points, 1)
	p := st.Points[0]
	require.True(t, p.Final)
	require.Equal(t, rep.Verdict, p.Verdict)
	require.Equal(t, rep.VerdictLine(), p.VerdictLine)
	b := p.Bounds
	n := len(b.Trials) - 1
	require.GreaterOrEqual(t, n, 0)
	require.Equal(t, 2*rep.Trials, b.Trials[n])
	require.Equal(t, rep.EpsilonLBCP, b.CP[n])
	require.Equal(t, rep.EpsilonLBGDP, b.GDP[n])
	require.Equal(t, rep.EpsilonLBFDP, b.FDP[n])
	require.Equal(t, rep.Trials, p.Scored.X)
	require.Equal(t, rep.Trials, p.Scored.XPrime)
	require.Equal(t, rep.Score, p.Score)
	require.Len(t, p.Curve.FPR, len(rep.Best().Curve))
	require.Equal(t, rep.Claimed(), p.EpsilonClaimedRun)
	require.Len(t, p.Claim.FNR, live.ClaimCurvePoints)
	require.Len(t, p.Claim.FNRGDP, live.ClaimCurvePoints, "a Gaussian claim's mu-GDP curve")
}

// grew checks that the bounds gained points while the audit ran, each from more trials (and
// fewer than all of them), before the result.
func grew(t *testing.T, states []*live.AuditState) {
	t.Helper()
	counts := map[int]bool{}
	for _, st := range states[:len(states)-1] {
		p := st.Points[0]
		if st.Status == "running" && !p.Final && len(p.Bounds.Trials) > 0 {
			counts[len(p.Bounds.Trials)] = true
			require.Less(t, p.Bounds.Trials[len(p.Bounds.Trials)-1], 2*p.Trials+1)
		}
	}
	require.GreaterOrEqual(t, len(counts), 2, "the stream saw the bounds gain no point while the audit ran")
	end := states[len(states)-1].Points[0].Bounds.Trials
	for i := 1; i < len(end); i++ {
		require.Greater(t, end[i], end[i-1], "bounds from more trials each time: %v", end)
	}
}

// TestLiveUI runs dpsim audit --ui with the fast engine (a consensus game, which the engine
// plays at about 30,000 trials a second on one worker: 2.5 s or more): the event stream shows the bounds
// recomputed as the trials accumulate, and its final state holds the numbers --json prints.
func TestLiveUI(t *testing.T) {
	l := startAudit(t, scenarioPath("audit-consensus-gaussian"), "--trials", "40000", "--seed", "4", "--json", "--workers", "1",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.url(t)
	states := readAuditEvents(t, url)
	grew(t, states)
	end := states[len(states)-1]
	code, rep := l.stop(t)
	require.Equal(t, 0, code, l.stderr.String())
	checkFinal(t, end, rep)
	require.Equal(t, 80000, end.TrialsDone)
	require.Equal(t, 80000, end.TrialsTotal)
	require.True(t, end.Live)
}

// TestLiveUIWire: the same with the wire engine, whose scores are read from the eavesdropper
// process's trace as it grows.
func TestLiveUIWire(t *testing.T) {
	l := startAudit(t, scenarioPath("audit-vehicle-structured"), "--engine", "wire", "--trials", "1200", "--seed", "4", "--json",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.url(t)
	states := readAuditEvents(t, url)
	grew(t, states)
	code, rep := l.stop(t)
	require.Equal(t, 0, code, l.stderr.String())
	checkFinal(t, states[len(states)-1], rep)
}

// TestLiveMetrics scrapes /metrics while the audit plays (the trials by bit grow, a bound is
// there) and after its end: the trials, the bounds and the verdict of --json.
func TestLiveMetrics(t *testing.T) {
	l := startAudit(t, scenarioPath("audit-consensus-gaussian"), "--trials", "40000", "--seed", "6", "--json", "--workers", "1",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.url(t)
	const pt = "audit-consensus-gaussian"
	var during []float64
	for {
		mf := dpsimtest.ScrapeMetrics(t, url)
		info, _ := dpsimtest.MetricValue(mf, "dpsim_audit_info", "status", "running")
		if info == 0 {
			break
		}
		x, ok := dpsimtest.MetricValue(mf, "dpsim_audit_trials_total", "point", pt, "bit", "x")
		require.True(t, ok)
		if _, ok := dpsimtest.MetricValue(mf, "dpsim_audit_epsilon_lower_bound", "point", pt, "bound", "cp"); ok && x < 40000 {
			during = append(during, x)
		}
		time.Sleep(150 * time.Millisecond)
	}
	require.GreaterOrEqual(t, len(during), 2, "no bound scraped while the audit ran")
	require.Greater(t, during[len(during)-1], during[0], "the trials by bit did not grow")
	<-time.After(50 * time.Millisecond)
	mf := dpsimtest.ScrapeMetrics(t, url)
	code, rep := l.stop(t)
	require.Equal(t, 0, code, l.stderr.String())
	for bit, want := range map[string]float64{"x": 40000, "x_prime": 40000} {
		got, ok := dpsimtest.MetricValue(mf, "dpsim_audit_trials_total", "point", pt, "bit", bit)
		require.True(t, ok)
		require.Equal(t, want, got, bit)
	}
	played, _ := dpsimtest.MetricValue(mf, "dpsim_audit_trials_played_total", "point", pt)
	require.Equal(t, 80000.0, played)
	for bound, want := range map[string]float64{"cp": rep.EpsilonLBCP, "gdp": rep.EpsilonLBGDP, "fdp": rep.EpsilonLBFDP} {
		got, ok := dpsimtest.MetricValue(mf, "dpsim_audit_epsilon_lower_bound", "point", pt, "bound", bound)
		require.True(t, ok, bound)
		require.Equal(t, want, got, bound)
	}
	v, ok := dpsimtest.MetricValue(mf, "dpsim_audit_verdict", "point", pt, "verdict", rep.Verdict)
	require.True(t, ok)
	require.Equal(t, 1.0, v)
	claimed, _ := dpsimtest.MetricValue(mf, "dpsim_audit_epsilon_claimed", "point", pt)
	require.Equal(t, rep.Claimed(), claimed)
	_, ok = dpsimtest.MetricValue(mf, "dpsim_audit_info", "status", "ok", "engine", "fast")
	require.True(t, ok)
	_, ok = dpsimtest.MetricValue(mf, "go_goroutines")
	require.True(t, ok, "the Go collector")
}

// The live view's flags: --ui-hold needs --ui, and --one-run has no live view.
func TestLiveUIUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"a.yaml", "--ui-hold", "1s"}, "give --ui"},
		{[]string{"a.yaml", "--ui", "--ui-hold", "-1s"}, "--ui-hold -1s"},
		{[]string{"a.yaml", "--ui", "--one-run"}, "--one-run"},
		{[]string{"a.yaml", "--ui=nonsense"}, "HOST:PORT"},
		{[]string{"a.yaml", "--ui=0.0.0.0:0"}, "--ui-public"},
		{[]string{"a.yaml", "--ui=192.168.1.2:0"}, "--ui-public"},
		{[]string{"a.yaml", "--ui-public"}, "give --ui=HOST:PORT"},
	} {
		_, _, err := runIn(t, c.args...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want)
	}
}

// TestLiveUIPublic: with --ui-public the audit serves its live view on 0.0.0.0 and warns.
func TestLiveUIPublic(t *testing.T) {
	_, stderr, err := runIn(t, scenarioPath("audit-consensus-gaussian"), "--trials", "200", "--seed", "4", "--workers", "1",
		"--ui=0.0.0.0:0", "--ui-public", "--progress=false")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "warning: the live view on 0.0.0.0:0 serves the network (--ui-public)")
	require.Regexp(t, `live view http://[^/ ]+:\d+/\?token=[0-9a-f]{48} `, stderr)
}
