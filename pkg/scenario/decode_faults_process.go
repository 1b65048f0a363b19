package scenario

import (
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Decoding the process, server and network faults of the faults: section (process_faults.go):
// crashes, partitions, server_restarts and proxies, one table per kind of fault.

var (
	pointFields = []string{"episode", "step"}
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

// pointDoc is a step point while it is decoded.
type pointDoc struct {
	sp    StepPoint
	steps int
}

// pointTable is {episode, step}: each defaults to 0; the step lies below steps when known.
var pointTable = []field[pointDoc]{
	{key: "episode", set: to(intRange(0, 1<<31-1, ""), func(t *pointDoc) *int { return &t.sp.Episode })},
	{key: "step", set: func(d *decoder, t *pointDoc, n *yaml.Node, path string) bool {
		return to(intRange(0, lastStep(t.steps), " (a step of the episode)"), func(t *pointDoc) *int { return &t.sp.Step })(d, t, n, path)
	}},
}

// stepPoint decodes the episode (default 0) and step (default 0, below steps when known) of a
// mapping.
func (d *decoder) stepPoint(f *fields, steps int) (StepPoint, bool) {
	t := &pointDoc{steps: steps}
	good := walk(d, f, t, pointTable)
	return t.sp, good
}

// crashDoc is one crash while it is decoded.
type crashDoc struct {
	*faultsDoc
	cr Crash
}

// crashTable is a crash: {proc, episode, step, restart, noise}.
var crashTable = []field[crashDoc]{
	{key: "proc", need: "the process to kill: plant.0, cloud.0 or agent.<i>", set: func(d *decoder, t *crashDoc, n *yaml.Node, path string) bool {
		return t.setProc(d, &t.cr.Proc, n, path)
	}},
	{key: "episode", set: func(d *decoder, t *crashDoc, n *yaml.Node, path string) bool {
		if n.Kind == yaml.ScalarNode && n.Value == "all" {
			t.cr.Episode = EveryEpisode
			return true
		}
		return to(intRange(0, 1<<31-1, " (or all)"), func(t *crashDoc) *int { return &t.cr.Episode })(d, t, n, path)
	}},
	{key: "step", need: "the step at which the process is killed", set: func(d *decoder, t *crashDoc, n *yaml.Node, path string) bool {
		return to(intRange(0, lastStep(t.steps), " (a step of the episode)"), func(t *crashDoc) *int { return &t.cr.Step })(d, t, n, path)
	}},
	{key: "restart", need: "the step at which the restarted process is back (step < restart < steps)",
		set: func(d *decoder, t *crashDoc, n *yaml.Node, path string) bool {
			return to(intRange(1, lastStep(t.steps), " (the process must be back within the episode)"), func(t *crashDoc) *int { return &t.cr.Restart })(d, t, n, path)
		},
		check: func(d *decoder, t *crashDoc, n *yaml.Node, path string) bool {
			if t.cr.Restart <= t.cr.Step {
				d.add(n, path, "%d must be after step %d", t.cr.Restart, t.cr.Step)
				return false
			}
			return true
		}},
	{key: "noise", set: to(oneOf("rule", NoiseResume, NoiseRedraw), func(t *crashDoc) *CrashNoise { return &t.cr.Noise })},
}

// setProc decodes a process endpoint into *into.
func (t *faultsDoc) setProc(d *decoder, into *string, n *yaml.Node, path string) bool {
	v, ok := d.procEndpoint(n, path, t.kind, t.graphN)
	if ok {
		*into = v
	}
	return ok
}

// crash decodes a crash and adds it unless the process is already killed in that episode.
func (d *decoder) crash(c *yaml.Node, path string, _ int, fd *faultsDoc) {
	t := &crashDoc{faultsDoc: fd, cr: Crash{Noise: NoiseResume}}
	if f, good := section(d, c, path, t, crashTable); f == nil || !good {
		return
	}
	cr := t.cr
	key, all := cr.Proc+"/"+strconv.Itoa(cr.Episode), cr.Proc+"/all"
	first, dup := fd.crashed[key]
	if !dup {
		first, dup = fd.crashed[all]
	}
	if !dup && cr.Episode == EveryEpisode {
		for k, v := range fd.crashed {
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
	fd.crashed[key] = path
	fd.out.Crashes = append(fd.out.Crashes, cr)
}

// partitionDoc is one partition while it is decoded.
type partitionDoc struct {
	*faultsDoc
	p Partition
}

// partitionTable is a partition: {name, agents, window, active}.
var partitionTable = []field[partitionDoc]{
	{key: "name", set: func(d *decoder, t *partitionDoc, n *yaml.Node, path string) bool {
		if v, ok := d.str(n, path); ok && nameRE.MatchString(v) {
			t.p.Name = v
			return true
		}
		d.add(n, path, "not a valid name (letters, digits, '.', '_' and '-')")
		return false
	}},
	{key: "agents", need: "the agents of one side (the other side is every other agent)", set: setSide},
	{key: "window", need: "the steps [from, to) the partition lasts", set: func(d *decoder, t *partitionDoc, n *yaml.Node, path string) bool {
		w, ok := d.window(n, path, t.steps)
		if ok {
			t.p.Window = *w
		}
		return ok
	}},
	{key: "active", set: func(d *decoder, t *partitionDoc, n *yaml.Node, path string) bool {
		l, ok := d.lifetime(n, path, t.steps)
		if ok {
			t.p.Active = l
		}
		return ok
	}},
}

// setSide decodes the agents of one side of a partition: each once, not every agent.
func setSide(d *decoder, t *partitionDoc, n *yaml.Node, path string) bool {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.add(n, path, "want a non-empty list of agent indices, got %s", describe(n))
		return false
	}
	good := true
	in := map[int]bool{}
	hi := int64(1<<31 - 1)
	if t.graphN > 0 {
		hi = int64(t.graphN - 1)
	}
	for i, a := range n.Content {
		v, ok := d.intIn(resolve(a), index(path, i), 0, hi, " (an agent of the graph)")
		if !ok {
			good = false
			continue
		}
		if in[v] {
			d.add(a, index(path, i), "agent %d is listed twice", v)
			good = false
			continue
		}
		in[v] = true
		t.p.Side = append(t.p.Side, v)
	}
	if t.graphN > 0 && len(in) >= t.graphN {
		d.add(n, path, "every agent is on this side: the other side is empty")
		good = false
	}
	return good
}

// partition decodes partition k (consensus only) and adds it unless its name repeats.
func (d *decoder) partition(c *yaml.Node, path string, k int, fd *faultsDoc) {
	f := d.mapping(c, path, keysOf(partitionTable)...)
	if f == nil {
		return
	}
	if ki, ok := fd.kind.Info(); ok && !ki.Partitions {
		d.add(c, path, "partitions cut consensus agents apart; this scenario is %s (use faults.links with drop: 1)", fd.kind)
		return
	}
	t := &partitionDoc{faultsDoc: fd, p: Partition{Name: "partition" + strconv.Itoa(k)}}
	if !walk(d, f, t, partitionTable) {
		return
	}
	if first, dup := fd.partitionsAt[t.p.Name]; dup {
		d.add(c, path+".name", "%q is already the name of %s", t.p.Name, first)
		return
	}
	fd.partitionsAt[t.p.Name] = path
	fd.out.Partitions = append(fd.out.Partitions, t.p)
}

// restartTable is a server restart's own fields (its step point is pointTable's).
var restartTable = []field[ServerRestart]{
	{key: "episode"},
	{key: "step"},
	{key: "down", set: to(durationRange(time.Millisecond, time.Minute), func(r *ServerRestart) *time.Duration { return &r.Down })},
	{key: "server", set: to(intRange(0, 15, " (a member of dpsim run --cluster)"), func(r *ServerRestart) *int { return &r.Server })},
}

// serverRestart decodes {episode, step, down, server}.
func (d *decoder) serverRestart(c *yaml.Node, path string, _ int, fd *faultsDoc) {
	f := d.mapping(c, path, keysOf(restartTable)...)
	if f == nil {
		return
	}
	r := ServerRestart{Down: time.Second}
	at, good := d.stepPoint(f, fd.steps)
	r.Episode, r.Step = at.Episode, at.Step
	if walk(d, f, &r, restartTable) && good {
		fd.out.ServerRestarts = append(fd.out.ServerRestarts, r)
	}
}

// proxyDoc is one proxy while it is decoded.
type proxyDoc struct {
	*faultsDoc
	x Proxy
}

// proxyTable is a proxy: {proc, latency, jitter, bandwidth, resets}.
var proxyTable = []field[proxyDoc]{
	{key: "proc", need: "the process whose connection goes through the proxy: plant.0, cloud.0 or agent.<i>",
		set: func(d *decoder, t *proxyDoc, n *yaml.Node, path string) bool { return t.setProc(d, &t.x.Proc, n, path) }},
	{key: "latency", set: to(durationRange(0, time.Minute), func(t *proxyDoc) *time.Duration { return &t.x.Latency })},
	{key: "jitter", set: to(durationRange(0, time.Minute), func(t *proxyDoc) *time.Duration { return &t.x.Jitter })},
	{key: "bandwidth", set: func(d *decoder, t *proxyDoc, n *yaml.Node, path string) bool {
		v, ok := d.intIn(n, path, 0, 1<<40, " KB/s (0: unlimited)")
		if ok {
			t.x.Bandwidth = int64(v)
		}
		return ok
	}},
	{key: "resets", set: func(d *decoder, t *proxyDoc, n *yaml.Node, path string) bool {
		good := true
		d.list(n, path, func(rn *yaml.Node, rpath string, _ int) {
			rf := d.mapping(rn, rpath, pointFields...)
			if rf == nil {
				good = false
				return
			}
			sp, ok := d.stepPoint(rf, t.steps)
			good = good && ok
			t.x.Resets = append(t.x.Resets, sp)
		})
		return good
	}},
}

// proxy decodes a proxy and adds it unless the process already has one.
func (d *decoder) proxy(c *yaml.Node, path string, _ int, fd *faultsDoc) {
	t := &proxyDoc{faultsDoc: fd}
	f, good := section(d, c, path, t, proxyTable)
	if f == nil {
		return
	}
	x := t.x
	if good && x.Jitter > x.Latency {
		d.add(c, f.sub("jitter"), "%v is larger than the latency %v (the delay is latency +- jitter)", x.Jitter, x.Latency)
		good = false
	}
	if !good {
		return
	}
	if first, dup := fd.proxiesAt[x.Proc]; dup {
		d.add(c, path+".proc", "%s already has a proxy (%s)", x.Proc, first)
		return
	}
	fd.proxiesAt[x.Proc] = path
	fd.out.Proxies = append(fd.out.Proxies, x)
}
