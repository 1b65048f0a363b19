package sim

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
)

// recordLog keeps every record a driver's sink sees, as JSON lines, in order.
type recordLog struct{ lines []string }

func (l *recordLog) sink(_ Core, rd *Ready) error {
	add := func(v any) {
		b, _ := json.Marshal(v)
		l.lines = append(l.lines, string(b))
	}
	for i := range rd.Control {
		add(&rd.Control[i])
	}
	for i := range rd.Agent {
		add(&rd.Agent[i])
	}
	for i := range rd.Blocks {
		add(&rd.Blocks[i])
	}
	for i := range rd.Consensus {
		add(&rd.Consensus[i])
	}
	return nil
}

// TestDriverStepsEqualEpisode drives episodes through the step-wise API (Begin, Release,
// Deadline, Deliver, TickDue, Done) and through Episode, over the in-memory network with and
// without link faults: the records are the same, line for line.
func TestDriverStepsEqualEpisode(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "faults-vehicle-latency", "faults-consensus-loss"} {
		t.Run(name, func(t *testing.T) {
			s := load(t, name)
			pt := s.Expand()[0]
			p := planOf(t, pt)
			run := func(steps bool) []string {
				cores, err := NewCores(p, s.Seed)
				require.NoError(t, err)
				inj, err := fault.New(&pt.Faults, 7)
				require.NoError(t, err)
				net := NewNetwork(NewTopology(p, Blocks{}), cores, inj)
				var log recordLog
				drv := NewDriver(cores, net, nil, log.sink)
				for ep := range 3 {
					net.Begin(ep)
					if !steps {
						require.NoError(t, drv.Episode(ep, nil, nil))
						continue
					}
					require.NoError(t, drv.Begin(ep, nil))
					for !drv.Done() {
						require.NoError(t, drv.Release())
						m, err := net.Recv(drv.Deadline())
						if errors.Is(err, ErrIdle) {
							require.NoError(t, drv.TickDue())
							continue
						}
						require.NoError(t, err)
						require.NoError(t, drv.Deliver(m))
					}
				}
				return log.lines
			}
			want := run(false)
			require.NotEmpty(t, want)
			require.Equal(t, want, run(true))
		})
	}
}
