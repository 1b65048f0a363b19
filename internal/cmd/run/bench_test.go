package run_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cmd/role"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The raw request-reply baseline runs as two OS processes (this test binary re-executed), like
// the plant and the cloud, so the comparison prices the same process boundaries.
const (
	benchRoleEnv = "DPSIM_BENCH_RR_ROLE" // responder | requester
	benchURLEnv  = "DPSIM_BENCH_RR_URL"
	benchNEnv    = "DPSIM_BENCH_RR_N"
	rrSubject    = "bench.rr"
)

// rawRole is the main of a raw request-reply process: the responder echoes; the requester
// makes N round trips and prints the rate (round trips per second).
func rawRole(role, url string) int {
	nc, err := nats.Connect(url, nats.Name("bench-"+role))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	switch role {
	case "responder":
		if _, err := nc.Subscribe(rrSubject, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			return 1
		}
		_ = nc.Flush()
		fmt.Println("ready")
		time.Sleep(10 * time.Minute) // killed by the benchmark
		return 0
	case "requester":
		n, _ := strconv.Atoi(os.Getenv(benchNEnv))
		payload := make([]byte, 8)
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := nc.Request(rrSubject, payload, 5*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		fmt.Println(float64(n) / time.Since(start).Seconds())
		return 0
	}
	return 2
}

// rawCrossProcess runs n round trips between a requester and a responder process over the
// server at url, both with GOMAXPROCS=procs (0: default), and returns round trips per second.
func rawCrossProcess(b *testing.B, url string, n, procs int) float64 {
	env := append(os.Environ(), benchURLEnv+"="+url, benchNEnv+"="+strconv.Itoa(n))
	if procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	rsp := exec.Command(os.Args[0])
	rsp.Env = append(env, benchRoleEnv+"=responder")
	out, err := rsp.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, rsp.Start())
	defer func() { _ = rsp.Process.Kill(); _ = rsp.Wait() }()
	buf := make([]byte, 6)
	_, err = out.Read(buf) // "ready"
	require.NoError(b, err)
	req := exec.Command(os.Args[0])
	req.Env = append(env, benchRoleEnv+"=requester")
	res, err := req.Output()
	require.NoError(b, err)
	rate, err := strconv.ParseFloat(strings.TrimSpace(string(res)), 64)
	require.NoError(b, err)
	return rate
}

