package auditcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/audit"
)

// --engine wire --role ENDPOINT=COMMAND plays the game against a user's program in place of
// dpsim's own role process (the same launcher machinery as dpsim run --role). These tests run
// dpsim's own roles through that path (the command '<dpsim> plant'), a Go stand-in cloud written
// from the protocol alone (../run/testdata/outsidecloud), broken on purpose, and programs that
// die: the bounds must equal those of dpsim's own processes bit for bit, and whatever a program
// does wrong is named with it, never hidden behind a verdict.

// dpsimAudit runs `dpsim audit args...` as its own process and returns its exit code, stdout and
// stderr.
func dpsimAudit(t testing.TB, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	return dpsimAuditIn(t, "", timeout, args...)
}

// dpsimAuditIn is dpsimAudit run in the directory dir ("": this one).
func dpsimAuditIn(t testing.TB, dir string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(dpsimBin, append([]string{"audit", "--log-level", "warn"}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String(), errb.String()
		}
		require.NoError(t, err)
		return 0, out.String(), errb.String()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("dpsim audit %v did not end within %v\nstderr:\n%s", args, timeout, errb.String())
		return -1, "", ""
	}
}

// sameBounds requires the two reports of one seed to be the same game's: verdict, bounds and
// every score's analysis, bit for bit.
func sameBounds(t *testing.T, want, got *audit.GameReport) {
	t.Helper()
	require.Equal(t, want.Episodes, got.Episodes)
	require.Equal(t, want.Verdict, got.Verdict)
	require.Equal(t, want.Pair, got.Pair)
	require.Equal(t, want.EpsilonLBCP, got.EpsilonLBCP)
	require.Equal(t, want.EpsilonLBGDP, got.EpsilonLBGDP)
	require.Equal(t, want.EpsilonLBFDP, got.EpsilonLBFDP)
	require.Equal(t, want.MuGDP, got.MuGDP)
	require.Len(t, got.Scores, len(want.Scores))
	for i := range want.Scores {
		require.Equal(t, want.Scores[i].Result, got.Scores[i].Result, "score %s", want.Scores[i].Name)
	}
}

// processOf returns the report's process with sender name sender.
func processOf(t *testing.T, r *audit.GameReport, sender string) audit.RoleProcess {
	t.Helper()
	for _, p := range r.Processes {
		if p.Sender == sender {
			return p
		}
	}
	t.Fatalf("no process %s in %+v", sender, r.Processes)
	return audit.RoleProcess{}
}

// dpsim's own plant, eavesdropper and agent started through --role ('<dpsim> plant': a program
// like any other, with the arguments and environment dpsim's own would get) play the same game
// as without --role: bit-identical bounds for the same seed. The plant and the agent open their
// sealed x(0) on the private line; the eavesdropper's trace is what the audit scores. The
// outputs name the program; nothing went wrong, so there is no problem and no degradation.
func TestRoleOwnProgramsGiveTheSameBounds(t *testing.T) {
	vehicle := []string{scenarioPath("audit-vehicle-structured"), "--engine", "wire", "--trials", "60", "--seed", "41", "--json"}
	code, out, stderr := dpsimAudit(t, 2*time.Minute, vehicle...)
	require.Equal(t, 0, code, stderr)
	own := decodeReport(t, out)
	require.Len(t, own.Processes, 3, "the wire engine lists its processes")
	require.Empty(t, own.Programs())

	for _, c := range []struct {
		name, sender, role string
		args               []string // ending in --json
	}{
		{"plant", "plant.0", "plant", vehicle},
		{"eavesdropper", "eavesdropper.0", "eavesdropper", vehicle},
		{"agent", "agent.3", "agent", []string{scenarioPath("audit-consensus-gaussian"), "--engine", "wire", "--trials", "20", "--seed", "43", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := own
			if c.name == "agent" {
				code, out, stderr := dpsimAudit(t, 2*time.Minute, c.args...)
				require.Equal(t, 0, code, stderr)
				want = decodeReport(t, out)
			}
			dir := t.TempDir()
			prog := dpsimBin + " " + c.role
			code, out, stderr := dpsimAudit(t, 2*time.Minute, append(slices.Clone(c.args), "--role", c.sender+"="+prog, "--out", dir)...)
			require.Equal(t, 0, code, stderr)
			got := decodeReport(t, out)
			sameBounds(t, want, got)
			p := processOf(t, got, c.sender)
			require.Equal(t, prog, p.Program, "the output names the program")
			require.Positive(t, p.Steps)
			require.Zero(t, p.Missed)
			require.Len(t, got.Programs(), 1, "only the role given is a program")
			require.Empty(t, got.Problems)
			require.Empty(t, got.Degraded)
			require.Contains(t, got.ProgramsLine(), prog)

			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			require.NoError(t, err)
			require.Contains(t, string(md), "**Your programs.**")
			require.Contains(t, string(md), "the verdict is about")
			require.Contains(t, string(md), "`"+prog+"` (--role)")
			raw, err := os.ReadFile(filepath.Join(dir, "audit.json"))
			require.NoError(t, err)
			require.Equal(t, got.Processes, decodeReport(t, string(raw)).Processes, "audit.json names it too")

			// the table says it too (the arguments without --json)
			table := slices.Clone(c.args[:len(c.args)-1])
			code, out, stderr = dpsimAudit(t, 2*time.Minute, append(table, "--role", c.sender+"="+prog)...)
			require.Equal(t, 0, code, stderr)
			require.Contains(t, out, "role "+c.sender)
			require.Contains(t, out, "played by your program")
		})
	}
}

