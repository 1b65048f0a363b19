package scenario

import (
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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

var (
	crashFields     = []string{"proc", "episode", "step", "restart", "noise"}
	partitionFields = []string{"name", "agents", "window", "active"}
	restartFields   = []string{"episode", "step", "down", "server"}
	proxyFields     = []string{"proc", "latency", "jitter", "bandwidth", "resets"}
	pointFields     = []string{"episode", "step"}
)

// list decodes a sequence under path, calling item for each element.
func (d *decoder) list(n *yaml.Node, path string, item func(c *yaml.Node, path string, k int)) {
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.add(n, path, "want a list, got %s", describe(n))
		return
	}
	for i, c := range n.Content {
		item(resolve(c), index(path, i), i)
	}
}

// procEndpoint decodes a process endpoint: plant.0 / cloud.0 (cloud control) or agent.<i>.
func (d *decoder) procEndpoint(n *yaml.Node, path string, kind Kind, graphN int) (string, bool) {
	v, ok := d.endpoint(n, path, kind, true, graphN)
	if !ok {
		return "", false
	}
	if v == "*" || strings.HasSuffix(v, ".*") {
		d.add(n, path, "%q: name one process, e.g. plant.0 or agent.3", v)
		return "", false
	}
	return v, true
}

// durationIn decodes a duration with a unit, in [lo, hi].
func (d *decoder) durationIn(n *yaml.Node, path string, lo, hi time.Duration) (time.Duration, bool) {
	if isNumber(n) && n.Value != "0" {
		d.add(n, path, "want a duration with a unit such as 20ms or 1s, got number %s", n.Value)
		return 0, false
	}
	v, ok := d.str(n, path)
	if !ok {
		return 0, false
	}
	p, err := time.ParseDuration(v)
	switch {
	case err != nil:
		d.add(n, path, "%q is not a duration (write e.g. 20ms or 1s)", v)
	case p < lo || p > hi:
		d.add(n, path, "%s is out of range [%v, %v]", v, lo, hi)
	default:
		return p, true
	}
	return 0, false
}

// lastStep is the largest step index of an episode of steps steps (unbounded when steps is
// not known yet).
func lastStep(steps int) int64 {
	if steps > 0 {
		return int64(steps - 1)
	}
	return 1<<31 - 1
}

// stepPoint decodes the episode (default 0) and step (default 0, below steps when known) of a
// mapping.
func (d *decoder) stepPoint(f *fields, steps int) (StepPoint, bool) {
	var sp StepPoint
	good := true
	if en := f.get("episode"); en != nil {
		if v, ok := d.intIn(en, f.sub("episode"), 0, 1<<31-1, ""); ok {
			sp.Episode = v
		} else {
			good = false
		}
	}
	if sn := f.get("step"); sn != nil {
		if v, ok := d.intIn(sn, f.sub("step"), 0, lastStep(steps), " (a step of the episode)"); ok {
			sp.Step = v
		} else {
			good = false
		}
	}
	return sp, good
}

