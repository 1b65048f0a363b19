package schema

import (
	"strconv"

	"github.com/invopop/jsonschema"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Patterns of the subject tokens a message names.
const (
	// RunPattern is a run id: one NATS subject token (wire.ValidToken; at most 64 bytes).
	RunPattern = `^[^.*>\s\x00-\x1f\x7f]+$`
	idPattern  = `(0|[1-9][0-9]*)`
	// SenderPattern is any "<role>.<id>".
	SenderPattern = `^(plant|cloud|agent|eavesdropper|host|launcher)\.` + idPattern + `$`
	// processPattern is the sender of a role process's ctl messages (an agent host is its first
	// agent's agent.<i>).
	processPattern = `^(plant|cloud|agent|eavesdropper)\.` + idPattern + `$`
)

// message is the schema of every bus message (wire.Message in its JSON encoding), whatever its
// kind: the fields a receiver requires and their ranges.
func (g *gen) message() *jsonschema.Schema {
	s := g.reflector(true).Reflect(&wire.Message{})
	s.Title = "dpsim bus message (version " + strconv.Itoa(wire.Version) + ", JSON encoding)"
	v := prop(s, "v")
	v.Const = wire.Version
	r := prop(s, "run")
	r.Pattern, r.MinLength, r.MaxLength = RunPattern, u64(1), u64(wire.MaxTokenLen)
	prop(s, "ep").Minimum = "0"
	prop(s, "step").Minimum = "0"
	prop(s, "from").Pattern = SenderPattern
	prop(s, "kind").MinLength = u64(1)
	prop(s, "vals").Description += ": finite numbers (JSON has no NaN or infinity)"
	require(s, "v", "run", "ep", "step", "from", "sent", "kind", "vals")
	return s
}

// kindSpec is one kind of message: its kind, its senders, the layout of its values.
type kindSpec struct {
	kind    string
	subject string // the subject it travels on
	title   string
	desc    string
	from    *jsonschema.Schema
	ep      string // what ep means, "" as for every message
	vals    *jsonschema.Schema
}

// kind is the message schema narrowed to k: kind const, sender, vals layout.
func (g *gen) kind(k kindSpec) *jsonschema.Schema {
	s := g.message()
	s.Title = k.title
	s.Description = k.desc + "\n\nSubject: " + k.subject + ". The envelope is a bus message (message.json)."
	kind := prop(s, "kind")
	kind.Const, kind.MinLength = k.kind, nil
	kind.Description = "the message's kind: " + k.kind
	from := prop(s, "from")
	from.Pattern, from.Const = k.from.Pattern, k.from.Const
	from.Description = k.from.Description
	if k.ep != "" {
		prop(s, "ep").Description = k.ep
	}
	s.Properties.Set("vals", k.vals)
	return s
}

func from(pattern, desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Pattern: pattern, Description: desc}
}

var launcher = &jsonschema.Schema{Const: wire.LauncherSender, Description: "the launcher (wire.LauncherSender)"}

func numbers(min uint64, max *uint64, desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "number"}, MinItems: u64(min), MaxItems: max, Description: desc}
}

// positional is a vals array whose entry i means positions[i]; the first min are required.
func positional(min int, desc string, positions ...*jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", PrefixItems: positions, Items: jsonschema.FalseSchema,
		MinItems: u64(uint64(min)), MaxItems: u64(uint64(len(positions))), Description: desc}
}