// outsideCloudBin is the stand-in cloud (internal/cmd/run/testdata/outsidecloud), built once
// next to the dpsim binary.
func outsideCloudBin(t *testing.T) string { return dpsimtest.OutsideCloud(t, filepath.Dir(dpsimBin)) }

// A cloud of someone else's (one episode at a time, json only: it relies on --role's json
// default) plays the game: unbroken, the Go cloud's bounds bit for bit; sending every u one step
// off, its invalid messages are a problem attributed to it and the steps that timed out a
// degradation, both in --json, the table, report.md and stderr, and the audit still ends with
// its verdict (exit 0) - a named fact, never a silent change; without a result (a fatal problem)
// the audit fails, exit 1, naming the cloud and its program.
func TestRoleOutsideCloudProblemsAttributed(t *testing.T) {
	bin := outsideCloudBin(t)
	// T = 2: a broken u costs a --timeout per step, and the launcher bounds an episode by
	// 2 --timeout + 50 ms + T x 100 ms, whatever the --timeout
	scn := filepath.Join(t.TempDir(), "audit-vehicle-short.yaml")
	data, err := os.ReadFile(scenarioPath("audit-vehicle-structured"))
	require.NoError(t, err)
	data = bytes.Replace(data, []byte("\nsteps: 100"), []byte("\nsteps: 2"), 1)
	require.NoError(t, os.WriteFile(scn, data, 0o644))
	base := []string{scn, "--engine", "wire", "--trials", "10", "--seed", "5", "--inflight", "1"}

	code, out, stderr := dpsimAudit(t, 2*time.Minute, append(base, "--json")...)
	require.Equal(t, 0, code, stderr)
	own := decodeReport(t, out)

	t.Run("works", func(t *testing.T) {
		code, out, stderr := dpsimAudit(t, 2*time.Minute, append(base, "--json", "--role", "cloud.0="+bin)...)
		require.Equal(t, 0, code, stderr)
		got := decodeReport(t, out)
		sameBounds(t, own, got)
		require.Empty(t, got.Problems)
		require.Empty(t, got.Degraded)
		require.Equal(t, bin, processOf(t, got, "cloud.0").Program)
	})

	t.Run("wrongstep", func(t *testing.T) {
		prog := bin + " -break wrongstep"
		dir := t.TempDir()
		// the table on stdout, the --json report in audit.json
		code, table, stderr := dpsimAudit(t, 2*time.Minute, append(slices.Clone(base), "--timeout", "300ms", "--out", dir, "--role", "cloud.0="+prog)...)
		require.Equal(t, 0, code, "invalid messages are not fatal: the audit ends with its verdict\n%s", stderr)
		raw, err := os.ReadFile(filepath.Join(dir, "audit.json"))
		require.NoError(t, err)
		got := decodeReport(t, string(raw))
		require.Contains(t, []string{audit.Consistent, audit.Violation}, got.Verdict)
		require.NotEmpty(t, got.Problems)
		for _, p := range got.Problems {
			require.Equal(t, "cloud-0", p.Process, "only the cloud is blamed: %+v", p)
			require.Equal(t, prog, p.Program)
			require.Equal(t, "invalid-messages", p.Kind)
			require.Contains(t, p.Detail, "step")
			require.Positive(t, p.Count)
			require.False(t, p.Fatal)
			require.Contains(t, stderr, "dpsim audit: problem: "+p.String(), "stderr names it, whatever the log level")
			require.Contains(t, table, "problem  ")
		}
		require.NotEmpty(t, got.Degraded, "the plant's steps timed out waiting for u")
		require.Contains(t, strings.Join(got.Degraded, "\n"), "timed out (--timeout)")
		require.Positive(t, processOf(t, got, "plant.0").Missed)
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		require.NoError(t, err)
		require.Contains(t, string(md), "**The game did not run clean.**")
		require.Contains(t, string(md), "- problem: cloud-0")
		require.Contains(t, string(md), "- degraded: ")
		require.Contains(t, table, "invalid-messages")
		require.Contains(t, table, "degraded  ")
		require.Contains(t, table, "role cloud.0")
	})

	t.Run("noresult", func(t *testing.T) {
		prog := bin + " -break noresult"
		code, _, stderr := dpsimAudit(t, 2*time.Minute, append(base, "--json", "--role", "cloud.0="+prog)...)
		require.Equal(t, 1, code, "a fatal problem fails the audit\n%s", stderr)
		require.Contains(t, stderr, "cloud-0")
		require.Contains(t, stderr, "no-result")
		require.Contains(t, stderr, prog)
	})
}

