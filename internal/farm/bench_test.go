package farm_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/audit"
)

// BenchmarkDispatchScaling plays the vehicle's audit game through one worker process and through
// two (GOMAXPROCS=1 and one thread each), alternately, and reports both throughputs (trials/s)
// and their ratio (acceptance: >= 1.8 on 2 idle cores). The coordinators and their workers are
// started once; only the games are timed.
//
//	go test -run '^$' -bench DispatchScaling -benchtime 3x ./internal/farm
func BenchmarkDispatchScaling(b *testing.B) {
	f := load(b, "audit-vehicle-structured", true)
	const trials = 250000 // per value of the secret bit: 5e5 episodes, 489 chunks (about 3 s for one worker)
	var coords [2]*farm.Coordinator
	for i := range coords {
		cfg := farm.Config{Spawn: i + 1, SpawnThreads: 1, SpawnEnv: []string{"GOMAXPROCS=1"}}
		coords[i] = startB(b, f, cfg)
		defer coords[i].Close()
		if _, err := kinds.Audit(coords[i], context.Background(), 0, f.game, audit.GameOptions{}, 1, audit.ChunkTrials, nil); err != nil {
			b.Fatal(err) // warm up: the workers have joined and resolved a job
		}
	}
	var took, busy [2]time.Duration
	var self time.Duration
	b.ResetTimer()
	for n := range b.N {
		for _, i := range []int{n % 2, 1 - n%2} { // alternate which goes first
			start, cpu0, self0 := time.Now(), cpuOf(coords[i].Spawned()...), cpuOf(os.Getpid())
			if _, err := kinds.Audit(coords[i], context.Background(), 0, f.game, audit.GameOptions{}, uint64(n+2), trials, nil); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
			busy[i] += cpuOf(coords[i].Spawned()...) - cpu0
			self += cpuOf(os.Getpid()) - self0
		}
	}
	one := float64(2*trials*b.N) / took[0].Seconds()
	two := float64(2*trials*b.N) / took[1].Seconds()
	b.ReportMetric(one, "trials/s-1worker")
	b.ReportMetric(two, "trials/s-2workers")
	b.ReportMetric(two/one, "ratio")
	// Where the time goes: the workers' CPU per wall second (1 and 2 at best) and the
	// coordinator's (this process: its fold and the embedded server) over both.
	b.ReportMetric(busy[0].Seconds()/took[0].Seconds(), "cpu/s-1worker")
	b.ReportMetric(busy[1].Seconds()/took[1].Seconds(), "cpu/s-2workers")
	b.ReportMetric(self.Seconds()/(took[0]+took[1]).Seconds(), "cpu/s-coordinator")
}

// cpuOf is the CPU time (user + system) the processes used so far, from /proc (0 elsewhere).
func cpuOf(pids ...int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// the fields after the command name (which may hold spaces) start at state: utime is
		// the 12th of them, stime the 13th
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

func startB(b *testing.B, f *fixture, cfg farm.Config) *farm.Coordinator {
	b.Helper()
	cfg.Scenario, cfg.Source, cfg.Exe, cfg.Dir, cfg.Log = []byte(f.yaml), f.source, bin, b.TempDir(), zerolog.Nop()
	c, err := farm.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkDurableOverhead plays the vehicle's audit game through the plain farm (chunks leased
// over core NATS) and through the durable one (--dispatch-durable: chunks and answers through
// JetStream work queues, every accepted chunk journaled before it counts), two local workers
// each, alternately, and reports both throughputs (trials/s) and their ratio
// (durable / plain, over all rounds, and the lowest and highest round's). The coordinators and their workers are started once; only the games are
// timed, each on a new seed (a new job: the durable farm journals all its chunks).
//
//	go test -run '^$' -bench DurableOverhead -benchtime 6x ./internal/farm
func BenchmarkDurableOverhead(b *testing.B) {
	f := load(b, "audit-vehicle-structured", true)
	const trials = 100000 // per value of the secret bit: 2e5 trials, 49 chunks
	var coords [2]*farm.Coordinator
	for i := range coords {
		cfg := farm.Config{Spawn: 2}
		if i == 1 {
			cfg.Durable = b.TempDir()
		}
		coords[i] = startB(b, f, cfg)
		defer coords[i].Close()
		if _, err := kinds.Audit(coords[i], context.Background(), 0, f.game, audit.GameOptions{}, 1, audit.ChunkTrials, nil); err != nil {
			b.Fatal(err) // warm up: the workers have joined and resolved a job
		}
	}
	var took [2]time.Duration
	lo, hi := math.Inf(1), math.Inf(-1) // the rounds' ratios
	b.ResetTimer()
	for n := range b.N {
		var round [2]time.Duration
		for _, i := range []int{n % 2, 1 - n%2} { // alternate which goes first
			start := time.Now()
			if _, err := kinds.Audit(coords[i], context.Background(), 0, f.game, audit.GameOptions{}, uint64(n+2), trials, nil); err != nil {
				b.Fatal(err)
			}
			round[i] = time.Since(start)
			took[i] += round[i]
		}
		r := round[0].Seconds() / round[1].Seconds()
		lo, hi = min(lo, r), max(hi, r)
	}
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	plain := float64(2*trials*b.N) / took[0].Seconds()
	durable := float64(2*trials*b.N) / took[1].Seconds()
	b.ReportMetric(plain, "trials/s-plain")
	b.ReportMetric(durable, "trials/s-durable")
	b.ReportMetric(durable/plain, "ratio")
	// The journal's own cost, less at the mercy of the machine's load than the ratio: the time
	// the scheduler waited for JetStream to store a record, per record and as a share of the
	// durable farm's wall time (the warm-up's records included).
	spent, writes := coords[1].JournalSpent()
	b.ReportMetric(float64(spent.Microseconds())/float64(max(writes, 1)), "journal-us/chunk")
	b.ReportMetric(spent.Seconds()/took[1].Seconds(), "journal-share")
	// The same for putting the chunks in the work queue.
	put, puts := coords[1].QueueSpent()
	b.ReportMetric(float64(put.Microseconds())/float64(max(puts, 1)), "queue-us/chunk")
	b.ReportMetric(put.Seconds()/took[1].Seconds(), "queue-share")
}
