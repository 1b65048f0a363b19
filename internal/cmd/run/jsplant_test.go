package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The plant of examples/js-plant, in JavaScript, stands in for `dpsim plant`: written from
// docs/protocol.md alone (section 12: the streams, the exact samplers and rounding, what the
// secure plant publishes), it gives a run the Go plant's metrics and merged trace bit for bit,
// for the same seed - the published yhat(t), so every digit its noise drew, and the true state.
// The launcher starts node in place of its own plant (--role), as a user would.
func TestJSPlantBitForBit(t *testing.T) {
	dir := jsRoleReady(t, "js-plant")
	plantJS := filepath.Join(dir, "plant.js")
	vehicle, err := os.ReadFile(scenarioPath("cloud-vehicle"))
	require.NoError(t, err)
	// variant is the vehicle with the privacy lines old replaced by new (each must be there).
	variant := func(t *testing.T, pairs ...string) string {
		s := string(vehicle)
		for i := 0; i < len(pairs); i += 2 {
			require.Contains(t, s, pairs[i])
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		f := filepath.Join(t.TempDir(), "variant.yaml")
		require.NoError(t, os.WriteFile(f, []byte(s), 0o600))
		return f
	}
	const (
		structured = "  noise: structured # gamma(t)"
		gaussian   = "  mechanism: gaussian\n"
		delta      = "  delta: 0.01\n"
		tight      = "  calibration: tight"
		x0         = "  x0: [0, 0]"
		model      = "  model:\n    A: 1 # private p-dynamics p(t+1) = p(t) + Ts v(t), v treated as an input\n    C: 1\n"
	)
	laplace := []string{gaussian, "  mechanism: laplace\n", delta, "", tight, "  # calibration"}
	for _, tc := range []struct {
		name     string
		scenario func(t *testing.T) string
		args     []string
	}{
		// the secure sampler (the default): Karney's exact normal, the exact rounding of x(0)[0] + S eta
		{"secure-inflight-32", func(*testing.T) string { return scenarioPath("cloud-vehicle") }, []string{"--runs", "40", "--inflight", "32"}},
		{"secure-inflight-1", func(*testing.T) string { return scenarioPath("cloud-vehicle") }, []string{"--runs", "12", "--inflight", "1"}},
		{"secure-binary-keep", func(*testing.T) string { return scenarioPath("cloud-vehicle") },
			[]string{"--runs", "40", "--inflight", "16", "--encoding", "binary", "--trace-episodes", "10"}},
		// a private x(0) away from the grid, so that the rounding has something to round
		{"secure-x0", func(t *testing.T) string { return variant(t, x0, "  x0: [1.2345678901234567, -0.5]") }, []string{"--runs", "30"}},
		{"secure-laplace", func(t *testing.T) string { return variant(t, append(laplace, x0, "  x0: [-3.75, 0.25]")...) }, []string{"--runs", "30"}},
		{"secure-iid", func(t *testing.T) string {
			return variant(t, structured, "  noise: iid-calibrated #", x0, "  x0: [0.3, 0]")
		}, []string{"--runs", "20"}},
		{"secure-iid-laplace", func(t *testing.T) string {
			return variant(t, append(laplace, structured, "  noise: iid-calibrated #")...)
		}, []string{"--runs", "20"}},
		// the whole state private: nz = 2, S 2 x 2, two values rounded per episode
		{"secure-fullstate", func(t *testing.T) string { return variant(t, model, "", x0, "  x0: [0.7, -0.2]") }, []string{"--runs", "20"}},
		// the float sampler (docs/protocol.md 12.2): Go's ziggurat, the Laplace by ln(2U)
		{"float", func(t *testing.T) string { return variant(t, structured, "  sampler: float\n  noise: structured #") }, []string{"--runs", "30"}},
		{"float-iid-laplace", func(t *testing.T) string {
			return variant(t, append(laplace, structured, "  sampler: float\n  noise: iid-calibrated #")...)
		}, []string{"--runs", "20"}},
		{"none", func(t *testing.T) string { return variant(t, structured, "  noise: none #") }, []string{"--runs", "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", tc.scenario(t), "--seed", "23", "--log-level", "warn"}, tc.args...)
			goOut, jsOut := t.TempDir(), t.TempDir()
			code, _, stderr := runDpsim(t, 2*time.Minute, append(args, "--out", goOut)...)
			require.Equal(t, 0, code, stderr)
			code, _, stderr = runDpsim(t, 2*time.Minute, append(args, "--out", jsOut, "--role", "plant.0=node "+plantJS)...)
			require.Equal(t, 0, code, stderr)
			res, err := os.ReadFile(filepath.Join(jsOut, "procs", "plant-0.result.json"))
			require.NoError(t, err)
			require.Contains(t, string(res), `"status": "ok"`)

			want, got := readSummary(t, goOut), readSummary(t, jsOut)
			require.Equal(t, "ok", got.Status, got.Error)
			require.Empty(t, got.Problems)
			require.Equal(t, string(want.Metrics), string(got.Metrics), "summary.json metrics")
			wantTrace, err := os.ReadFile(filepath.Join(goOut, "trace.jsonl"))
			require.NoError(t, err)
			gotTrace, err := os.ReadFile(filepath.Join(jsOut, "trace.jsonl"))
			require.NoError(t, err)
			require.NotEmpty(t, wantTrace)
			require.True(t, bytes.Equal(wantTrace, gotTrace), "trace.jsonl differs")
			var leaves any
			require.NoError(t, json.Unmarshal(got.Metrics, &leaves))
			t.Logf("%d metrics and %d trace lines equal", countLeaves(leaves), bytes.Count(gotTrace, []byte("\n")))
		})
	}
}

