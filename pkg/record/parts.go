package record

import (
	"fmt"
	"strings"
	"time"
)

// TimelineEvent is one entry of a run's fault timeline (summary.json "timeline", report.md):
// what happened, to which process, when (seconds since the run started) and where in the run
// (point, episode, step; -1 when not known or not applicable).
type TimelineEvent struct {
	Sec     float64 `json:"t_sec"`
	Point   int     `json:"point"`
	Episode int     `json:"episode"`
	Step    int     `json:"step"`
	Proc    string  `json:"proc,omitempty"`
	Event   string  `json:"event"`
	Detail  string  `json:"detail,omitempty"`
}

// Security says how a run's traffic was secured, for the reader of summary.json (its
// "security" object) and of report.md (its Security section). The launcher fills it in; the
// fast engine has no traffic to secure and leaves it nil.
type Security struct {
	// Server is "embedded" (the launcher's own server, or servers with --cluster) or
	// "external" (--nats-url / NATS_URL).
	Server string `json:"server"`
	// Cluster is the number of embedded servers joined by routes (--cluster; 0 or 1: one).
	Cluster int `json:"nats_cluster"`
	// Permissions: per-role NATS users restrict who may publish and subscribe on what (the
	// embedded server always; an external server only as its operator configured it, which
	// the launcher cannot see: false).
	Permissions bool `json:"permissions"`
	// Signed: every data and control message carried an ed25519 signature of its sender
	// (--sign; on by default with an external server, --no-sign turns it off).
	Signed bool `json:"signed"`
	// Authenticated: receivers verified every message's signature and dropped what failed,
	// so the data used came from the processes the launcher started (Signed, with keys the
	// launcher handed out).
	Authenticated bool `json:"authenticated"`
	// TLS is "off", "auto" (the embedded server's throwaway CA) or "external" (--tls-ca ...).
	TLS string `json:"tls"`
	// Strict: a conflicting copy of a message (forged or corrupted traffic) fails the run
	// instead of degrading it (--strict).
	Strict bool `json:"strict"`
}

// SecretFiles says what became of the files holding secrets that a run's processes left in
// their directories (summary.json "secrets"): the plan files of the plant and the agents (their
// x(0) and the run seed), the checkpoints of crashed processes (their noise draw) and the attach
// credentials files (passwords, signing and curve seeds). They are removed when the run ends,
// however it ends, unless the user keeps them (--keep-secrets); a launcher that is killed
// cannot remove them.
type SecretFiles struct {
	// Kept: --keep-secrets; Files are then the files kept, else those removed.
	Kept    bool     `json:"kept"`
	Removed int      `json:"removed"`
	Files   []string `json:"files,omitempty"` // relative to the output directory, sorted
}

// Problem is something wrong the launcher attributes to the process that caused it: a role
// process breaking the contract (docs/protocol.md), most often a user's program (--role). A
// fatal problem fails the point (its numbers would be computed from nothing); the others are
// named and counted, and what they did to the results shows where it always does (steps that
// timed out, conflicts, lost messages make the run degraded). Forged messages are listed under
// the sender they claimed to be, which did not send them.
type Problem struct {
	Process string `json:"process"`           // its name (cloud-0)
	Sender  string `json:"sender"`            // its sender name (cloud.0)
	Program string `json:"program,omitempty"` // the user's command that played it (--role)
	Kind    string `json:"kind"`              // launch.ProblemNoResult, ...
	Count   uint64 `json:"count,omitempty"`   // messages concerned, where it counts some
	Detail  string `json:"detail"`            // the reason, in words
	Fatal   bool   `json:"fatal"`
}

func (p Problem) String() string {
	who := p.Process
	if p.Program != "" {
		who += fmt.Sprintf(" (--role %s=%q)", p.Sender, p.Program)
	}
	return fmt.Sprintf("%s: %s: %s", who, p.Kind, p.Detail)
}

// Leftover is a process a run started, or one of its descendants, that still ran after every
// child had exited or been killed: the launcher's sweep ended it.
type Leftover struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its executable's name (/proc/PID/comm)
	Of      string `json:"of"`      // the child it came from (its process group or its mark)
	Signal  string `json:"signal"`  // what ended it: SIGTERM, or SIGKILL 3 s later
}

// String words a leftover for logs and reports: "pid 123 (sleep, of cloud-0): SIGKILL".
func (l Leftover) String() string {
	return fmt.Sprintf("pid %d (%s, of %s): %s", l.PID, l.Command, l.Of, l.Signal)
}

