package launch

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The kinds of Problem.
const (
	ProblemNoResult         = "no-result"               // exited 0 without ctl.result or result file
	ProblemNoLinks          = "no-links"                // its result has no per-link counters
	ProblemNoTrace          = "no-trace"                // it wrote no trace file
	ProblemInvalid          = "invalid-messages"        // its receivers dropped messages of its as invalid
	ProblemNothingDelivered = "nothing-delivered"       // not one of its messages reached a receiver
	ProblemPermission       = "permission-violation"    // the server refused a publish or subscribe of its
	ProblemForged           = "forged-messages"         // messages in its name that its signature did not verify
	ProblemInvalidResult    = "invalid-result"          // its result (ctl.result and file) was refused
	ProblemRejectedValid    = "rejected-valid-messages" // it took none of a sender's messages that the others took
	ProblemLate             = "late-messages"           // most of its messages on a link came after their step
)

// ProblemsError is the error of the fatal problems among ps (nil: none).
func ProblemsError(ps []record.Problem) error {
	var fatal []string
	for _, p := range ps {
		if p.Fatal {
			fatal = append(fatal, p.String())
		}
	}
	if len(fatal) == 0 {
		return nil
	}
	return errors.New(strings.Join(fatal, "; "))
}

// attribute finds what each process of the stopped session did wrong, from what every
// process reported (its result, its receivers' per-sender drop counts and link counters), its
// files in cfg.Dir, and the embedded server's permission violations. A process that failed
// (its exit is the point's error already) is not blamed for what its failure left undone.
func (out *PointOutcome) attribute(sess *Session, cfg SessionConfig) []record.Problem {
	byKey := map[string]*ProcOutcome{}
	var ps []record.Problem
	for i := range out.Procs {
		pr := &out.Procs[i]
		key := endpoint.Endpoint{Role: pr.Role, ID: pr.ID}.String()
		byKey[key] = pr
		ps = append(ps, pr.contractProblems(key, out.Played, cfg.Dir, sess.resultRefusals(key, pr.Name))...)
	}
	ps = append(ps, out.deliveryProblems(byKey, cfg.Sign, cfg.Inflight > 1)...)
	ps = append(ps, out.lateProblems(byKey, &cfg.Plan.Scenario.Faults)...)
	ps = append(ps, out.forgedProblems()...)
	ps = append(ps, violationProblems(cfg, byKey)...)
	return ps
}

// contractProblems checks what process pr (sender key) must leave: a result with its links
// and a trace file, once it played episodes (played) and exited 0. refused says why its
// result was refused, when it sent one ("": it sent none).
func (pr *ProcOutcome) contractProblems(key string, played int, dir, refused string) []record.Problem {
	if pr.Failure != "" {
		return nil
	}
	blame := func(kind, detail string) record.Problem {
		return record.Problem{Process: pr.Name, Sender: key, Program: pr.Program, Kind: kind, Detail: detail, Fatal: true}
	}
	var ps []record.Problem
	switch {
	case pr.Result == nil && refused != "":
		ps = append(ps, blame(ProblemInvalidResult, refused+": the run cannot account for its messages"))
	case pr.Result == nil:
		ps = append(ps, blame(ProblemNoResult, fmt.Sprintf("no ctl.result and no %s: the run cannot account for its messages", contract.ResultFile(pr.Name))))
	case played > 0 && len(pr.Result.Links) == 0:
		ps = append(ps, blame(ProblemNoLinks, "its result has no links (the per-link counters of what it sent and received): the run's link accounting would be wrong"))
	}
	if played > 0 {
		if _, err := os.Stat(filepath.Join(dir, contract.TraceFile(pr.Name))); err != nil {
			ps = append(ps, blame(ProblemNoTrace, fmt.Sprintf("no trace file %s (one JSON line per step): its steps are in no metric", contract.TraceFile(pr.Name))))
		}
	}
	return ps
}