// Both the plant and the cloud in JavaScript: every number of the loop comes from the two
// example programs, and they are still the Go run's.
func TestJSPlantWithJSCloud(t *testing.T) {
	plantJS := filepath.Join(jsRoleReady(t, "js-plant"), "plant.js")
	cloudJS := filepath.Join(jsRoleReady(t, "js-cloud"), "cloud.js")
	args := []string{"run", scenarioPath("cloud-vehicle"), "--seed", "5", "--runs", "24", "--log-level", "warn"}
	goOut, jsOut := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 2*time.Minute, append(args, "--out", goOut)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 2*time.Minute, append(args, "--out", jsOut, "--role", "plant.0=node "+plantJS, "--role", "cloud.0=node "+cloudJS)...)
	require.Equal(t, 0, code, stderr)
	want, got := readSummary(t, goOut), readSummary(t, jsOut)
	require.Equal(t, "ok", got.Status, got.Error)
	require.Equal(t, string(want.Metrics), string(got.Metrics), "summary.json metrics")
	wantTrace, err := os.ReadFile(filepath.Join(goOut, "trace.jsonl"))
	require.NoError(t, err)
	gotTrace, err := os.ReadFile(filepath.Join(jsOut, "trace.jsonl"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(wantTrace, gotTrace), "trace.jsonl differs")
}