// dataKinds are the data messages: one per stream.
func dataKinds() []kindSpec {
	step := "the time step t of the values, 0 <= t < the scenario's steps"
	return []kindSpec{{
		kind: endpoint.StreamYhat, subject: "dpsim.<run>.plant.<id>.yhat", title: "data message yhat (plant -> cloud)",
		desc: "The plant's noisy output yhat(t) = C x(t) + gamma(t): the plant's true state never goes on the bus.",
		from: from(`^plant\.`+idPattern+`$`, "the publishing plant, plant.<id> of the subject"),
		vals: numbers(0, nil, "yhat(t): ny values (ny the rows of C); with Dpsim-Episodes n, n*ny values, the episodes' vectors in episode order; none with Dpsim-Gap (no message, a lockstep gap notice). "+step),
	}, {
		kind: endpoint.StreamU, subject: "dpsim.<run>.cloud.<id>.u", title: "data message u (cloud -> plant)",
		desc: "The cloud controller's control input u(t).",
		from: from(`^cloud\.`+idPattern+`$`, "the publishing controller, cloud.<id> of the subject"),
		vals: numbers(0, nil, "u(t): nu values (nu the columns of B); with Dpsim-Episodes n, n*nu values in episode order; none with Dpsim-Gap."),
	}, {
		kind: endpoint.StreamY, subject: "dpsim.<run>.agent.<i>.y or dpsim.<run>.host.<i>.y", title: "data message y (agent -> neighbours)",
		desc: "A consensus agent's noisy state y_i(t) = x_i(t) + gamma_i(t) (eq. 25); an agent host (host.<i>, the block of agents starting at i) publishes the y of all its agents at once.",
		from: from(`^(agent|host)\.`+idPattern+`$`, "agent.<i> or host.<i> of the subject"),
		vals: numbers(0, nil, "agent.<i>: [y_i(t)]; host.<i>: the y of the block's agents i, i+1, ... in order; with Dpsim-Episodes n, n times that in episode order; none with Dpsim-Gap."),
	}}
}

