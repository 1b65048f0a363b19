package report

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// reportOf builds the report of in and returns its Markdown.
func reportOf(t *testing.T, in Input) string {
	t.Helper()
	rep, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(rep.Markdown)
}

// before returns md up to the first occurrence of marker (all of md when absent).
func before(md, marker string) string {
	if i := strings.Index(md, marker); i >= 0 {
		return md[:i]
	}
	return md
}

// TestZeroBasedNumbering: agents, nodes and state components are numbered from 0 in report
// text, as the scenario's x0 and `proc: agent.0` (the graph warning named nodes 2, 5, 7, 10
// and a 3-state plant's components x1..x3).
func TestZeroBasedNumbering(t *testing.T) {
	cons := reportOf(t, fastInput(t, shipped("consensus-gaussian"), 20))
	if !strings.Contains(cons, "agents 1, 4, 6, 9 (0-based") || strings.Contains(cons, "2, 5, 7, 10") {
		t.Errorf("graph warning not 0-based:\n%s", before(cons, "## Privacy"))
	}
	plant := reportOf(t, fastInput(t, "testdata/noisy-3state.yaml", 20))
	if !strings.Contains(plant, "- state x0: E[x0(T) - x0_r(T)]") || strings.Contains(plant, "state x3") {
		t.Errorf("state components not 0-based:\n%s", before(plant[strings.Index(plant, "## Results"):], "Checks:"))
	}
}

// TestCheckIntervalShownFirst: the position-offset check decides on a 99.9% interval; the
// results line shows that interval first, named, before the 95% one (a PASS never sits
// beside an unnamed interval of another level that excludes the theory value).
func TestCheckIntervalShownFirst(t *testing.T) {
	md := reportOf(t, controlInput(t))
	line := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "- position p:") {
			line = l
		}
	}
	i999, i95 := strings.Index(line, "99.9% interval ["), strings.Index(line, "95% interval [")
	if i999 < 0 || i95 < 0 || i999 > i95 {
		t.Errorf("the position line does not show the check's 99.9%% interval first: %q", line)
	}
	// A sweep's table shows, for the points the check applies to, its interval, marked.
	sweep := reportOf(t, fastInput(t, shipped("cloud-vehicle-sweep"), 10))
	results := before(sweep[strings.Index(sweep, "## Results"):], "Across the sweep")
	for _, l := range strings.Split(results, "\n") {
		structured := strings.HasPrefix(l, "| epsilon=") && strings.Contains(l, "noise=structured |")
		if structured && !strings.Contains(l, "(99.9%)") || strings.HasPrefix(l, "| epsilon=") && strings.Contains(l, "noise=iid") && strings.Contains(l, "(99.9%)") {
			t.Errorf("sweep row does not mark the check's interval where (and only where) it applies: %s", l)
		}
	}
	if n := strings.Count(results, "(99.9%)"); n != 7 {
		t.Errorf("%d rows with the check's interval, want the 7 structured points", n)
	}
	if !strings.Contains(sweep, "Intervals are 95% unless marked: the 99.9% ones are those the position-offset check decides on.") {
		t.Error("the sweep table does not explain its marked intervals")
	}
}

// TestFaultsNoteAtTop: a scenario with faults says at the top (before the verdict) that FAIL
// lines are expected because the theory assumes a lossless network; one without faults does not.
func TestFaultsNoteAtTop(t *testing.T) {
	for _, tc := range []struct {
		name string
		note bool
	}{{"faults-vehicle-latency", true}, {"faults-agent-crash", true}, {"faults-partition", true}, {"faults-nats-restart", true}, {"cloud-vehicle", false}} {
		t.Run(tc.name, func(t *testing.T) {
			md := reportOf(t, fastInput(t, shipped(tc.name), 10))
			top := before(md, "**Verdict")
			got := strings.Contains(top, "**This scenario injects faults**") && strings.Contains(top, "FAIL lines are expected") &&
				strings.Contains(top, "lossless network")
			if got != tc.note {
				t.Errorf("faults note at the top = %v, want %v:\n%s", got, tc.note, top)
			}
		})
	}
}