// The JavaScript plant's arithmetic is the Go plant's on the paths a fault-free run never
// takes: a u(t) that does not come by the deadline (hold the newest u, or zero), an explicit
// x(0), other dimensions (nx = 3, nu = 2, ny = 2), a private model of three states with a
// full S, i.i.d. noise in two outputs. Both cores get the same deliveries and ticks; their
// trace lines must be equal byte for byte.
func TestJSPlantArithmetic(t *testing.T) {
	dir := jsRoleReady(t, "js-plant")
	dim3 := `name: dim3
kind: cloud-control
steps: 30
episodes: 3
seed: 18446744073709551557
plant:
  A: [[1, 0.1, 0], [0, 1, 0.1], [0, 0, 0.9]]
  B: [[0.005, 0], [0.1, 0.01], [0, 0.1]]
  C: [[1, 0, 0], [0, 0, 1]]
  x0: [0.25, -1.5, 3]
controller:
  K: [[1.5, 2.0, 0.1], [0.2, 0.3, 1.1]]
  L: [[0.5, 0.0], [0.3, 0.1], [0.0, 0.4]]
  reference: zero
faults:
  missing: {plant: MISSING}
privacy: {PRIVACY}
`
	plans := map[string]*plan.Plan{}
	for _, name := range []string{"cloud-vehicle", "cloud-vehicle-fullstate"} {
		_, plans[name] = dpsimtest.LoadPlan(t, name)
	}
	for name, v := range map[string][2]string{
		"dim3-secure-hold":      {"hold", "epsilon: 1, delta: 0.01"},
		"dim3-secure-zero":      {"zero", "epsilon: 1, delta: 0.01, adjacency: block"},
		"dim3-secure-laplace":   {"hold", "epsilon: 2, mechanism: laplace"},
		"dim3-float-iid":        {"zero", "epsilon: 1, delta: 0.01, noise: iid-calibrated, sampler: float"},
		"dim3-float-iid-lap":    {"hold", "epsilon: 1, mechanism: laplace, noise: iid-naive, sampler: float"},
		"dim3-secure-iid-model": {"hold", "epsilon: 1, delta: 0.01, noise: iid-calibrated, model: {A: [[1, 0], [0, 1]], C: [[1, 0], [0, 1]]}"},
	} {
		src := strings.NewReplacer("MISSING", v[0], "PRIVACY", v[1]).Replace(dim3)
		if strings.Contains(name, "model") { // a private model the plant embeds: its states x1, x2 (q = [1, 2])
			src = strings.NewReplacer("A: [[1, 0.1, 0], [0, 1, 0.1], [0, 0, 0.9]]", "A: [[1, 0, 0], [0.1, 1, 0], [0, 0, 1]]",
				"C: [[1, 0, 0], [0, 0, 1]]", "C: [[1, 1, 0], [0, 0, 1]]").Replace(src)
		}
		s, err := scenario.Parse([]byte(src), name)
		require.NoError(t, err)
		plans[name] = dpsimtest.PlanOf(t, s)
	}
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			var pf bytes.Buffer
			require.NoError(t, p.WriteFile(&pf, plan.KeepFor(endpoint.Plant, 0, 0)))
			planPath := filepath.Join(t.TempDir(), "plant-0.plan.json")
			require.NoError(t, os.WriteFile(planPath, pf.Bytes(), 0o600))
			seed := p.Scenario.Seed

			var want bytes.Buffer
			tw := trace.NewWriter[trace.ControlRecord](&want)
			c, err := sim.NewPlantCore(p, seed)
			require.NoError(t, err)
			nx, nu := p.System.Nx(), p.System.Nu()
			for ep := 0; ep < 3; ep++ {
				var x0 []float64
				if ep == 1 { // an explicit x(0), as the challenger gives
					x0 = make([]float64, nx)
					for i := range x0 {
						x0[i] = 0.125*float64(i+1) - 1.0/3
					}
				}
				require.NoError(t, c.Begin(ep, x0))
				for i := range c.Ready().Control {
					require.NoError(t, tw.Write(&c.Ready().Control[i]))
				}
				for st := 0; st < p.Steps; st++ {
					if (st+ep)%4 == 1 { // nothing came: the deadline
						require.NoError(t, c.Tick(st))
					} else {
						require.NoError(t, c.Deliver(&sim.Msg{From: sim.CloudEndpoint, ToAll: true, Episode: ep, Step: st, At: st, Values: arithmeticInput(st, nu)}))
					}
					for i := range c.Ready().Control {
						require.NoError(t, tw.Write(&c.Ready().Control[i]))
					}
				}
			}
			require.NoError(t, tw.Flush())

			cmd := exec.Command("node", "-e", jsPlantArithmetic, filepath.Join(dir, "plant.js"), planPath)
			got, err := cmd.Output()
			require.NoError(t, err, "node: %v", err)
			require.Equal(t, want.String(), string(got))
			t.Logf("%d trace lines equal", strings.Count(string(got), "\n"))
		})
	}
}

// jsPlantArithmetic is TestJSPlantArithmetic's driver of plant.js's core (node -e SCRIPT PLANTJS PLAN).
const jsPlantArithmetic = `
const fs = require('fs');
const { Core, Model, readPlan } = require(process.argv[1]);
const m = new Model(readPlan(fs.readFileSync(process.argv[2])));
const c = new Core(m, () => {});
let out = '';
for (let ep = 0; ep < 3; ep++) {
  let x0 = null;
  if (ep === 1) {
    x0 = new Float64Array(m.nx);
    for (let i = 0; i < m.nx; i++) x0[i] = 0.125 * (i + 1) - 1 / 3;
  }
  c.begin(ep, x0);
  for (let t = 0; t < m.T; t++) {
    if ((t + ep) % 4 === 1) {
      c.tick(t);
    } else {
      const v = [];
      for (let i = 0; i < m.nu; i++) v.push(((t * 7919 + i * 104729) % 1000) / 997 - 0.5);
      c.deliver({ ep, step: t, vals: v });
    }
  }
  out += c.records.join('');
}
process.stdout.write(out);
`

// The node:test suites of examples/js-plant: ChaCha8Rand and the float sampler against Go's
// math/rand/v2 (vectors/chacha8.json), the exact samplers and rounding against pkg/noise
// (vectors/exact.json).
func TestJSPlantVectors(t *testing.T) {
	dir := jsRoleReady(t, "js-plant")
	cmd := exec.Command("node", "--test", "test/")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "node --test:\n%s", out)
	require.Contains(t, string(out), "# fail 0")
	require.Contains(t, string(out), "# skipped 0", "a vector file is missing:\n%s", out)
}

// jsRoleReady returns examples/<name> once node can run it: its dependencies are installed from
// the lockfile (npm ci) when missing, under a lock the audit's test of the same example shares
// (dpsimtest.NodeExample). Without node the test is skipped, saying how to install it - but in
// CI (CI=true) it fails.
func jsRoleReady(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the JavaScript " + name + " runs real processes")
	}
	return dpsimtest.NodeExample(t, name)
}
