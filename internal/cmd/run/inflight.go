package run

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/wire"
)

// inflightHelp is the help of --inflight.
const inflightHelp = "episodes kept in flight at once over the same role processes (1.." +
	"1024): each process runs one set of cores per episode in flight and, where no per-message fault applies, " +
	"sends one message per step for all of them, so a lockstep step's messaging cost is shared by K episodes; " +
	"results do not depend on K (every episode has its own random streams and cores). An episode with a " +
	"process crash, a server restart or a proxy reset scheduled in it runs alone (summary.json inflight says " +
	"how many and why). Realtime mode keeps 1 (more is refused there). The lockstep default (128) was measured: " +
	"the vehicle's whole run (500 episodes) 0.50-0.53 s at K=128 against 0.62-0.66 s at K=32, the 21-point " +
	"cloud-vehicle-sweep 8.0 s against 10.5 s (K=256: 8.1 s); consensus agent hosts get 128 / agents per process " +
	"(at least 1), so each process holds about 128 cores"

// resolveInflight fixes the episodes in flight once the time mode is known: --inflight, else
// in lockstep launch.DefaultInflightFor the points' processes (the smallest over a sweep), and
// 1 in realtime, where the processes keep one episode on the wall-clock grid at a time.
func (l *launcher) resolveInflight() error {
	o := l.o
	if o.Mode != wire.Realtime {
		if !o.InflightSet {
			for _, p := range l.plans {
				o.Inflight = min(o.Inflight, launch.DefaultInflightFor(p, o.AgentsPerProcess))
			}
		}
		return nil
	}
	if o.InflightSet && o.Inflight > 1 {
		return cli.UsageError("--inflight %d: realtime mode keeps one episode in flight (its steps follow the wall clock); drop --inflight or use --mode lockstep", o.Inflight)
	}
	o.Inflight = 1
	return nil
}

// noteInflight adds a played point's grouping to the summary.
func (l *launcher) noteInflight(c record.InflightCounts) {
	s := l.sum.Inflight
	if s == nil {
		s = &record.InflightSummary{Asked: l.o.Inflight, Used: l.o.Inflight}
		l.sum.Inflight = s
	}
	s.Merge(c)
}