// senderDrops are the drops of one sender's messages: by reason, the most any one receiver
// dropped (each receiver judges its own copy, so their sum would count a message once per
// receiver), and by receiver their total.
type senderDrops struct {
	byReason   map[string]uint64
	byReceiver map[string]uint64
}

// count is the number of the sender's messages dropped: the most any receiver dropped.
func (d *senderDrops) count() uint64 {
	var most uint64
	for _, n := range d.byReceiver {
		most = max(most, n)
	}
	return most
}

func (d *senderDrops) String() string {
	return fmt.Sprintf("%s (dropped by %s)", joinCounts(d.byReason), joinCounts(d.byReceiver))
}

// joinCounts is "a 3, b 1", sorted by key.
func joinCounts(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// dropsBySender gathers every receiver's invalid drops by the sender their subject named (an
// agent host's block subject host.<i> is its process agent.<i>).
func (out *PointOutcome) dropsBySender() map[string]*senderDrops {
	drops := map[string]*senderDrops{}
	for _, pr := range out.Procs {
		if pr.Result == nil {
			continue
		}
		receiver := endpoint.Endpoint{Role: pr.Role, ID: pr.ID}.String()
		for sender, reasons := range pr.Result.Invalid.BySender {
			sender = processSender(sender)
			if n := reasons[wire.ReasonSignature.String()]; n > 0 { // not the sender's doing
				reasons = maps.Clone(reasons)
				delete(reasons, wire.ReasonSignature.String())
				out.forged(sender, receiver, n)
			}
			if len(reasons) == 0 {
				continue
			}
			d := drops[sender]
			if d == nil {
				d = &senderDrops{byReason: map[string]uint64{}, byReceiver: map[string]uint64{}}
				drops[sender] = d
			}
			for r, n := range reasons {
				d.byReason[r] = max(d.byReason[r], n)
				d.byReceiver[receiver] += n
			}
		}
	}
	return drops
}

// forged counts n messages in sender's name that receiver dropped because sender's signature
// did not verify them (PointOutcome.forgedBy).
func (out *PointOutcome) forged(sender, receiver string, n uint64) {
	if out.forgedBy == nil {
		out.forgedBy = map[string]map[string]uint64{}
	}
	if out.forgedBy[sender] == nil {
		out.forgedBy[sender] = map[string]uint64{}
	}
	out.forgedBy[sender][receiver] += n
}

// forgedProblems names the messages sent in a process's name by someone else (its signature
// did not verify them): counted, not blamed on it.
func (out *PointOutcome) forgedProblems() []record.Problem {
	senders := make([]string, 0, len(out.forgedBy))
	for s := range out.forgedBy {
		senders = append(senders, s)
	}
	sort.Strings(senders)
	var ps []record.Problem
	for _, s := range senders {
		var most uint64
		for _, n := range out.forgedBy[s] {
			most = max(most, n)
		}
		ps = append(ps, record.Problem{Process: "(not a process of the run)", Sender: s, Kind: ProblemForged, Count: most,
			Detail: fmt.Sprintf("%d message(s) in the name of %s failed its signature and were dropped (by %s): someone else published on its subjects",
				most, s, joinCounts(out.forgedBy[s]))})
	}
	return ps
}

// processSender maps a subject's sender to its process's sender name: host.<i> to agent.<i>.
func processSender(s string) string {
	if rest, ok := strings.CutPrefix(s, endpoint.Block.String()+"."); ok {
		return endpoint.Agent.String() + "." + rest
	}
	return s
}

// deliveryProblems blames each sender whose messages its receivers dropped as invalid, and
// fails a sender none of whose messages reached some receiver on a link the scenario's
// faults did not cut (the metrics would be computed from the missing-input rules alone). When
// no episode completed (the first group failed), a link that delivered nothing blames its
// sender only if its receivers dropped its messages as invalid: a group cut short says
// nothing else about them.
//
// A user's program (--role) that took none of the messages of one of dpsim's own processes,
// which another receiver took, misreads them: it is blamed, not the sender (inflight: several
// episodes were in flight, and each message carried the values of all of them).
//
// Unsigned (signed false), a message is the named sender's only by its subject: on a server
// without permissions another client may have published it, and the detail says so.
func (out *PointOutcome) deliveryProblems(byKey map[string]*ProcOutcome, signed, inflight bool) []record.Problem {
	drops := out.dropsBySender()
	var ps []record.Problem
	blame := func(sender string) record.Problem {
		p := record.Problem{Sender: sender, Process: sender}
		if pr := byKey[sender]; pr != nil {
			p.Process, p.Program = pr.Name, pr.Program
		}
		return p
	}
	nothing := map[string][]string{} // sender -> receivers that got none of its messages
	misread := map[string][]string{} // receiver (a user's program) -> what it did not take
	misreadNone := map[string]bool{} // of those, the receivers that took none of some sender's
	if out.Results != nil {
		took := map[string][]string{} // sender -> "receiver n" of those that took its messages
		best := map[string]uint64{}   // sender -> the most any receiver took
		for _, lk := range out.Results.Links {
			if from, to, ok := strings.Cut(lk.Link, "->"); ok && lk.Delivered > 0 {
				took[from] = append(took[from], fmt.Sprintf("%s %d", to, lk.Delivered))
				best[from] = max(best[from], lk.Delivered)
			}
		}
		for _, lk := range out.Results.Links {
			from, to, ok := strings.Cut(lk.Link, "->")
			if !ok {
				continue
			}
			cut := lk.Sent > 0 && lk.Dropped+lk.Expired+lk.Lost >= lk.Sent // the scenario's faults took them all
			recv, sender := byKey[processSender(to)], processSender(from)
			if misreads(recv, byKey[sender], lk.Delivered, best[from]) {
				misread[processSender(to)] = append(misread[processSender(to)],
					fmt.Sprintf("%d of the %d message(s) of %s, of which the others took %s", lk.Delivered, lk.Sent, from, strings.Join(took[from], ", ")))
				misreadNone[processSender(to)] = misreadNone[processSender(to)] || lk.Delivered == 0
				continue
			}
			if lk.Delivered > 0 || cut || !reported(recv) {
				continue
			}
			if out.Played > 0 || (lk.Sent > 0 && drops[sender] != nil) {
				nothing[sender] = append(nothing[sender], to)
			}
		}
	}
	receivers := make([]string, 0, len(misread))
	for r := range misread {
		receivers = append(receivers, r)
	}
	sort.Strings(receivers)
	for _, r := range receivers {
		p := blame(r)
		p.Kind, p.Fatal = ProblemRejectedValid, misreadNone[r]
		p.Detail = "it took " + strings.Join(misread[r], "; ") + ": it misreads valid messages"
		if res := byKey[r].Result; res.Invalid.Dropped > 0 {
			p.Count = res.Invalid.Dropped
			p.Detail += fmt.Sprintf(" (its result: %d dropped as invalid: %s)", res.Invalid.Dropped, joinCounts(res.Invalid.ByReason))
		}
		if inflight {
			p.Detail += "; with episodes in flight (--inflight) a message carries the values of several episodes, as its header Dpsim-Episodes says (docs/protocol.md)"
		}
		ps = append(ps, p)
	}
	senders := make([]string, 0, len(drops)+len(nothing))
	for s := range drops {
		senders = append(senders, s)
	}
	for s := range nothing {
		if drops[s] == nil {
			senders = append(senders, s)
		}
	}
	sort.Strings(senders)
	for _, s := range senders {
		d := drops[s]
		if to := nothing[s]; len(to) > 0 {
			p := blame(s)
			p.Kind, p.Fatal = ProblemNothingDelivered, true
			if out.Played > 0 {
				p.Detail = fmt.Sprintf("not one of its messages reached %s in %d episode(s)", strings.Join(to, ", "), out.Played)
			} else {
				p.Detail = fmt.Sprintf("not one of its messages reached %s before the run stopped (no episode completed)", strings.Join(to, ", "))
			}
			if d != nil {
				p.Count = d.count()
				p.Detail += fmt.Sprintf("; its receivers dropped them as invalid: %s", d)
			}
			ps = append(ps, p)
			continue
		}
		p := blame(s)
		p.Kind, p.Count = ProblemInvalid, d.count()
		p.Detail = fmt.Sprintf("%d of its message(s) dropped as invalid: %s", p.Count, d)
		if !signed {
			p.Detail += " (unsigned: its by their subject; on a server without permissions another client may have sent them)"
		}
		ps = append(ps, p)
	}
	return ps
}

// lateProblems names the user's programs (--role) most of whose messages on a link came after
// their step, on a link the scenario delays no message of: it publishes too late (not fatal:
// the receivers applied their missing-input rules, and the run is degraded by those steps).
func (out *PointOutcome) lateProblems(byKey map[string]*ProcOutcome, f *scenario.FaultsSpec) []record.Problem {
	if out.Results == nil || f.Active() {
		return nil
	}
	late := map[string][]string{}
	var most = map[string]uint64{}
	for _, lk := range out.Results.Links {
		from, to, ok := strings.Cut(lk.Link, "->")
		sender := processSender(from)
		if pr := byKey[sender]; !ok || pr == nil || pr.Program == "" || 2*lk.Late <= lk.Sent {
			continue
		}
		late[sender] = append(late[sender], fmt.Sprintf("%d of %d to %s", lk.Late, lk.Sent, to))
		most[sender] = max(most[sender], lk.Late)
	}
	senders := make([]string, 0, len(late))
	for s := range late {
		senders = append(senders, s)
	}
	sort.Strings(senders)
	var ps []record.Problem
	for _, s := range senders {
		pr := byKey[s]
		ps = append(ps, record.Problem{Process: pr.Name, Sender: s, Program: pr.Program, Kind: ProblemLate, Count: most[s],
			Detail: fmt.Sprintf("most of its messages came after their step (%s), on links the scenario delays nothing on: it publishes a step's message late (docs/protocol.md: as soon as the step's input came)",
				strings.Join(late[s], ", "))})
	}
	return ps
}

// misreads says that recv, a user's program (--role), misread the messages of sender, one of
// dpsim's own processes: it took (delivered) fewer of them than another receiver took (best),
// none or dropping some as invalid. A receiver late for its messages takes fewer without
// dropping any (stale copies): that is not misreading.
func misreads(recv, sender *ProcOutcome, delivered, best uint64) bool {
	if !reported(recv) || recv.Program == "" || sender == nil || sender.Program != "" || delivered >= best {
		return false
	}
	return delivered == 0 || recv.Result.Invalid.Dropped > 0
}

// reported says a receiver reported its receive-side link counters: of one that did not (no
// result, no links: its own problem), a link's Delivered 0 says nothing of the sender.
func reported(pr *ProcOutcome) bool {
	return pr != nil && pr.Result != nil && len(pr.Result.Links) > 0
}

// violationProblems blames the processes whose publishes or subscriptions the embedded server
// refused (bus.Embedded.Violations), by their NATS user.
func violationProblems(cfg SessionConfig, byKey map[string]*ProcOutcome) []record.Problem {
	servers := []*bus.Embedded{cfg.Server}
	if cfg.Cluster != nil {
		servers = cfg.Cluster.Members
	}
	userOf := map[string]string{} // NATS user -> sender
	for sender, u := range cfg.Users {
		userOf[u.Name] = sender
	}
	var ps []record.Problem
	for _, srv := range servers {
		if srv == nil {
			continue
		}
		for _, v := range srv.Violations() {
			sender, ok := userOf[v.User]
			if !ok {
				continue // another point's process, or not one of this run's
			}
			p := record.Problem{Process: sender, Sender: sender, Kind: ProblemPermission, Count: v.Count,
				Detail: fmt.Sprintf("the server refused %d %s(s) on %s (not its subject: docs/protocol.md)", v.Count, v.Op, v.Subject)}
			if pr := byKey[sender]; pr != nil {
				p.Process, p.Program = pr.Name, pr.Program
			}
			ps = append(ps, p)
		}
	}
	return ps
}