// rawInProcess is the same loop with both clients in this process (pkg/bus's baseline).
func rawInProcess(b *testing.B, url string, n int) float64 {
	req, err := nats.Connect(url, nats.Name("bench-requester"))
	require.NoError(b, err)
	defer req.Close()
	rsp, err := nats.Connect(url, nats.Name("bench-responder"))
	require.NoError(b, err)
	defer rsp.Close()
	_, err = rsp.Subscribe(rrSubject, func(m *nats.Msg) { _ = m.Respond(m.Data) })
	require.NoError(b, err)
	require.NoError(b, rsp.Flush())
	payload := make([]byte, 8)
	start := time.Now()
	for i := 0; i < n; i++ {
		_, err := req.Request(rrSubject, payload, 5*time.Second)
		require.NoError(b, err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// inProcessRoles runs the plant, cloud and eavesdropper role loops (the same code as the
// processes: role.RunPlant, ...) as goroutines of this process, each with its own NATS
// connection, driven by a launch.Session in attach mode; it returns the plant's steps/s.
func inProcessRoles(b *testing.B, url string, runs int, id string) float64 {
	path := scenarioPath("cloud-vehicle")
	_, p, err := roleproc.LoadPoint(path, 0)
	require.NoError(b, err)
	dir := b.TempDir()
	common := []string{"--nats-url", url, "--run", id, "--scenario", path, "--out", dir, "--log-level", "warn"}
	errs := make(chan error, 3)
	for _, r := range []func([]string, io.Writer, io.Writer) error{role.RunPlant, role.RunCloud, role.RunEavesdropper} {
		go func() { errs <- r(common, io.Discard, io.Discard) }()
	}
	sess, err := launch.StartSession(context.Background(), launch.SessionConfig{Attach: true, Plan: p, Seeds: sim.NewSeeds(53), URL: url,
		Run: id, Dir: dir, Timeout: 10 * time.Second, Mode: wire.Lockstep})
	require.NoError(b, err)
	for ep := 0; ep < runs; ep++ {
		require.NoError(b, sess.Episode(context.Background(), ep, nil))
	}
	require.NoError(b, sess.Stop())
	for range 3 {
		require.NoError(b, <-errs)
	}
	res, err := contract.ReadResultFile(filepath.Join(dir, contract.ResultFile("plant-0")), id)
	require.NoError(b, err)
	return res.StepsPerSec
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLockstepPlantCloud measures the full multi-process lockstep loop - `dpsim run
// cloud-vehicle` with the plant, cloud and eavesdropper as OS processes over an embedded
// server - in the same benchmark as a raw NATS request-reply loop on the same server. One op
// is one plant<->cloud step (episodes of T = 100 steps). The work is split into 3 rounds;
// each round runs the raw loop and then dpsim for b.N/3 steps, so both see the same machine
// load, and the medians are reported:
//
//   - raw-xproc-rr/s: request-reply between two OS processes (GOMAXPROCS=1, as the roles)
//
//   - raw-inproc-rr/s: both clients in the test process (the baseline of pkg/bus's benchmark)
//
//   - plant-steps/s: steps / wall time inside episodes, measured by the plant process
//
//   - launcher-steps/s: as seen by the launcher, including the per-episode ctl barrier
//
//   - ratio: plant-steps/s over raw-xproc-rr/s, per round, median (target >= 0.5)
//
//   - inproc-roles-steps/s: the same role loops as goroutines of one process (each with its
//     own connection; role.RunPlant etc. driven by launch.Session in attach mode)
//
//   - inproc-ratio: inproc-roles-steps/s over raw-inproc-rr/s (the comparison of pkg/bus)
//
//   - MB-plant, MB-cloud, MB-eve: peak RSS of each role process (target < 50 MB)
//
//     go test ./internal/cmd/run -run '^$' -bench LockstepPlantCloud -benchtime 9000x
func BenchmarkLockstepPlantCloud(b *testing.B) {
	srv := server(b)
	const rounds = 3
	per := max(100, b.N/rounds)
	runs := (per + 99) / 100
	var xproc, inproc, plantRate, launcherRate, ratio, inRoles, inRatio []float64
	var rss [3]float64
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		b.StopTimer()
		x := rawCrossProcess(b, srv.URL(), runs*100, 1)
		in := rawInProcess(b, srv.URL(), runs*100)
		roles := inProcessRoles(b, srv.URL(), runs, fmt.Sprintf("inproc%d", r))
		inRoles, inRatio = append(inRoles, roles), append(inRatio, roles/in)
		dir := b.TempDir()
		b.StartTimer()
		code, _, stderr := runDpsim(b, 10*time.Minute, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--no-sign",
			"--runs", fmt.Sprint(runs), "--out", dir, "--log-level", "warn", "--run-id", fmt.Sprintf("bench%d", r))
		b.StopTimer()
		require.Equal(b, 0, code, stderr)
		sum := readSummary(b, dir)
		plant := sum.proc(b, "plant-0")
		xproc, inproc = append(xproc, x), append(inproc, in)
		plantRate = append(plantRate, plant.StepsPerSec)
		launcherRate = append(launcherRate, sum.Timing["steps_per_sec"].(float64))
		ratio = append(ratio, plant.StepsPerSec/x)
		for i, name := range []string{"plant-0", "cloud-0", "eavesdropper-0"} {
			rss[i] = max(rss[i], float64(sum.proc(b, name).MaxRSSBytes)/(1<<20))
		}
	}
	b.ReportMetric(median(xproc), "raw-xproc-rr/s")
	b.ReportMetric(median(inproc), "raw-inproc-rr/s")
	b.ReportMetric(median(plantRate), "plant-steps/s")
	b.ReportMetric(median(launcherRate), "launcher-steps/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(inRoles), "inproc-roles-steps/s")
	b.ReportMetric(median(inRatio), "inproc-ratio")
	b.ReportMetric(rss[0], "MB-plant")
	b.ReportMetric(rss[1], "MB-cloud")
	b.ReportMetric(rss[2], "MB-eve")
}

// consensusScenario writes a consensus scenario of n agents on a random d-regular graph.
func consensusScenario(tb testing.TB, n, d, steps, runs int) string {
	x0 := make([]string, n)
	for i := range x0 {
		x0[i] = fmt.Sprint((i*37)%200 - 100)
	}
	yaml := fmt.Sprintf(`name: bench-consensus-%d
kind: consensus
steps: %d
episodes: %d
seed: 7
graph: {name: random-regular, n: %d, degree: %d, seed: 1}
x0: [%s]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured}
`, n, steps, runs, n, d, strings.Join(x0, ", "))
	path := filepath.Join(tb.TempDir(), "consensus.yaml")
	require.NoError(tb, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

// BenchmarkConsensus100 runs 100 consensus agents on a random 4-regular graph in 4 agent
// processes (25 agents each, `--agents-per-process 25`, one message per process per step) plus
// the eavesdropper, over an embedded server. One op is one network step. Target >= 500 steps/s.
//
//   - steps/s: network steps / wall time inside episodes, the slowest agent process
//
//   - launcher-steps/s: as seen by the launcher, including the per-episode ctl barrier
//
//   - MB-agents-max, MB-eve, MB-launcher: peak RSS (target < 50 MB per process)
//
//     go test ./internal/cmd/run -run '^$' -bench 'Consensus100$' -benchtime 3000x
func BenchmarkConsensus100(b *testing.B) { benchConsensus(b, 100, 100) }

// BenchmarkConsensus1000 is BenchmarkConsensus100 with 1,000 agents (250 per process; target
// >= 200 steps/s) and BenchmarkConsensus10000 with 10,000 (2,500 per process; target >= 20
// steps/s, < 200 MB per process).
//
//	go test ./internal/cmd/run -run '^$' -bench 'Consensus1000$' -benchtime 1000x
//	go test ./internal/cmd/run -run '^$' -bench 'Consensus10000$' -benchtime 200x
func BenchmarkConsensus1000(b *testing.B) { benchConsensus(b, 1000, 200) }

// BenchmarkConsensus10000: see BenchmarkConsensus1000.
func BenchmarkConsensus10000(b *testing.B) { benchConsensus(b, 10000, 200) }

// benchConsensus runs n agents in 4 processes, episodes of steps steps, b.N network steps in all.
func benchConsensus(b *testing.B, n, steps int) {
	srv := server(b)
	runs := max(1, (b.N+steps-1)/steps)
	path := consensusScenario(b, n, 4, steps, runs)
	dir := b.TempDir()
	b.ResetTimer()
	code, _, stderr := runDpsim(b, 20*time.Minute, "run", path, "--nats-url", srv.URL(), "--no-sign", "--out", dir,
		"--agents-per-process", fmt.Sprint(n/4), "--log-level", "warn", "--transcript=false", "--trace-episodes", "0")
	b.StopTimer()
	require.Equal(b, 0, code, stderr)
	sum := readSummary(b, dir)
	require.Len(b, sum.Processes, 5)
	slowest, rss := 0.0, int64(0)
	for _, p := range sum.Processes {
		if p.Role == "agent" {
			if slowest == 0 || p.StepsPerSec < slowest {
				slowest = p.StepsPerSec
			}
			rss = max(rss, p.MaxRSSBytes)
		}
	}
	b.ReportMetric(slowest, "steps/s")
	b.ReportMetric(sum.Timing["steps_per_sec"].(float64), "launcher-steps/s")
	b.ReportMetric(float64(rss)/(1<<20), "MB-agents-max")
	b.ReportMetric(float64(sum.proc(b, "eavesdropper-0").MaxRSSBytes)/(1<<20), "MB-eve")
	b.ReportMetric(float64(sum.LauncherMaxRSSBytes)/(1<<20), "MB-launcher")
}

// BenchmarkLockstepInjector measures what the fault injector costs on the NATS path when no
// fault is configured: the lockstep cloud-vehicle loop as real processes without a faults:
// section, against the same scenario with a rule on every link that does nothing (so every
// message asks the injector for its fate), in alternating rounds; ratio = idle / clean plant
// steps/s, median over the rounds (target >= 0.95).
//
//	go test ./internal/cmd/run -run '^$' -bench LockstepInjector -benchtime 3x
func BenchmarkLockstepInjector(b *testing.B) {
	srv := server(b)
	clean := scenarioPath("cloud-vehicle")
	src, err := os.ReadFile(clean)
	require.NoError(b, err)
	idle := filepath.Join(b.TempDir(), "idle.yaml")
	require.NoError(b, os.WriteFile(idle, append(src, []byte("\nfaults:\n  links:\n    - {name: idle, drop: 0}\n")...), 0o644))
	const runs = 30
	var ratios, cleanRates, idleRates []float64
	for i := 0; i < b.N; i++ {
		var rate [2]float64
		for k, path := range []string{clean, idle} {
			dir := b.TempDir()
			code, _, stderr := runDpsim(b, 5*time.Minute, "run", path, "--nats-url", srv.URL(), "--no-sign", "--runs", fmt.Sprint(runs),
				"--out", dir, "--log-level", "warn", "--run-id", fmt.Sprintf("inj%d-%d", i, k), "--trace-episodes", "0")
			require.Equal(b, 0, code, stderr)
			rate[k] = readSummary(b, dir).proc(b, "plant-0").StepsPerSec
		}
		cleanRates, idleRates = append(cleanRates, rate[0]), append(idleRates, rate[1])
		ratios = append(ratios, rate[1]/rate[0])
	}
	b.ReportMetric(median(cleanRates), "clean-steps/s")
	b.ReportMetric(median(idleRates), "idle-rule-steps/s")
	b.ReportMetric(median(ratios), "ratio")
}

// BenchmarkLockstepSecure compares the lockstep plant<->cloud loop on a plain server (an
// external one without users or TLS: what every run used before) with the launcher's own
// server with per-role permissions and --tls auto. Rounds alternate; medians are reported:
//
//   - plain-steps/s, secure-steps/s: steps / wall time inside episodes (the plant's)
//
//   - ratio: secure over plain, per round (target >= 0.8)
//
//   - signed-steps/s, signed-ratio: the same with --sign (every data message signed and
//     verified), and its ratio to plain
//
//     go test ./internal/cmd/run -run '^$' -bench LockstepSecure -benchtime 9000x
func BenchmarkLockstepSecure(b *testing.B) {
	srv := server(b)
	const rounds = 3
	runs := max(1, b.N/rounds/100)
	var plain, secure, ratio, signed, signRatio []float64
	rate := func(extra ...string) float64 {
		dir := b.TempDir()
		args := append([]string{"run", scenarioPath("cloud-vehicle"), "--runs", fmt.Sprint(runs), "--out", dir, "--log-level", "warn",
			"--trace-episodes", "1"}, extra...)
		code, _, stderr := runDpsim(b, 10*time.Minute, args...)
		require.Equal(b, 0, code, stderr)
		return readSummary(b, dir).proc(b, "plant-0").StepsPerSec
	}
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		p := rate("--nats-url", srv.URL(), "--no-sign") // plain: no permissions, no TLS, unsigned
		s := rate("--tls", "auto")
		g := rate("--tls", "auto", "--sign")
		plain, secure, ratio = append(plain, p), append(secure, s), append(ratio, s/p)
		signed, signRatio = append(signed, g), append(signRatio, g/p)
	}
	b.ReportMetric(median(signed), "signed-steps/s")
	b.ReportMetric(median(signRatio), "signed-ratio")
	b.ReportMetric(median(plain), "plain-steps/s")
	b.ReportMetric(median(secure), "secure-steps/s")
	b.ReportMetric(median(ratio), "ratio")
}

// inflightRun runs `dpsim run` of the scenario at path (lockstep) over the server at url with k
// episodes in flight and returns its plant steps per second - T * episodes / the launcher's
// wall time inside episodes (summary.json timing.steps_per_sec: every episode's plant steps,
// whatever runs at once) - and over the whole run (T * episodes / its wall time, process
// start-up, the last collection and the stop included).
func inflightRun(b *testing.B, url, path string, runs, k int, id string) (stepsPerSec, runStepsPerSec float64) {
	dir := b.TempDir()
	start := time.Now()
	code, _, stderr := runDpsim(b, 10*time.Minute, "run", path, "--nats-url", url, "--no-sign", "--runs", fmt.Sprint(runs),
		"--out", dir, "--log-level", "warn", "--run-id", id, "--trace-episodes", "0", "--inflight", fmt.Sprint(k))
	wall := time.Since(start).Seconds()
	require.Equal(b, 0, code, stderr)
	sum := readSummary(b, dir)
	return sum.Timing["steps_per_sec"].(float64), float64(runs*sum.Steps) / wall
}

// benchInflightKs are the K measured by BenchmarkInflight: 1, launch.DefaultInflight and those
// of $DPSIM_BENCH_INFLIGHT (e.g. "16,32,64"), in that order.
func benchInflightKs(b *testing.B) []int {
	ks := []int{1, launch.DefaultInflight}
	for _, f := range strings.FieldsFunc(os.Getenv("DPSIM_BENCH_INFLIGHT"), func(r rune) bool { return r == ',' || r == ' ' }) {
		k, err := strconv.Atoi(f)
		require.NoError(b, err, "DPSIM_BENCH_INFLIGHT")
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// BenchmarkInflight measures episodes in flight: the vehicle (T = 100) in lockstep over NATS -
// plant, cloud and eavesdropper as OS processes on an embedded server - playing b.N episodes
// (the acceptance's shape: 500) with K = 1 and with the default K (launch.DefaultInflight), and
// with every K of $DPSIM_BENCH_INFLIGHT, one after the other in each of 2 rounds so that every
// K sees the same machine load. Medians over the rounds:
//
//   - K1-steps/s, K<default>-steps/s, ...: plant steps per second (T * episodes / the
//     launcher's wall time inside episodes)
//
//   - K1-run-steps/s, ...: the same over the whole `dpsim run` (start-up and stop included);
//     run-ratio: the default K's over K = 1's
//
//   - ratio: the default K's over K = 1's, per round (target >= 10)
//
//   - K<k>-ratio: the same for each K of $DPSIM_BENCH_INFLIGHT
//
//     go test ./internal/cmd/run -run '^$' -bench Inflight -benchtime 500x
//     DPSIM_BENCH_INFLIGHT=16,32,64 go test ./internal/cmd/run -run '^$' -bench Inflight -benchtime 500x
func BenchmarkInflight(b *testing.B) {
	srv := server(b)
	const rounds = 2
	ks := benchInflightKs(b)
	rates, runRates := make([][]float64, len(ks)), make([][]float64, len(ks))
	ratios, runRatios := make([][]float64, len(ks)), make([][]float64, len(ks))
	b.ResetTimer()
	for r := range rounds {
		for i, k := range ks {
			rate, runRate := inflightRun(b, srv.URL(), scenarioPath("cloud-vehicle"), b.N, k, fmt.Sprintf("inflight%d-%d", r, k))
			rates[i], runRates[i] = append(rates[i], rate), append(runRates[i], runRate)
			ratios[i], runRatios[i] = append(ratios[i], rate/rates[0][r]), append(runRatios[i], runRate/runRates[0][r])
		}
	}
	for i, k := range ks {
		b.ReportMetric(median(rates[i]), fmt.Sprintf("K%d-steps/s", k))
		b.ReportMetric(median(runRates[i]), fmt.Sprintf("K%d-run-steps/s", k))
		if i >= 2 {
			b.ReportMetric(median(ratios[i]), fmt.Sprintf("K%d-ratio", k))
		}
	}
	b.ReportMetric(median(ratios[1]), "ratio")
	b.ReportMetric(median(runRatios[1]), "run-ratio")
}

// BenchmarkSweepOverNATS measures scenarios/cloud-vehicle-sweep.yaml (21 points, each with its
// own plant, cloud and eavesdropper processes) over NATS with the default episodes in flight
// against --engine fast, alternating, with $DPSIM_BENCH_SWEEP_RUNS episodes per point (default
// 50, so that one iteration takes well under a minute; the scenario has 500). Medians:
//
//   - nats-s, fast-s: the wall time of the whole `dpsim run` (start-up, every point, outputs)
//   - ratio: nats-s over fast-s, per iteration (target <= 10 at the scenario's 500 runs)
//
// At a reduced runs count each point's fixed cost over NATS (spawning and connecting its three
// processes, about 0.2-0.5 s) weighs more than at 500, so the ratio measured is above that of
// the full sweep.
//
//	go test ./internal/cmd/run -run '^$' -bench SweepOverNATS -benchtime 1x
//	DPSIM_BENCH_SWEEP_RUNS=500 go test ./internal/cmd/run -run '^$' -bench SweepOverNATS -benchtime 1x
func BenchmarkSweepOverNATS(b *testing.B) {
	runs := 50
	if s := os.Getenv("DPSIM_BENCH_SWEEP_RUNS"); s != "" {
		var err error
		runs, err = strconv.Atoi(s)
		require.NoError(b, err, "DPSIM_BENCH_SWEEP_RUNS")
	}
	path := scenarioPath("cloud-vehicle-sweep")
	wall := func(engine string) float64 {
		dir := b.TempDir()
		start := time.Now()
		code, _, stderr := runDpsim(b, 30*time.Minute, "run", path, "--engine", engine, "--runs", fmt.Sprint(runs), "--out", dir, "--log-level", "warn")
		require.Equal(b, 0, code, stderr)
		return time.Since(start).Seconds()
	}
	var nats, fast, ratio []float64
	for b.Loop() {
		n, f := wall("nats"), wall("fast")
		nats, fast, ratio = append(nats, n), append(fast, f), append(ratio, n/f)
	}
	b.ReportMetric(median(nats), "nats-s")
	b.ReportMetric(median(fast), "fast-s")
	b.ReportMetric(median(ratio), "ratio")
}
