package scenario

import (
	"strconv"
	"time"
)

// Process, server and network faults of the faults: section (beside missing and links):
//
//	faults:
//	  crashes:                 # kill a role's OS process (SIGKILL) and restart it
//	    - proc: agent.3        # plant.0, cloud.0 or agent.<i> (one agent per process)
//	      episode: 1           # in this episode (default 0; all: in every episode)
//	      step: 20             # killed just before it releases its step-20 output
//	      restart: 30          # back at step 30 of the same episode (step < restart < steps)
//	      noise: resume        # resume (default): the checkpoint's noise draw; redraw: a fresh
//	                           # draw, a second independent release - only to show the leak
//	  partitions:              # cut the agents of one side off the others (both ways)
//	    - name: halves         # optional label (default partition<k>)
//	      agents: [0, 1, 2]    # one side; the other is every other agent
//	      window: [20, 30]     # steps 20..29 of every episode
//	      active: {from: {episode: 2, step: 0}}  # optional lifetime (lifetime.go)
//	  server_restarts:         # stop the embedded NATS server and start it on the same port
//	    - episode: 1           # when the launcher sees step `step` of this episode on the bus
//	      step: 50
//	      down: 1s             # how long the server stays down (default 1s)
//	      server: 0            # with dpsim run --cluster N: which member (0..N-1, default 0)
//	  proxies:                 # toxiproxy (embedded, loopback) between a process and the server
//	    - proc: plant.0
//	      latency: 20ms        # added to every chunk, both directions
//	      jitter: 5ms          # +- uniform
//	      bandwidth: 0         # KB/s, 0: unlimited
//	      resets:              # reset the process's TCP connection when the launcher sees
//	        - {episode: 1, step: 30}  # this step on the bus (the client reconnects)
//
// While a crashed process is down (steps step..restart-1) its peers apply their
// missing-input rules at once: the outage is in the scenario, so every engine replays it the
// same. A restarted process resumes from its own checkpoint (state, inputs held, counters and
// the episode's noise draw) taken at the crash step; its state stays that of the crash step
// until it is back. A partition is a set of link rules that drop every message between the
// sides in the window.

// CrashNoise says what a restarted process does with the episode's noise draw.
type CrashNoise string

// The crash noise rules.
const (
	// NoiseResume restores the draw from the checkpoint: the eavesdropper sees one release.
	NoiseResume CrashNoise = "resume"
	// NoiseRedraw draws eta afresh after the restart: the outputs after it are a second,
	// independent release of the same state, which the privacy claim does not cover. It
	// exists to demonstrate the leak (the audit flags it).
	NoiseRedraw CrashNoise = "redraw"
)

// Crash kills the process of Proc at step Step of episode Episode and brings it back at step
// Restart.
type Crash struct {
	Proc    string     `json:"proc"` // endpoint, e.g. agent.3
	Episode int        `json:"episode"`
	Step    int        `json:"step"`
	Restart int        `json:"restart"`
	Noise   CrashNoise `json:"noise"`
}

// EveryEpisode is the Episode of a crash in every episode (episode: all).
const EveryEpisode = -1

// In reports whether the crash happens in episode ep.
func (c *Crash) In(ep int) bool { return c.Episode == EveryEpisode || c.Episode == ep }

// Down reports whether the crashed endpoint is down at step t of episode ep.
func (c *Crash) Down(ep, t int) bool { return c.In(ep) && t >= c.Step && t < c.Restart }

// EpisodeName is the crash's episode as the scenario says it ("all" for every episode).
func (c *Crash) EpisodeName() string {
	if c.Episode == EveryEpisode {
		return "all"
	}
	return strconv.Itoa(c.Episode)
}

// Partition cuts the agents of Side off every other agent for the steps of Window.
type Partition struct {
	Name   string     `json:"name"`
	Side   []int      `json:"side"`
	Window StepWindow `json:"window"`
	// Active is the part of the run the partition acts in (lifetime.go; nil: the whole run).
	Active *Lifetime `json:"active,omitempty"`
}

// ServerRestart stops the embedded NATS server for Down when step Step of episode Episode is
// seen on the bus, then starts it again on the same port. With an embedded cluster (dpsim run
// --cluster) Server names the member; its clients reconnect to the others meanwhile.
type ServerRestart struct {
	Episode int           `json:"episode"`
	Step    int           `json:"step"`
	Down    time.Duration `json:"down_ns"`
	Server  int           `json:"server"`
}

// Proxy puts a toxiproxy between the process of Proc and the server, with these toxics.
type Proxy struct {
	Proc      string        `json:"proc"`
	Latency   time.Duration `json:"latency_ns,omitempty"`
	Jitter    time.Duration `json:"jitter_ns,omitempty"`
	Bandwidth int64         `json:"bandwidth_kbps,omitempty"` // KB/s; 0: unlimited
	// Resets are the steps at which the proxy resets the process's connections.
	Resets []StepPoint `json:"resets,omitempty"`
}

// StepPoint is one step of one episode.
type StepPoint struct {
	Episode int `json:"episode"`
	Step    int `json:"step"`
}

// CrashOf returns the crash of endpoint proc in episode ep (nil: none).
func (f *FaultsSpec) CrashOf(proc string, ep int) *Crash {
	if f == nil {
		return nil
	}
	for i := range f.Crashes {
		if c := &f.Crashes[i]; c.Proc == proc && c.In(ep) {
			return c
		}
	}
	return nil
}