// LeftoverText words a list of leftovers on one line ("" for none).
func LeftoverText(ls []Leftover) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return fmt.Sprintf("%d processes the run started outlived their role and were killed: %s", len(ls), strings.Join(parts, "; "))
}

// InflightSummary is summary.json "inflight": how many episodes were kept in flight at once over
// the processes (NATS engine).
type InflightSummary struct {
	// Asked is --inflight (or its default for the mode) and Used the group size the launcher
	// played with (realtime: 1). The counts say how many groups were played, the largest, and
	// how many episodes ran in a group of their own because a fault was scheduled in them: a
	// process crash, a server restart, a proxy reset.
	Asked int `json:"asked"`
	Used  int `json:"used"`
	InflightCounts
}

// String is the report's line: "16 (asked 16); 40 groups, the largest 16; 2 episodes alone
// (crash 1, server restart 1)".
func (s *InflightSummary) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d (asked %d); %d group(s), the largest %d", s.Used, s.Asked, s.Groups, s.Largest)
	a := s.Alone
	if a.Total() == 0 {
		b.WriteString("; no episode alone")
		return b.String()
	}
	var why []string
	for _, w := range []struct {
		n    int
		name string
	}{{a.Crash, "process crash"}, {a.ServerRestart, "server restart"}, {a.Proxy, "proxy reset"}} {
		if w.n > 0 {
			why = append(why, fmt.Sprintf("%s %d", w.name, w.n))
		}
	}
	fmt.Fprintf(&b, "; %d episode(s) alone (%s)", a.Total(), strings.Join(why, ", "))
	return b.String()
}

// InflightCounts count how a session's episodes were grouped: the groups played, the largest,
// and the episodes run alone by reason.
type InflightCounts struct {
	Groups  int         `json:"groups"`
	Largest int         `json:"largest_group"`
	Alone   AloneCounts `json:"alone"`
}

// AloneCounts count the episodes run in a group of their own because of a fault scheduled in
// them (a group that is alone only because of K = 1 or the point's end is not counted).
type AloneCounts struct {
	Crash         int `json:"crash"`
	ServerRestart int `json:"server_restart"`
	Proxy         int `json:"proxy"`
}

// Total is the number of episodes run alone.
func (a AloneCounts) Total() int { return a.Crash + a.ServerRestart + a.Proxy }

// Merge adds the counts of o (another point's).
func (c *InflightCounts) Merge(o InflightCounts) {
	c.Groups += o.Groups
	c.Largest = max(c.Largest, o.Largest)
	c.Alone.Crash += o.Alone.Crash
	c.Alone.ServerRestart += o.Alone.ServerRestart
	c.Alone.Proxy += o.Alone.Proxy
}

// InterventionsSummary is summary.json "interventions": the live changes of the run's faults
// made through the live view (--ui), applied and not, each with when it was asked for (at), its
// body and who asked. A run with an applied change that completed has status
// StatusIntervened, never "ok".
type InterventionsSummary struct {
	Applied int            `json:"applied"`
	Pending int            `json:"not_applied,omitempty"` // asked for, but the run ended first
	File    string         `json:"file"`                  // faults.applied.yaml
	List    []Intervention `json:"list"`
}

// Intervention is one change asked for and, once applied, the (episode, step) it took effect at.
type Intervention struct {
	ID     int    `json:"id"`     // 1, 2, ... in the order asked
	Op     string `json:"op"`     // add, change, remove, crash
	Target string `json:"target"` // link, partition, proc
	// Name is the rule or partition as the user names it (a changed rule keeps its name: its
	// versions are Name, Name.v2, ...), or the crashed process (plant.0, agent.3).
	Name string `json:"name"`
	// Rule is the entry of the faults the change put in force: the rule or partition's
	// version, or "crashes[k]".
	Rule    string `json:"rule,omitempty"`
	Applied bool   `json:"applied"`
	Episode int    `json:"episode"` // where it took effect (-1 while pending)
	Step    int    `json:"step"`
	Detail  string `json:"detail,omitempty"`
	// At is when it was asked for (UTC), Body the fields it was asked with (the request's
	// JSON body; none for a remove) and Requester who asked.
	At   time.Time      `json:"at"`
	Body map[string]any `json:"body,omitempty"`
	Requester
}

// Requester is who asked for a change (the live view's API): the client's address, User-Agent
// and Origin header (empty: none sent).
type Requester struct {
	RemoteAddr string `json:"remote_addr"`
	UserAgent  string `json:"user_agent"`
	Origin     string `json:"origin"`
}