// TestSecurityAndStale: Input.Security is rendered as a Security section; Input.Stale next to
// the invalid counts, explained as a timing effect, and the invalid counts are said to be
// what was wrong. The fast engine (no Security, no Stale) has neither.
func TestSecurityAndStale(t *testing.T) {
	in := controlInput(t)
	in.Security = &Security{Server: "external", Cluster: 1, Permissions: false, Signed: true, Authenticated: true, TLS: "external", Strict: true}
	in.Stale = map[string]uint64{"plant-0": 3980, "cloud-0": 12}
	md := reportOf(t, in)
	sec := before(md[strings.Index(md, "## Security"):], "## Privacy")
	for _, want := range []string{
		"| server | external (--nats-url / NATS_URL",
		"| permissions | not known: the operator of the external server configures them",
		"| signed | yes: every data and control message carries an ed25519 signature",
		"| authenticated | yes: receivers verified every signature",
		"| TLS | external: the CA and certificates given with --tls-ca |",
		"| strict | yes (--strict)",
		"| cluster | 1 server |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("Security section lacks %q:\n%s", want, sec)
		}
	}
	tr := md[strings.Index(md, "## Transport"):]
	for _, want := range []string{
		"Invalid messages: messages that were wrong",
		"Stale messages (3992): messages that arrived for an episode the receiver had already finished",
		"one that differs is a conflict (forged or corrupted; see the link counters), one that agrees is a timing effect",
		"| cloud-0 | 12 |\n| plant-0 | 3980 |",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("Transport section lacks %q:\n%s", want, tr)
		}
	}
	if strings.Index(tr, "Invalid messages") > strings.Index(tr, "Stale messages") {
		t.Error("stale counts must follow the invalid ones")
	}
	emb := controlInput(t)
	emb.Security = &Security{Server: "embedded", Cluster: 3, Permissions: true, TLS: "auto"}
	md = reportOf(t, emb)
	for _, want := range []string{"| server | embedded (the launcher's own NATS servers: a cluster of 3 joined by routes) |",
		"| signed | no |", "| authenticated | by the server only: no signatures, but the per-role permissions", "| TLS | auto:"} {
		if !strings.Contains(md, want) {
			t.Errorf("embedded Security section lacks %q", want)
		}
	}
	ext := controlInput(t)
	ext.Security = &Security{Server: "external", TLS: "off"}
	if md := reportOf(t, ext); !strings.Contains(md, "| authenticated | no: a message claiming to come from a process is taken at its word |") {
		t.Error("an external server without signatures must say that nothing authenticates a sender")
	}
	if md := reportOf(t, fastInput(t, shipped("cloud-vehicle"), 10)); strings.Contains(md, "## Security") || strings.Contains(md, "Stale messages") {
		t.Error("a fast run has no Security section and no stale counts")
	}
}

// TestStatusAfterTheFact: a run whose episodes all completed but that failed afterwards (e.g.
// writing summary.json on a full disk) is re-rendered with Status failed and the error: the
// top says failed with the error, never "Status: ok", and the verdict does not call complete
// numbers partial; an Error without a Status is still shown at the top.
func TestStatusAfterTheFact(t *testing.T) {
	in := controlInput(t)
	in.Status, in.PlannedPoints = "ok", 1
	in.Points[0].Requested = in.Points[0].Results.Runs
	if md := reportOf(t, in); !strings.HasPrefix(md[strings.Index(md, "\n\n")+2:], "> **Status: ok**") {
		t.Fatalf("ok run:\n%s", before(md, "## Setup"))
	}
	in.Status, in.Error = "failed", "writing summary.json: no space left on device"
	md := reportOf(t, in)
	top := before(md, "## Setup")
	for _, want := range []string{
		"> **Status: failed** - every requested episode completed, but the run failed afterwards; the numbers below are complete:",
		"> - error: writing summary.json: no space left on device",
		"**Verdict (the run failed after its episodes, see Status):** all 5 computed checks pass",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("report lacks %q:\n%s", want, top)
		}
	}
	if strings.Contains(top, "Status: ok") || strings.Contains(top, "partial") {
		t.Errorf("failed-after-the-fact report reads ok or partial:\n%s", top)
	}
	in.Status = ""
	if top := before(reportOf(t, in), "## Setup"); !strings.Contains(top, "> **Status: not stated** - the run reported an error:") ||
		!strings.Contains(top, "no space left on device") {
		t.Errorf("an error without a status is not at the top:\n%s", top)
	}
}

// TestWriteMarkdownRerendersStatus: WriteMarkdown rewrites report.md with a status learnt after
// Write (a summary write that failed), keeping the figures Write drew.
func TestWriteMarkdownRerendersStatus(t *testing.T) {
	dir := t.TempDir()
	in := controlInput(t)
	in.Status = "ok"
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	in.Status, in.Error = "failed", "writing summary.json: no space left on device"
	if err := WriteMarkdown(dir, in); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FigTrackingError + ".png", FigTrackingMSE + ".svg", FigEavesdropper + ".png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("figure gone: %v", err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	if strings.Contains(md, "Status: ok") || !strings.Contains(before(md, "## Setup"), "> - error: writing summary.json: no space left on device") {
		t.Errorf("report.md not re-rendered with the failure:\n%s", before(md, "## Setup"))
	}
	if err := WriteMarkdown("", in); err == nil {
		t.Error("no directory accepted")
	}
}

// TestThinnedSeriesSaid: a horizon longer than metrics.MaxSeriesPoints thins the per-step series;
// the report says so (and only then), so a reader does not take the figures' points for every
// step.
func TestThinnedSeriesSaid(t *testing.T) {
	for _, tc := range []struct {
		steps int
		said  bool
	}{{100, false}, {metrics.MaxSeriesPoints + 500, true}} {
		data, err := os.ReadFile(shipped("cloud-vehicle"))
		if err != nil {
			t.Fatal(err)
		}
		yaml := regexp.MustCompile(`(?m)^steps:.*$`).ReplaceAllString(string(data), fmt.Sprintf("steps: %d", tc.steps))
		path := filepath.Join(t.TempDir(), "long.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		in := fastInput(t, path, 3)
		dir := t.TempDir()
		if err := WriteMarkdown(dir, in); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("The horizon has %d steps: the per-step series (the figures and summary.json) keep at most %d evenly spaced steps",
			tc.steps, metrics.MaxSeriesPoints)
		if got := strings.Contains(string(md), want); got != tc.said {
			t.Errorf("steps %d: report says the series are thinned = %v, want %v", tc.steps, got, tc.said)
		}
	}
}
