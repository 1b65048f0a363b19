package live

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dpsim/dpsim/internal/rss"
)

// The metrics of /metrics (Prometheus text format), made from the hub when scraped: nothing is
// counted on the run's path. Counters of links, invalid messages, connections and deadlines
// come from the processes' results, so they grow as points finish; the episodes and steps as
// episodes complete.
var (
	descEpisodes  = prometheus.NewDesc("dpsim_episodes_completed_total", "Episodes every process completed, over the run's points.", nil, nil)
	descPlanned   = prometheus.NewDesc("dpsim_episodes_planned", "Episodes the run plays: runs times points.", nil, nil)
	descSteps     = prometheus.NewDesc("dpsim_steps_total", "Steps of the completed episodes (episodes times T per point).", nil, nil)
	descElapsed   = prometheus.NewDesc("dpsim_run_elapsed_seconds", "Time since the run started.", nil, nil)
	descRemaining = prometheus.NewDesc("dpsim_run_remaining_seconds", "Estimated time left (absent until an episode completed).", nil, nil)
	descRun       = prometheus.NewDesc("dpsim_run_info", "The run: 1, with its scenario, engine, mode and status (running, ok, degraded, failed, interrupted).", []string{"scenario", "engine", "mode", "status"}, nil)
	descLink      = prometheus.NewDesc("dpsim_link_messages_total", "Messages per link by fate (fault.LinkStats: sent, dropped, duplicated, delayed, reordered, expired, delivered, late, dup_received, lost, conflicts), over the finished points.", []string{"link", "fate"}, nil)
	descGaps      = prometheus.NewDesc("dpsim_link_gaps_total", "Steps at which a link's receiver got no message, over the finished points.", []string{"link"}, nil)
	descInvalid   = prometheus.NewDesc("dpsim_invalid_messages_total", "Data messages a process received and dropped, by reason.", []string{"process", "reason"}, nil)
	descRSS       = prometheus.NewDesc("dpsim_process_peak_rss_bytes", "Peak resident set size of a finished process (and of the launcher so far).", []string{"process"}, nil)
	descConn      = prometheus.NewDesc("dpsim_connection_events_total", "NATS connection events of a finished process: disconnected, reconnected, async_error.", []string{"process", "event"}, nil)
	descSlow      = prometheus.NewDesc("dpsim_slow_consumer_dropped_messages_total", "Messages a process's NATS client dropped because the process fell behind.", []string{"process"}, nil)
	descMissed    = prometheus.NewDesc("dpsim_deadline_misses_total", "Steps of a process that went on without all their messages at the deadline (realtime: a missed tick; lockstep: --timeout).", []string{"process"}, nil)
	descOverruns  = prometheus.NewDesc("dpsim_step_overruns_total", "Realtime: steps of a process that began after their tick.", []string{"process"}, nil)
	descJitter    = prometheus.NewDesc("dpsim_step_jitter_max_seconds", "Realtime: the worst lateness of a process's step start after its tick.", []string{"process"}, nil)
	descProcs     = prometheus.NewDesc("dpsim_processes", "Role processes by state (ready: running; else the status of their result).", []string{"state"}, nil)
	descRSSNow    = prometheus.NewDesc("dpsim_process_rss_bytes", "Resident set size of a running process of the point in progress, sampled every second (/proc/<pid>/status VmRSS; absent where not readable).", []string{"process"}, nil)
	descLive      = prometheus.NewDesc("dpsim_link_replayed_messages_total", "The point in progress: messages per link by injector fate (sent, dropped, duplicated, delayed, reordered, expired), replayed by the launcher from the fault seed for each completed episode (live.LinkReplay); reset when the next point begins.", []string{"link", "fate"}, nil)
	descLateness  = prometheus.NewDesc("dpsim_step_lateness_seconds", "Realtime: how late each step's message was published after its tick (t_k = ctl.episode sent + contract.GridLead + k Ts), from the messages' send times as the launcher receives them on the data subjects (a delay the scenario injects on a link counts), by the publisher's role.", []string{"role"}, nil)
	descTimeline  = prometheus.NewDesc("dpsim_timeline_events_total", "Events on the run's timeline (crashes, restarts, server outages, connection events, exits), by event.", []string{"event"}, nil)
)

