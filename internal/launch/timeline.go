package launch

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The events of the timeline.
const (
	EvServerStopped  = "nats-server-stopped"
	EvServerStarted  = "nats-server-started"
	EvServerFailed   = "nats-server-restart-failed"
	EvDisconnected   = "disconnected"
	EvReconnected    = "reconnected"
	EvClosed         = "connection-closed"
	EvKilled         = "killed"
	EvRestarted      = "restarted"
	EvExited         = "exited"
	EvPartitionStart = "partition"
	EvProxy          = "proxy"
	EvReset          = "connection-reset"
)

// Timeline collects events from the launcher's goroutines.
type Timeline struct {
	mu     sync.Mutex
	origin time.Time
	events []record.TimelineEvent
}

// NewTimeline returns a timeline whose events are timed in seconds from origin (the run's start).
func NewTimeline(origin time.Time) *Timeline { return &Timeline{origin: origin} }

// Add records ev at time at (nothing on a nil timeline).
func (t *Timeline) Add(at time.Time, ev record.TimelineEvent) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ev.Sec = at.Sub(t.origin).Seconds()
	t.events = append(t.events, ev)
}

// Sorted returns the events in time order.
func (t *Timeline) Sorted() []record.TimelineEvent {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]record.TimelineEvent(nil), t.events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Sec < out[j].Sec })
	return out
}

// AddConnEvents puts a process's connection events on the timeline.
func (t *Timeline) AddConnEvents(point int, r *contract.ProcessResult) {
	for _, ce := range r.ConnEvents {
		ev := record.TimelineEvent{Point: point, Episode: ce.Episode, Step: -1, Proc: r.Name, Detail: ce.Error}
		switch ce.Event {
		case bus.EventDisconnected.String():
			ev.Event = EvDisconnected
		case bus.EventReconnected.String():
			ev.Event = EvReconnected
		default:
			ev.Event = EvClosed
		}
		t.Add(time.Unix(0, ce.UnixNano), ev)
	}
}

// AddStatic puts the faults the scenario schedules for every episode on the timeline, at the
// start of the point: partitions.
func (t *Timeline) AddStatic(point int, f *scenario.FaultsSpec) {
	for _, x := range f.Proxies {
		bw := "unlimited bandwidth"
		if x.Bandwidth > 0 {
			bw = fmt.Sprintf("%d KB/s", x.Bandwidth)
		}
		t.Add(time.Now(), record.TimelineEvent{Point: point, Episode: -1, Step: -1, Proc: contract.ProcName(procRole(x.Proc)), Event: EvProxy,
			Detail: fmt.Sprintf("toxiproxy between %s and the server for the whole run: latency %v +- %v, %s, both directions", x.Proc, x.Latency, x.Jitter, bw)})
	}
	for _, p := range f.Partitions {
		t.Add(time.Now(), record.TimelineEvent{Point: point, Episode: -1, Step: p.Window.From, Event: EvPartitionStart,
			Detail: fmt.Sprintf("%s: agents %v cut off the others for steps %d..%d of every episode", p.Name, p.Side, p.Window.From, p.Window.To-1)})
	}
}

// Append adds events timed already (their Sec kept): the timelines of a merged run's shards.
func (t *Timeline) Append(evs []record.TimelineEvent) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, evs...)
}