// A third-party eavesdropper is held to what the audit reads of dpsim's own: its trace's final
// estimates and, for the precision score (on by default), its transcript. One that writes no
// transcript (dpsim's own told --transcript=false after the launcher's flags) fails the audit
// naming the program and the way out; with --precision=false its estimates alone are scored,
// the bounds of dpsim's own eavesdropper without the precision score, bit for bit.
func TestRoleEavesdropperWithoutTranscript(t *testing.T) {
	prog := `sh -c '"$0" eavesdropper "$@" --transcript=false' ` + dpsimBin
	args := []string{scenarioPath("audit-vehicle-structured"), "--engine", "wire", "--trials", "30", "--seed", "47", "--json"}
	code, _, stderr := dpsimAudit(t, 2*time.Minute, append(slices.Clone(args), "--role", "eavesdropper.0="+prog)...)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "transcript")
	require.Contains(t, stderr, "--role eavesdropper.0=")
	require.Contains(t, stderr, "--precision=false")

	code, out, stderr := dpsimAudit(t, 2*time.Minute, append(slices.Clone(args), "--precision=false")...)
	require.Equal(t, 0, code, stderr)
	own := decodeReport(t, out)
	code, out, stderr = dpsimAudit(t, 2*time.Minute, append(slices.Clone(args), "--precision=false", "--role", "eavesdropper.0="+prog)...)
	require.Equal(t, 0, code, stderr)
	got := decodeReport(t, out)
	sameBounds(t, own, got)
	require.Equal(t, prog, processOf(t, got, "eavesdropper.0").Program)
}

// jsPlant is the JavaScript plant of examples/js-plant as a user starts it from the repository
// root (its README); jsPlantRoot returns that root once node can run it (its dependencies
// installed from the lockfile; the test is skipped, saying so, when node is absent - in CI it
// fails).
const jsPlant = "node examples/js-plant/plant.js"

func jsPlantRoot(t *testing.T) string {
	t.Helper()
	dpsimtest.NodeExample(t, "js-plant")
	return dpsimtest.Root()
}

