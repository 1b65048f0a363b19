// The file is not named example_js_test.go: a _js suffix would make it build for GOOS=js only.

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
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The cloud of examples/js-cloud, in JavaScript, stands in for `dpsim cloud`: a run with it
// has the Go cloud's metrics and merged trace bit for bit, for the same seed, with episodes
// in flight or one at a time, in either encoding. It runs as a user would run it: --role starts
// node in place of the Go cloud.
func TestJSCloudBitForBit(t *testing.T) {
	dir := jsCloudReady(t)
	cloudJS := filepath.Join(dir, "cloud.js")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inflight-32", []string{"--runs", "40", "--inflight", "32"}}, // a group of 32, then one of 8
		{"inflight-1", []string{"--runs", "12", "--inflight", "1"}},
		// binary messages, and traces bounded to 10 episodes: the cloud cuts its trace back
		{"binary", []string{"--runs", "40", "--inflight", "16", "--encoding", "binary", "--trace-episodes", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", scenarioPath("cloud-vehicle"), "--seed", "23", "--log-level", "warn"}, tc.args...)
			goOut, jsOut := t.TempDir(), t.TempDir()
			code, _, stderr := runDpsim(t, 2*time.Minute, append(args, "--out", goOut)...)
			require.Equal(t, 0, code, stderr)
			// as a user runs it: the launcher starts node in place of its own cloud (--role)
			code, _, stderr = runDpsim(t, 2*time.Minute, append(args, "--out", jsOut, "--role", "cloud.0=node "+cloudJS)...)
			require.Equal(t, 0, code, stderr)
			res, err := os.ReadFile(filepath.Join(jsOut, "procs", "cloud-0.result.json"))
			require.NoError(t, err)
			require.Contains(t, string(res), `"status": "ok"`)

			want, got := readSummary(t, goOut), readSummary(t, jsOut)
			require.Equal(t, "ok", got.Status, got.Error)
			require.Equal(t, string(want.Metrics), string(got.Metrics), "summary.json metrics")
			var leaves any
			require.NoError(t, json.Unmarshal(got.Metrics, &leaves))
			wantTrace, err := os.ReadFile(filepath.Join(goOut, "trace.jsonl"))
			require.NoError(t, err)
			gotTrace, err := os.ReadFile(filepath.Join(jsOut, "trace.jsonl"))
			require.NoError(t, err)
			require.NotEmpty(t, wantTrace)
			require.True(t, bytes.Equal(wantTrace, gotTrace), "trace.jsonl differs")
			t.Logf("%d metrics and %d trace lines equal", countLeaves(leaves), bytes.Count(gotTrace, []byte("\n")))
		})
	}
}

// The JavaScript cloud's arithmetic is the Go cloud's on the paths a fault-free run rarely
// takes too: a yhat(t) that does not come by the deadline (the prediction C xhat(t)), other
// dimensions, the step, constant and zero references and a -0 in the trace. Both cores are
// fed the same deliveries and ticks; their trace lines must be equal byte for byte.
func TestJSCloudArithmetic(t *testing.T) {
	dir := jsCloudReady(t)
	dim3 := `name: dim3
kind: cloud-control
steps: 30
episodes: 2
seed: 5
plant:
  A: [[1, 0.1, 0], [0, 1, 0.1], [0, 0, 0.9]]
  B: [[0.005, 0], [0.1, 0.01], [0, 0.1]]
  C: [[1, 0, 0], [0, 0, 1]]
controller:
  K: [[1.5, 2.0, 0.1], [0.2, 0.3, 1.1]]
  L: [[0.5, 0.0], [0.3, 0.1], [0.0, 0.4]]
  reference: REF
privacy: {epsilon: 1, delta: 0.01, noise: iid-calibrated, sampler: float} # a 3-state model the secure i.i.d. sampler refuses; the cloud is the same
`
	plans := map[string]*plan.Plan{}
	for _, name := range []string{"cloud-vehicle", "cloud-vehicle-lqr"} {
		_, plans[name] = dpsimtest.LoadPlan(t, name)
	}
	for name, ref := range map[string]string{"step": "{step: {before: [0, 0, 0], after: [1, 0.5, -1], at: 7}}",
		"constant": "[0.25, -1e-7, 3e22]", "zero": "zero"} {
		s, err := scenario.Parse([]byte(strings.Replace(dim3, "REF", ref, 1)), name)
		require.NoError(t, err)
		plans["dim3-"+name] = dpsimtest.PlanOf(t, s)
	}
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			var pf bytes.Buffer
			require.NoError(t, p.WriteFile(&pf, plan.KeepNothing))
			planPath := filepath.Join(t.TempDir(), "cloud-0.plan.json")
			require.NoError(t, os.WriteFile(planPath, pf.Bytes(), 0o600))

			var want bytes.Buffer
			tw := trace.NewWriter[trace.ControlRecord](&want)
			c, err := sim.NewCloudCore(p)
			require.NoError(t, err)
			for ep := 0; ep < 2; ep++ {
				require.NoError(t, c.Begin(ep, nil))
				for st := 0; st < p.Steps; st++ {
					if (st+ep)%3 == 1 { // nothing came: the deadline
						require.NoError(t, c.Tick(st))
					} else {
						require.NoError(t, c.Deliver(&sim.Msg{From: sim.PlantEndpoint, ToAll: true, Episode: ep, Step: st, At: st, Values: arithmeticInput(st, p.System.Ny())}))
					}
					for i := range c.Ready().Control {
						require.NoError(t, tw.Write(&c.Ready().Control[i]))
					}
				}
			}
			require.NoError(t, tw.Flush())

			cmd := exec.Command("node", "-e", jsArithmetic, filepath.Join(dir, "cloud.js"), planPath)
			got, err := cmd.Output()
			require.NoError(t, err, "node: %v", err)
			require.Equal(t, want.String(), string(got))
		})
	}
}

// arithmeticInput is yhat(t): exact in both languages (a division, correctly rounded in both).
func arithmeticInput(t, ny int) []float64 {
	v := make([]float64, ny)
	for i := range v {
		v[i] = float64((t*7919+i*104729)%1000)/997 - 0.5
	}
	return v
}

// jsArithmetic is TestJSCloudArithmetic's driver of cloud.js's core (node -e SCRIPT CLOUDJS PLAN).
const jsArithmetic = `
const fs = require('fs');
const { Core, Model, readPlan } = require(process.argv[1]);
const m = new Model(readPlan(fs.readFileSync(process.argv[2])));
const c = new Core(m, () => {});
let out = '';
for (let ep = 0; ep < 2; ep++) {
  c.begin(ep);
  for (let t = 0; t < m.T; t++) {
    if ((t + ep) % 3 === 1) {
      c.tick(t);
    } else {
      const v = [];
      for (let i = 0; i < m.ny; i++) v.push(((t * 7919 + i * 104729) % 1000) / 997 - 0.5);
      c.deliver({ ep, step: t, vals: v });
    }
  }
  out += c.records.join('');
}
process.stdout.write(out);
`

// jsCloudReady returns the example's directory once node can run it: its dependencies are
// installed from the lockfile (npm ci) when missing (dpsimtest.NodeExample). Without node the
// test is skipped, saying how to install it - but in CI (CI=true), where .ci/run installs it, it
// fails.
func jsCloudReady(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the JavaScript cloud runs real processes")
	}
	return dpsimtest.NodeExample(t, "js-cloud")
}

func countLeaves(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 0
		for _, e := range x {
			n += countLeaves(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countLeaves(e)
		}
		return n
	}
	return 1
}