// ctlKinds are the coordination messages (pkg/contract): the meaning of each value is the doc of
// the contract type's field.
func (g *gen) ctlKinds() []kindSpec {
	pid := integer(1, 1<<31-1, "")
	pidOf := func(v any) *jsonschema.Schema {
		s := *pid
		s.Description = "pid: the process id"
		if c := g.comment(v, "PID"); c != "" {
			s.Description = "pid: " + c
		}
		return &s
	}
	processFrom := from(processPattern, "the process, <role>.<id> of the subject (an agent host: its first agent, agent.<i>)")
	readyPlan := integer(0, 1<<53-1, "plan digest: "+g.comment(contract.Ready{}, "Plan"))
	doneNext := integer(0, 1<<53-1, "trace next: "+g.comment(contract.Done{}, "TraceNext"))
	count := integer(1, contract.MaxInflight, "count: how many consecutive episodes, from ep, start at once (episodes in flight), 1.."+strconv.Itoa(contract.MaxInflight))
	empty := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", MaxItems: u64(0), Description: desc}
	}
	epEpisode := "the episode that begins, > every episode started before"
	return []kindSpec{{
		kind: wire.CtlReady, subject: "dpsim.<run>.ctl.ready.<role>.<id>", title: "ctl.ready (process -> launcher)",
		desc: g.comment(contract.Ready{}, ""), from: processFrom, ep: "0",
		vals: positional(1, "[pid, plan digest]: the pid is required, the digest may be left out (0: none)", pidOf(contract.Ready{}), readyPlan),
	}, {
		kind: wire.CtlDone, subject: "dpsim.<run>.ctl.done.<role>.<id>", title: "ctl.done (process -> launcher)",
		desc: g.comment(contract.Done{}, ""), from: processFrom, ep: "the episode finished",
		vals: positional(4, "[steps, missed, pid, trace next]",
			integer(0, 0, "steps: "+g.comment(contract.Done{}, "Steps")),
			integer(0, 0, "missed: "+g.comment(contract.Done{}, "Missed")),
			pidOf(contract.Done{}), doneNext),
	}, {
		kind: wire.CtlRejoin, subject: "dpsim.<run>.ctl.rejoin.<role>.<id>", title: "ctl.rejoin (restarted process -> peers, launcher)",
		desc: g.comment(contract.Rejoin{}, ""), from: processFrom, ep: "the episode it resumes",
		vals: positional(2, "[restart step, pid]", integer(0, 0, "restart step: "+g.comment(contract.Rejoin{}, "Step")), pidOf(contract.Rejoin{})),
	}, {
		kind: wire.CtlEpisode, subject: "dpsim.<run>.ctl.episode", title: "ctl.episode, kind episode (launcher -> all)",
		desc: "Start episode ep from the scenario's x(0) (contract.EpisodeMessage).", from: launcher, ep: epEpisode,
		vals: numbers(0, nil, "none from the launcher; a hand-driven run may put the episode's x(0) here (nx values for the plant, N for the agents)"),
	}, {
		kind: wire.CtlEpisodeX0, subject: "dpsim.<run>.ctl.episode", title: "ctl.episode, kind episode-x0 (launcher -> all)",
		desc: "Start episode ep whose explicit x(0) travels on the private challenger subject dpsim-challenger.<run>.x0 (ctl-x0.json), sent before this message: nothing on dpsim.<run>.> reveals it.", from: launcher, ep: epEpisode,
		vals: empty("none: the secret x(0) is never on a sniffable subject"),
	}, {
		kind: wire.CtlEpisodes, subject: "dpsim.<run>.ctl.episode", title: "ctl.episode, kind episodes (launcher -> all)",
		desc: "Start the count consecutive episodes ep..ep+count-1 at once (episodes in flight, contract.EpisodesMessage). Each process answers with one ctl.done per episode, in episode order, once the whole group is done.", from: launcher, ep: "the group's first episode",
		vals: positional(1, "[count]", count),
	}, {
		kind: wire.CtlEpisodesX0, subject: "dpsim.<run>.ctl.episode", title: "ctl.episode, kind episodes-x0 (launcher -> all)",
		desc: "As episodes, for episodes whose explicit x(0)s travel on the private challenger subject, one x0 message per episode, sent before this message.", from: launcher, ep: "the group's first episode",
		vals: positional(1, "[count]", count),
	}, {
		kind: wire.CtlFaults, subject: "dpsim.<run>.ctl.episode", title: "ctl.episode, kind faults (launcher -> all)",
		desc: g.comment(contract.LiveFaults{}, "") + " (contract.FaultsMessage). step is 0 for a change from the start of episode ep (sent before its ctl.episode), or in a realtime episode in progress the step from which its link rules and partitions act.", from: launcher, ep: "the first episode the live faults apply to: the next episode to start, or (step > 0) the realtime episode in progress",
		vals: positional(2, "[generation, digest]",
			integer(1, 1<<31-1, "generation: "+g.comment(contract.LiveFaults{}, "Generation")+"; the file is faults.live.<generation>.json beside the plan files"),
			integer(1, 1<<48-1, "digest: the first 48 bits of the file's SHA-256 (plan.FileDigest), checked before the file is used")),
	}, {
		kind: wire.CtlX0, subject: wire.ChallengerPrefix + "<run>.x0", title: "x0 (launcher -> plant, agents; private)",
		desc: "The challenger's secret initial state of episode ep (contract.X0Message), sealed (nkeys curve keys) to each process that owns a part of it, on a subject outside dpsim.>: a subscriber reads ciphertext only, and each receiver opens its own box. vals are the boxes one after the other, each [id, n, w_1..w_k]: the receiver's id (the plant's; an agent host's first agent), the box's length n in bytes, and its bytes six per value as integers in [0, 2^48), big-endian, the last padded with zeros (k = ceil(n/6)). A box opens to {run, ep, to, x0}: the run, episode and receiver it was sealed for (which must be the message's and the receiver's own) and the receiver's values.", from: launcher, ep: "the episode whose x(0) this is",
		vals: numbers(3, nil, "the sealed boxes: [id, n, w_1..w_k] per receiver (integers)"),
	}, {
		kind: wire.CtlStop, subject: "dpsim.<run>.ctl.stop", title: "ctl.stop (launcher -> all)",
		desc: "Finish, abandoning a running episode; flush, write and publish the result, exit (contract.StopMessage). Repeated until every process exited: stopping is idempotent.", from: launcher, ep: "0",
		vals: empty("none"),
	}}
}