// The JavaScript plant of examples/js-plant plays the game as dpsim run --role plays it, started
// by the same command from the repository root: it opens each trial's sealed x(0) on the
// challenger's private line (docs/protocol.md section 7) and the bounds are bit-identical to
// those of dpsim's own plant for the same seed - with episodes in flight (episodes-x0) and one at
// a time (episode-x0). Without its curve key it cannot open the boxes: the audit fails, naming
// the program and why, and never plays from the plan's x(0) instead.
func TestRoleJavaScriptPlant(t *testing.T) {
	root := jsPlantRoot(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"inflight", []string{"--trials", "100", "--seed", "53"}},
		{"one at a time", []string{"--trials", "30", "--seed", "61", "--inflight", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"scenarios/audit-vehicle-structured.yaml", "--engine", "wire", "--json"}, c.args...)
			dir := t.TempDir()
			code, out, stderr := dpsimAuditIn(t, root, 2*time.Minute, append(slices.Clone(args), "--role", "plant.0="+jsPlant, "--out", dir)...)
			require.Equal(t, 0, code, stderr)
			got := decodeReport(t, out)
			code, out, stderr = dpsimAuditIn(t, root, 2*time.Minute, args...)
			require.Equal(t, 0, code, stderr)
			sameBounds(t, decodeReport(t, out), got)
			p := processOf(t, got, "plant.0")
			require.Equal(t, jsPlant, p.Program)
			require.Equal(t, got.Episodes*got.Steps, p.Steps)
			require.Zero(t, p.Invalid)
			require.Empty(t, got.Problems)
			require.Empty(t, got.Degraded)

			// its result: every episode played, every x0 message (one per episode) opened
			raw, err := os.ReadFile(filepath.Join(dir, "procs", "plant-0.result.json"))
			require.NoError(t, err)
			var res struct {
				Status     string `json:"status"`
				Episodes   int    `json:"episodes"`
				CtlInvalid struct {
					Received, Dropped int
				} `json:"ctl_invalid"`
			}
			require.NoError(t, json.Unmarshal(raw, &res))
			require.Equal(t, "ok", res.Status)
			require.Equal(t, got.Episodes, res.Episodes)
			require.Greater(t, res.CtlInvalid.Received, got.Episodes, "the x0 messages and the ctl.episode(s)")
			require.Zero(t, res.CtlInvalid.Dropped, "every sealed x(0) opened")
		})
	}
	t.Run("no curve key", func(t *testing.T) {
		prog := "env -u DPSIM_X0_SEED " + jsPlant
		code, _, stderr := dpsimAuditIn(t, root, 2*time.Minute, "scenarios/audit-vehicle-structured.yaml", "--engine", "wire",
			"--trials", "20", "--seed", "61", "--timeout", "1s", "--role", "plant.0="+prog)
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, `--role plant.0="`+prog+`"`, "the failure names the program")
		require.Contains(t, stderr, "episode 0 announced a private x0 that did not arrive")
	})
}

// The audit tells the JavaScript plant's two samplers apart as it tells dpsim's own apart
// (scenarios/audit-vehicle-float.yaml): with --sampler float (the textbook float64 noise of
// docs/protocol.md 12.2) the precision score reads the secret in the published bits and the
// verdict is violation, with an eps lower bound far above the claimed eps = 1, while the
// likelihood-ratio score (the real-valued view) stays within the claim; with --sampler secure
// (12.3, the default) it is consistent. Each equals, bit for bit, the audit of dpsim's own plant
// drawing the same sampler for the same seed.
func TestRoleJavaScriptPlantSamplers(t *testing.T) {
	root := jsPlantRoot(t)
	game := []string{"--engine", "wire", "--trials", "1000", "--seed", "59", "--json"}
	for _, c := range []struct {
		sampler, own, verdict string
	}{
		{"float", "scenarios/audit-vehicle-float.yaml", audit.Violation},
		{"secure", "scenarios/audit-vehicle-structured.yaml", audit.Consistent},
	} {
		t.Run(c.sampler, func(t *testing.T) {
			prog := jsPlant + " --sampler " + c.sampler
			args := append([]string{"scenarios/audit-vehicle-structured.yaml", "--role", "plant.0=" + prog}, game...)
			code, out, stderr := dpsimAuditIn(t, root, 3*time.Minute, args...)
			require.Equal(t, 0, code, stderr)
			got := decodeReport(t, out)
			require.Equal(t, c.verdict, got.Verdict)
			require.Equal(t, prog, processOf(t, got, "plant.0").Program)
			require.Empty(t, got.Problems)
			require.Empty(t, got.Degraded)
			scores := map[string]*audit.Result{}
			for _, s := range got.Scores {
				scores[s.Name] = s.Result
			}
			require.Contains(t, scores, "precision")
			require.Contains(t, scores, "llr")
			require.LessOrEqual(t, scores["llr"].EpsilonLBCP, got.EpsilonClaimed, "the real-valued mechanism is at its claim")
			require.LessOrEqual(t, scores["llr"].EpsilonLBGDP, got.EpsilonClaimed)
			if c.verdict == audit.Violation {
				require.Equal(t, "precision", got.Score, "the bits give it away")
				require.Greater(t, scores["precision"].EpsilonLBCP, 3*got.EpsilonClaimed, "a large eps lower bound")
				require.Greater(t, scores["precision"].EpsilonLBGDP, 10*got.EpsilonClaimed)
			} else {
				require.LessOrEqual(t, got.EpsilonLBCP, got.EpsilonClaimed)
				require.LessOrEqual(t, got.EpsilonLBGDP, got.EpsilonClaimed)
				require.LessOrEqual(t, got.EpsilonLBFDP, got.EpsilonClaimed)
			}
			t.Logf("--sampler %s: %s, eps_lb_cp %.4g, eps_lb_gdp %.4g, eps_lb_fdp %.4g (score %s)", c.sampler, got.Verdict, got.EpsilonLBCP, got.EpsilonLBGDP, got.EpsilonLBFDP, got.Score)

			code, out, stderr = dpsimAuditIn(t, root, 3*time.Minute, append([]string{c.own}, game...)...)
			require.Equal(t, 0, code, stderr)
			sameBounds(t, decodeReport(t, out), got)
		})
	}
}

