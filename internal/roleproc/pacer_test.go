package roleproc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The pacer's release times and deadlines: lockstep releases at once and waits --timeout after
// the last progress; realtime releases the plant's and the agents' step k at the tick
// t_k = t0 + k Ts, the cloud's at once, and every step waits until the next tick (the
// eavesdropper, whom nobody waits for, a grace of --timeout + the grid lead + Ts more).
func TestPacer(t *testing.T) {
	const period, timeout = 10 * time.Millisecond, time.Second
	t0 := time.Unix(1700000000, 0)
	since := t0.Add(123 * time.Millisecond)
	for _, tc := range []struct {
		name     string
		mode     wire.Mode
		role     endpoint.Role
		release  time.Time // of step 3 (zero: at once)
		deadline time.Time // of step 3, the core having last progressed at since
		observed int       // clock steps observed after one late release
		overruns int
	}{
		{"lockstep plant", wire.Lockstep, endpoint.Plant, time.Time{}, since.Add(timeout), 1, 0},
		{"lockstep cloud", wire.Lockstep, endpoint.Cloud, time.Time{}, since.Add(timeout), 1, 0},
		{"realtime plant", wire.Realtime, endpoint.Plant, t0.Add(3 * period), t0.Add(4 * period), 1, 1},
		{"realtime agent", wire.Realtime, endpoint.Agent, t0.Add(3 * period), t0.Add(4 * period), 1, 1},
		{"realtime cloud", wire.Realtime, endpoint.Cloud, time.Time{}, t0.Add(4 * period), 0, 0},
		{"realtime eavesdropper", wire.Realtime, endpoint.Eavesdropper, t0.Add(3 * period),
			t0.Add(4*period + timeout + contract.GridLead + period), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, err := NewClock(Timing{Mode: tc.mode, Period: period, StepTimeout: timeout}, nil)
			require.NoError(t, err)
			proc := &process{cfg: &Config{Role: tc.role, Mode: tc.mode, Period: period, Timeout: timeout}, clock: clock}
			p := newPacer(proc, tc.role == endpoint.Eavesdropper)
			p.begin(t0)
			out := &sim.Out{Step: 3}
			require.Equal(t, tc.release, p.ReleaseAt(out))
			require.Equal(t, tc.deadline, p.Deadline(nil, 3, since))
			p.Released(out, t0.Add(5*period), true)
			st := clock.Stats()
			require.Equal(t, tc.observed, st.Steps, "releases the clock observes")
			require.Equal(t, tc.overruns, st.Overruns)
		})
	}
}
