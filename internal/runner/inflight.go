package runner

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/wire"
)

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