// registry is the hub's Prometheus registry: its collector, and the launcher's Go runtime and
// process collectors.
func (h *Hub) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(hubCollector{h}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

type hubCollector struct{ h *Hub }

func (c hubCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEpisodes, descPlanned, descSteps, descElapsed, descRemaining, descRun, descLink, descGaps,
		descInvalid, descRSS, descConn, descSlow, descMissed, descOverruns, descJitter, descProcs, descTimeline, descRSSNow, descLive, descLateness} {
		ch <- d
	}
}

func (c hubCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.h
	h.mu.Lock()
	st := h.snapshot() // its series are not read here: the rest is copied
	timeline := h.timeline
	type hist struct {
		role    string
		n       uint64
		sum     float64
		buckets map[float64]uint64
	}
	var hists []hist
	for role, l := range h.lateness {
		hists = append(hists, hist{role, l.n, l.sum, l.cumulative()})
	}
	h.mu.Unlock()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descEpisodes, float64(st.EpisodesDone))
	gauge(descPlanned, float64(st.EpisodesTotal))
	counter(descSteps, float64(st.StepsDone))
	gauge(descElapsed, st.ElapsedSec)
	if st.RemainingSec != nil {
		gauge(descRemaining, *st.RemainingSec)
	}
	gauge(descRun, 1, st.Scenario, st.Engine, st.Mode, st.Status)
	collectLinks(st.Links, counter)
	for _, l := range st.LiveLinks {
		for _, f := range []struct {
			fate string
			n    uint64
		}{{"sent", l.Sent}, {"dropped", l.Dropped}, {"duplicated", l.Duplicated}, {"delayed", l.Delayed}, {"reordered", l.Reordered}, {"expired", l.Expired}} {
			counter(descLive, float64(f.n), l.Link, f.fate)
		}
	}
	for _, l := range hists {
		ch <- prometheus.MustNewConstHistogram(descLateness, l.n, l.sum, l.buckets, l.role)
	}
	if peak, _ := rss.Peak(); peak > 0 {
		gauge(descRSS, float64(peak), "launcher")
	}
	states := map[string]int{}
	for _, p := range st.Processes {
		states[p.State]++
		if !p.Finished {
			if p.RSSBytes > 0 {
				gauge(descRSSNow, float64(p.RSSBytes), p.Key)
			}
			continue
		}
		for reason, n := range p.Invalid {
			counter(descInvalid, float64(n), p.Key, reason)
		}
		gauge(descRSS, float64(p.PeakRSSBytes), p.Key)
		counter(descConn, float64(p.Disconnects), p.Key, "disconnected")
		counter(descConn, float64(p.Reconnects), p.Key, "reconnected")
		counter(descConn, float64(p.AsyncErrors), p.Key, "async_error")
		counter(descSlow, float64(p.SlowConsumers), p.Key)
		counter(descMissed, float64(p.Missed), p.Key)
		counter(descOverruns, float64(p.Overruns), p.Key)
		gauge(descJitter, p.JitterMaxSec, p.Key)
	}
	for s, n := range states {
		gauge(descProcs, float64(n), s)
	}
	events := map[string]int{}
	if timeline != nil {
		for _, ev := range timeline() {
			events[ev.Event]++
		}
	}
	for ev, n := range events {
		counter(descTimeline, float64(n), ev)
	}
}

// collectLinks sends the links' counters, summed over the points by link.
func collectLinks(rows []LinkRow, counter func(*prometheus.Desc, float64, ...string)) {
	sum := map[string]*LinkRow{}
	var names []string
	for i := range rows {
		r := &rows[i]
		s := sum[r.Link]
		if s == nil {
			s = &LinkRow{LinkStats: r.LinkStats}
			sum[r.Link] = s
			names = append(names, r.Link)
			continue
		}
		s.Add(&r.LinkStats)
	}
	sort.Strings(names)
	for _, name := range names {
		l := sum[name].LinkStats
		for _, f := range []struct {
			fate string
			n    uint64
		}{{"sent", l.Sent}, {"dropped", l.Dropped}, {"duplicated", l.Duplicated}, {"delayed", l.Delayed}, {"reordered", l.Reordered},
			{"expired", l.Expired}, {"delivered", l.Delivered}, {"late", l.Late}, {"dup_received", l.DupReceived}, {"lost", l.Lost},
			{"conflicts", l.Conflicts}} {
			counter(descLink, float64(f.n), name, f.fate)
		}
		counter(descGaps, float64(l.Gaps), name)
	}
}
