package auditcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
)

// seqJSON decodes the sequential object of dpsim audit --sequential --json by its published keys.
type seqJSON struct {
	Verdict    string `json:"verdict"`
	Trials     int    `json:"trials"`
	Episodes   int    `json:"episodes"`
	Sequential struct {
		TrialsUsed struct {
			Bit0 int `json:"bit0"`
			Bit1 int `json:"bit1"`
		} `json:"trials_used"`
		Looks          int     `json:"looks"`
		StoppedBecause string  `json:"stopped_because"`
		Verdict        string  `json:"verdict"`
		EpsilonLB      float64 `json:"epsilon_lb_seq"`
		EpsilonLBGDP   float64 `json:"epsilon_lb_seq_gdp"`
		Families       []struct {
			Name      string  `json:"name"`
			LogE      float64 `json:"log_e"`
			Threshold float64 `json:"log_threshold"`
		} `json:"families"`
		History []struct {
			Pairs int `json:"pairs"`
		} `json:"history"`
	} `json:"sequential"`
}

func decodeSeq(t *testing.T, s string) seqJSON {
	t.Helper()
	var r seqJSON
	require.NoError(t, json.Unmarshal([]byte(s), &r), s)
	return r
}

// --sequential stops the iid-naive vehicle on a violation within 500 trials per side, says what
// it did under the published keys, analyses exactly the trials it used, and decides the same
// whatever the number of workers (the pairs are weighed in order).
func TestSequentialCommand(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runIn(t, scenarioPath("audit-vehicle-iid-naive"), "--sequential", "--json", "--seed", "5", "--workers", "1", "--out", dir)
	require.NoError(t, err)
	r := decodeSeq(t, stdout)
	q := r.Sequential
	require.Equal(t, audit.Violation, r.Verdict)
	require.Equal(t, audit.StopViolation, q.StoppedBecause)
	require.LessOrEqual(t, q.TrialsUsed.Bit0, 500)
	require.Equal(t, q.TrialsUsed.Bit0, q.TrialsUsed.Bit1)
	require.Equal(t, q.TrialsUsed.Bit0, r.Trials, "the fixed-size figures are those of the trials used")
	require.Equal(t, 2*r.Trials, r.Episodes)
	require.Equal(t, q.Looks, len(q.History))
	require.Equal(t, q.TrialsUsed.Bit0, q.History[len(q.History)-1].Pairs)
	var crossed bool
	for _, f := range q.Families {
		crossed = crossed || f.LogE >= f.Threshold
	}
	require.True(t, crossed, "a violation needs a family whose e-value of the claim reached 1/alpha: %+v", q.Families)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "VIOLATION (sequential, stopped after")

	again, _, err := runIn(t, scenarioPath("audit-vehicle-iid-naive"), "--sequential", "--json", "--seed", "5", "--workers", "2")
	require.NoError(t, err)
	require.Equal(t, q, decodeSeq(t, again).Sequential, "the decision depends on the pairs, not on the workers")

	// the table names the decision
	text, _, err := runIn(t, scenarioPath("audit-vehicle-iid-naive"), "--sequential", "--seed", "5")
	require.NoError(t, err)
	require.Contains(t, text, "VIOLATION (sequential, stopped after")
}

// On a sound scenario the sequential audit stops at the cap, or at the target: consistent.
func TestSequentialCommandSound(t *testing.T) {
	stdout, _, err := runIn(t, scenarioPath("audit-consensus-laplace"), "--sequential", "--json", "--seed", "3", "--trials", "3000", "--target", "0.5")
	require.NoError(t, err)
	r := decodeSeq(t, stdout)
	require.Equal(t, audit.Consistent, r.Verdict)
	require.Contains(t, []string{audit.StopTarget, audit.StopTrialCap}, r.Sequential.StoppedBecause)
	if r.Sequential.StoppedBecause == audit.StopTarget {
		require.GreaterOrEqual(t, r.Sequential.EpsilonLB, 0.5)
	} else {
		require.Equal(t, 3000, r.Sequential.TrialsUsed.Bit0)
	}
}

func TestSequentialUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "0.9"}, "--target is the tightness at which --sequential stops"},
		{[]string{"--sequential", "--target", "1.5"}, "--target 1.5"},
		{[]string{"--sequential", "--one-run"}, "--one-run plays one episode"},
		{[]string{"--sequential", "--dispatch", "--spawn-workers", "1"}, "not with --dispatch"},
	} {
		_, _, err := runIn(t, append(c.args, scenarioPath("audit-vehicle-structured"))...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// Over the wire: the real processes play until the test decides, then the audit stops them.
func TestSequentialWire(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	cmd := exec.Command(dpsimBin, "audit", scenarioPath("audit-vehicle-iid-naive"), "--engine", "wire", "--sequential", "--trials", "1000",
		"--json", "--seed", "5", "--log-level", "warn")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, cmd.Run(), errb.String())
	wire := decodeSeq(t, out.String())
	require.Equal(t, audit.StopViolation, wire.Sequential.StoppedBecause)
	fast, _, err := runIn(t, scenarioPath("audit-vehicle-iid-naive"), "--sequential", "--trials", "1000", "--json", "--seed", "5")
	require.NoError(t, err)
	require.Equal(t, decodeSeq(t, fast).Sequential, wire.Sequential, "the wire engine plays the fast engine's episodes bit for bit: the same decision")
}

// Sound shipped scenarios at their claim: false violations of the sequential audit stay within
// its level, 5 % per run (20 seeds of each of two scenarios, 2,000 trials per side at most;
// scripts/sequential-trials runs 400). More than 6 of 40 has probability 0.0086 at 5 %.
func TestSequentialSoundScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("40 audits")
	}
	viol := 0
	for _, name := range []string{"audit-vehicle-structured", "audit-consensus-gaussian"} {
		for seed := 1; seed <= 20; seed++ {
			stdout, _, err := runIn(t, scenarioPath(name), "--sequential", "--json", "--trials", "2000", "--seed", fmt.Sprint(seed), "--precision=false")
			require.NoError(t, err)
			if decodeSeq(t, stdout).Verdict == audit.Violation {
				viol++
				t.Logf("%s seed %d: false violation", name, seed)
			}
		}
	}
	require.LessOrEqual(t, viol, 6, "false violations of 40 sound audits")
}