// A program that dies fails the audit with exit 1, naming the process and the program: one that
// exits at once (before it is ready), and dpsim's own plant killed in the middle of the game.
func TestRoleThatDiesFailsTheAudit(t *testing.T) {
	killed := `sh -c '"$0" plant "$@" & sleep 2; kill -9 $!; wait $!' ` + dpsimBin
	for _, prog := range []string{"false", killed} {
		code, _, stderr := dpsimAudit(t, 2*time.Minute, scenarioPath("audit-vehicle-structured"), "--engine", "wire",
			"--trials", "100000", "--inflight", "1", "--seed", "3", "--role", "plant.0="+prog)
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "plant-0")
		require.Contains(t, stderr, "--role plant.0=")
		require.Contains(t, stderr, strings.ReplaceAll(prog, `"`, `\"`), "the program is quoted")
	}
}

// --role needs --engine wire; its value must be ENDPOINT=COMMAND for a process of the scenario
// that the scenario does not crash. Each mistake is a usage error (exit 2) that says which.
func TestRoleUsageErrors(t *testing.T) {
	vehicle := scenarioPath("audit-vehicle-structured")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{vehicle, "--role", "plant.0=x"}, "--role starts a program in place of a role process: it needs --engine wire"},
		{[]string{vehicle, "--engine", "fast", "--role", "plant.0=x"}, "needs --engine wire"},
		{[]string{"--one-run", scenarioPath("audit-consensus-onerun"), "--role", "agent.0=x"}, "needs --engine wire"},
		{[]string{vehicle, "--engine", "wire", "--role", "plant.0="}, "--role plant.0: an empty command"},
		{[]string{vehicle, "--engine", "wire", "--role", "plant.0"}, "want ENDPOINT=COMMAND"},
		{[]string{vehicle, "--engine", "wire", "--role", "=x"}, "want ENDPOINT=COMMAND"},
		{[]string{vehicle, "--engine", "wire", "--role", "plant.0=a", "--role", "plant.0=b"}, "given twice"},
		{[]string{vehicle, "--engine", "wire", "--role", "satellite.0=x"}, "--role satellite.0: no such process in scenario audit-vehicle-structured (its processes: plant.0, cloud.0, eavesdropper.0)"},
		{[]string{vehicle, "--engine", "wire", "--role", "agent.0=x"}, "--role agent.0: no such process"},
		{[]string{scenarioPath("audit-consensus-gaussian"), "--engine", "wire", "--role", "agent.10=x"}, "--role agent.10: no such process"},
		{[]string{scenarioPath("faults-agent-crash"), "--engine", "wire", "--role", "agent.0=x"}, "faults.crashes"},
	} {
		_, _, err := runIn(t, c.args...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	// as a process: exit 2, the flag named on stderr, no role process started
	code, _, stderr := dpsimAudit(t, time.Minute, vehicle, "--role", "plant.0=x")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--role")
	code, _, stderr = dpsimAudit(t, time.Minute, vehicle, "--engine", "wire", "--role", "plant.1=x")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--role plant.1: no such process")
}