// result is the schema of a process's result: the ctl.result payload and <name>.result.json.
func (g *gen) result() *jsonschema.Schema {
	s := g.reflector(true).Reflect(&contract.ProcessResult{})
	s.Title = "dpsim process result (version " + strconv.Itoa(contract.ResultVersion) + ")"
	s.Description += "\n\nSubject: dpsim.<run>.ctl.result.<role>.<id> (the payload is this JSON document, not a bus message)."
	prop(s, "v").Const = contract.ResultVersion
	r := prop(s, "run")
	r.Pattern, r.MinLength, r.MaxLength = RunPattern, u64(1), u64(wire.MaxTokenLen)
	var roles []any // the role processes: plant, cloud, agent, eavesdropper
	for _, name := range endpoint.ProcessRoles() {
		roles = append(roles, name)
	}
	prop(s, "role").Enum = roles
	prop(s, "status").Enum = []any{contract.StatusOK, contract.StatusInterrupted, contract.StatusFailed}
	return s
}

// traces are the schemas of the trace lines: what each role process writes to its
// <name>.trace.jsonl (a subset of the record type's fields) and the launcher's merged
// trace.jsonl (the whole record).
func (g *gen) traces() map[string]*jsonschema.Schema {
	control := func() *jsonschema.Schema { return g.reflector(false).Reflect(&trace.ControlRecord{}) }
	consensus := func() *jsonschema.Schema { return g.reflector(false).Reflect(&trace.ConsensusRecord{}) }
	out := map[string]*jsonschema.Schema{}
	role := func(name, who string, s *jsonschema.Schema, fields ...string) {
		keep(s, fields...)
		s.Title = "trace line of " + who
		s.Description = "One line of the trace file <name>.trace.jsonl of " + who + ": the fields of the record that are its own (pkg/trace). " + s.Description
		out["trace-"+name+".json"] = s
	}
	role("plant", "the plant", control(), "episode", "step", "x", "yhat", "down")
	role("cloud", "the cloud controller", control(), "episode", "step", "u", "xhat", "down")
	role("eavesdropper-control", "the eavesdropper (cloud control)", control(), "episode", "step", "eve_x0", "eve_missing")
	role("eavesdropper-consensus", "the eavesdropper (consensus)", consensus(), "episode", "step", "eve_x0", "eve_missing")
	agent := g.reflector(false).Reflect(&trace.AgentRecord{})
	role("agent", "an agent process (an agent host writes one line per agent and step)", agent, "episode", "step", "agent", "x", "y", "down")
	for name, s := range map[string]*jsonschema.Schema{"control": control(), "consensus": consensus()} {
		s.Title = "line of the run's merged trace.jsonl (" + name + ")"
		out["trace-"+name+".json"] = s
	}
	for _, s := range out {
		prop(s, "episode").Minimum = "0"
		prop(s, "step").Minimum = "0"
	}
	return out
}

// plan is the schema of a process's plan file, <name>.plan.json (plan.WriteFile): read strictly,
// unknown keys are errors.
func (g *gen) plan() *jsonschema.Schema {
	s := g.reflector(false).ReflectFromType(plan.FileType())
	s.Title = "dpsim plan file (" + plan.FileFormat + ")"
	s.Description = "The plan a launcher writes for each role process, <out>/procs/<name>.plan.json: the scenario point resolved once, the results that cost time to compute (noise calibration, gains, the graph's rate) and, of the private values, only that process's own (plan.Keep). " + s.Description
	prop(s, "format").Const = plan.FileFormat
	return s
}
