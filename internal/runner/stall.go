package runner

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
)

// StallRepeat is how often a stall that lasts is said again on stderr (launch.StallAfter is
// when it is first said).
const StallRepeat = 10 * time.Second

// stallReporter says on stderr, and on the live view, why a run makes no progress (a stalled
// run looked healthy: the page said every process ready, the terminal said nothing).
type stallReporter struct {
	l       *launcher
	said    time.Time // when the stall was last said on stderr (zero: not said)
	stalled bool
	since   float64
}

// report takes a stall (launch.PlayOptions.Stall; nil: the progress resumed). It is called from
// the point's goroutine only.
func (r *stallReporter) report(st *launch.Stall) {
	l := r.l
	if st == nil {
		if r.stalled && !r.said.IsZero() {
			r.line(fmt.Sprintf("dpsim run: progress resumed (stalled for %.0f s)\n", r.since))
		}
		r.stalled, r.said = false, time.Time{}
		l.hub.SetStall(nil)
		return
	}
	r.stalled, r.since = true, st.SinceSec
	line := st.String()
	l.hub.SetStall(&live.Stall{Point: st.Point, Episodes: st.Episodes, SinceSec: st.SinceSec, Awaiting: st.Awaiting, Last: st.Last,
		Drops: st.Drops, Pending: st.Pending, ServerSlowConsumers: st.ServerSlowConsumers, Line: line})
	if now := time.Now(); r.said.IsZero() || now.Sub(r.said) >= StallRepeat {
		r.said = now
		r.line("dpsim run: stalled: " + line + "\n")
	}
}

// line writes s on stderr, above the progress bar when there is one.
func (r *stallReporter) line(s string) {
	if r.l.bar != nil {
		_ = r.l.bar.Clear()
	}
	fmt.Fprint(r.l.stderr, s)
}