// processFaults decodes crashes, partitions, server_restarts and proxies into out.
func (d *decoder) processFaults(f *fields, out *FaultsSpec, kind Kind, steps, graphN int) {
	seen := map[string]string{}
	d.list(f.get("crashes"), "faults.crashes", func(c *yaml.Node, path string, _ int) {
		cf := d.mapping(c, path, crashFields...)
		if cf == nil {
			return
		}
		cr := Crash{Noise: NoiseResume}
		good := true
		if pn := cf.get("proc"); pn == nil {
			d.missing(cf, "proc", "the process to kill: plant.0, cloud.0 or agent.<i>")
			good = false
		} else if v, ok := d.procEndpoint(pn, cf.sub("proc"), kind, graphN); ok {
			cr.Proc = v
		} else {
			good = false
		}
		if en := cf.get("episode"); en != nil {
			if en.Kind == yaml.ScalarNode && en.Value == "all" {
				cr.Episode = EveryEpisode
			} else if v, ok := d.intIn(en, cf.sub("episode"), 0, 1<<31-1, " (or all)"); ok {
				cr.Episode = v
			} else {
				good = false
			}
		}
		hi := lastStep(steps)
		sn, rn := cf.get("step"), cf.get("restart")
		if sn == nil {
			d.missing(cf, "step", "the step at which the process is killed")
			good = false
		} else if v, ok := d.intIn(sn, cf.sub("step"), 0, hi, " (a step of the episode)"); ok {
			cr.Step = v
		} else {
			good = false
		}
		if rn == nil {
			d.missing(cf, "restart", "the step at which the restarted process is back (step < restart < steps)")
			good = false
		} else if v, ok := d.intIn(rn, cf.sub("restart"), 1, hi, " (the process must be back within the episode)"); ok {
			cr.Restart = v
			if good && v <= cr.Step {
				d.add(rn, cf.sub("restart"), "%d must be after step %d", v, cr.Step)
				good = false
			}
		} else {
			good = false
		}
		if nn := cf.get("noise"); nn != nil {
			if v, ok := d.str(nn, cf.sub("noise")); ok {
				switch CrashNoise(v) {
				case NoiseResume, NoiseRedraw:
					cr.Noise = CrashNoise(v)
				default:
					d.add(nn, cf.sub("noise"), "unknown rule %q (allowed: resume, redraw)", v)
					good = false
				}
			} else {
				good = false
			}
		}
		if !good {
			return
		}
		key, all := cr.Proc+"/"+strconv.Itoa(cr.Episode), cr.Proc+"/all"
		first, dup := seen[key]
		if !dup {
			first, dup = seen[all]
		}
		if !dup && cr.Episode == EveryEpisode {
			for k, v := range seen {
				if strings.HasPrefix(k, cr.Proc+"/") {
					first, dup = v, true
				}
			}
		}
		if dup {
			d.add(c, path, "%s is already killed in episode %s by %s: one crash per process and episode", cr.Proc, cr.EpisodeName(), first)
			return
		}
		if cr.Episode == EveryEpisode {
			key = all
		}
		seen[key] = path
		out.Crashes = append(out.Crashes, cr)
	})
	names := map[string]string{}
	d.list(f.get("partitions"), "faults.partitions", func(c *yaml.Node, path string, k int) {
		pf := d.mapping(c, path, partitionFields...)
		if pf == nil {
			return
		}
		if kind == CloudControl {
			d.add(c, path, "partitions cut consensus agents apart; this scenario is %s (use faults.links with drop: 1)", kind)
			return
		}
		p := Partition{Name: "partition" + strconv.Itoa(k)}
		good := true
		if nn := pf.get("name"); nn != nil {
			if v, ok := d.str(nn, pf.sub("name")); ok && nameRE.MatchString(v) {
				p.Name = v
			} else {
				d.add(nn, pf.sub("name"), "not a valid name (letters, digits, '.', '_' and '-')")
				good = false
			}
		}
		an := pf.get("agents")
		if an == nil {
			d.missing(pf, "agents", "the agents of one side (the other side is every other agent)")
			good = false
		} else if an.Kind != yaml.SequenceNode || len(an.Content) == 0 {
			d.add(an, pf.sub("agents"), "want a non-empty list of agent indices, got %s", describe(an))
			good = false
		} else {
			in := map[int]bool{}
			hi := int64(1<<31 - 1)
			if graphN > 0 {
				hi = int64(graphN - 1)
			}
			for i, a := range an.Content {
				v, ok := d.intIn(resolve(a), index(pf.sub("agents"), i), 0, hi, " (an agent of the graph)")
				if !ok {
					good = false
					continue
				}
				if in[v] {
					d.add(a, index(pf.sub("agents"), i), "agent %d is listed twice", v)
					good = false
					continue
				}
				in[v] = true
				p.Side = append(p.Side, v)
			}
			if graphN > 0 && len(in) >= graphN {
				d.add(an, pf.sub("agents"), "every agent is on this side: the other side is empty")
				good = false
			}
		}
		if wn := pf.get("window"); wn == nil {
			d.missing(pf, "window", "the steps [from, to) the partition lasts")
			good = false
		} else if w, ok := d.window(wn, pf.sub("window"), steps); ok {
			p.Window = *w
		} else {
			good = false
		}
		if an := pf.get("active"); an != nil {
			if l, ok := d.lifetime(an, pf.sub("active"), steps); ok {
				p.Active = l
			} else {
				good = false
			}
		}
		if !good {
			return
		}
		if first, dup := names[p.Name]; dup {
			d.add(c, path+".name", "%q is already the name of %s", p.Name, first)
			return
		}
		names[p.Name] = path
		out.Partitions = append(out.Partitions, p)
	})
	d.list(f.get("server_restarts"), "faults.server_restarts", func(c *yaml.Node, path string, _ int) {
		rf := d.mapping(c, path, restartFields...)
		if rf == nil {
			return
		}
		r := ServerRestart{Down: time.Second}
		at, good := d.stepPoint(rf, steps)
		r.Episode, r.Step = at.Episode, at.Step
		if dn := rf.get("down"); dn != nil {
			if v, ok := d.durationIn(dn, rf.sub("down"), time.Millisecond, time.Minute); ok {
				r.Down = v
			} else {
				good = false
			}
		}
		if sv := rf.get("server"); sv != nil {
			if v, ok := d.intIn(sv, rf.sub("server"), 0, 15, " (a member of dpsim run --cluster)"); ok {
				r.Server = v
			} else {
				good = false
			}
		}
		if good {
			out.ServerRestarts = append(out.ServerRestarts, r)
		}
	})
	procs := map[string]string{}
	d.list(f.get("proxies"), "faults.proxies", func(c *yaml.Node, path string, _ int) {
		xf := d.mapping(c, path, proxyFields...)
		if xf == nil {
			return
		}
		var x Proxy
		good := true
		if pn := xf.get("proc"); pn == nil {
			d.missing(xf, "proc", "the process whose connection goes through the proxy: plant.0, cloud.0 or agent.<i>")
			good = false
		} else if v, ok := d.procEndpoint(pn, xf.sub("proc"), kind, graphN); ok {
			x.Proc = v
		} else {
			good = false
		}
		for _, k := range []struct {
			key string
			p   *time.Duration
		}{{"latency", &x.Latency}, {"jitter", &x.Jitter}} {
			if vn := xf.get(k.key); vn != nil {
				if v, ok := d.durationIn(vn, xf.sub(k.key), 0, time.Minute); ok {
					*k.p = v
				} else {
					good = false
				}
			}
		}
		if bn := xf.get("bandwidth"); bn != nil {
			if v, ok := d.intIn(bn, xf.sub("bandwidth"), 0, 1<<40, " KB/s (0: unlimited)"); ok {
				x.Bandwidth = int64(v)
			} else {
				good = false
			}
		}
		d.list(xf.get("resets"), xf.sub("resets"), func(rn *yaml.Node, rpath string, _ int) {
			rf := d.mapping(rn, rpath, pointFields...)
			if rf == nil {
				good = false
				return
			}
			sp, ok := d.stepPoint(rf, steps)
			good = good && ok
			x.Resets = append(x.Resets, sp)
		})
		if good && x.Jitter > x.Latency {
			d.add(c, xf.sub("jitter"), "%v is larger than the latency %v (the delay is latency +- jitter)", x.Jitter, x.Latency)
			good = false
		}
		if !good {
			return
		}
		if first, dup := procs[x.Proc]; dup {
			d.add(c, path+".proc", "%s already has a proxy (%s)", x.Proc, first)
			return
		}
		procs[x.Proc] = path
		out.Proxies = append(out.Proxies, x)
	})
}
