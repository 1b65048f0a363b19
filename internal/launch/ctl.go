package launch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// ctlState is the launcher's side of the ctl protocol: its subscriptions, the events they
// deliver, and which process is accepted for each sender.
type ctlState struct {
	subs     []*bus.Subscription
	events   chan ctlEvent
	counters wire.Counters // the coordination messages received, accepted and dropped

	mu      sync.Mutex
	results map[string]*contract.ProcessResult
	// pids is the process accepted for each sender: the child spawned for it, or in attach
	// mode the first pid that announced itself. A ready or done from another pid is a second
	// process claiming the sender (a stray on the same run id): conflict, and the run fails.
	pids     map[string]int
	conflict error
	// refused is why a sender's ctl.result was refused (the first reason), by sender.
	refused map[string]string
}

type ctlEvent struct {
	word   string
	sender string
	ep     int
	done   contract.Done // a ctl.done's payload
	result *contract.ProcessResult
}

// kindConflict is the event word of a ready or done from a second process claiming a sender.
const kindConflict = "conflict"

// subscribe handles ready, done and result messages; invalid ones are counted and dropped.
func (s *Session) subscribe() error {
	results, err := s.conn.SubscribeDocuments(s.subj.AllCtlWord(wire.CtlResult), &s.ctl.counters, func(subject string, data []byte) {
		r, err := contract.DecodeResult(data, s.cfg.Run)
		if err != nil {
			s.ctl.counters.DropErr(err)
			s.refuseResult(subject, err.Error())
			return
		}
		key := r.Role + "." + strconv.Itoa(r.ID)
		if s.byKey[key] == nil || !s.owns(key, r.PID) {
			s.ctl.counters.Drop(wire.ReasonSender)
			s.refuseResult(subject, fmt.Sprintf("it names %s, pid %d, which is not the process that announced itself on %s", key, r.PID, subject))
			return
		}
		s.ctl.mu.Lock()
		s.ctl.results[key] = r
		s.ctl.mu.Unlock()
	})
	if err != nil {
		return err
	}
	s.ctl.subs = append(s.ctl.subs, results)
	for _, w := range []string{wire.CtlReady, wire.CtlDone} {
		word := w
		o := bus.CtlOptions{Expect: wire.Expect{Run: s.cfg.Run, Episode: wire.AnyEpisode, Kind: word}, Counters: &s.ctl.counters}
		sub, err := s.conn.SubscribeCtl(s.subj.AllCtlWord(word), o, func(subject string, m *wire.Message) {
			if s.byKey[m.Sender] == nil || !strings.HasSuffix(subject, "."+m.Sender) {
				s.ctl.counters.Drop(wire.ReasonSender)
				return
			}
			pid, err := contract.PID(m)
			var done contract.Done
			if err == nil && word == wire.CtlDone {
				done, err = contract.ParseDone(m)
			}
			if err != nil {
				s.ctl.counters.DropErr(err)
				return
			}
			ev := word
			if word == wire.CtlReady && !s.checkPlan(m) {
				s.ctl.counters.Drop(wire.ReasonSender)
				ev = kindConflict
			} else if !s.claim(m.Sender, pid, word) {
				s.ctl.counters.Drop(wire.ReasonSender)
				ev = kindConflict // wake the waits: they return the conflict
			}
			select {
			case s.ctl.events <- ctlEvent{word: ev, sender: m.Sender, ep: m.Episode, done: done}:
			default:
				s.ctl.counters.Drop(wire.ReasonAhead)
			}
		})
		if err != nil {
			return err
		}
		s.ctl.subs = append(s.ctl.subs, sub)
	}
	return s.conn.Flush(5 * time.Second)
}

// refuseResult records why the ctl.result on subject (ctl.result.<role>.<id>) was refused,
// for the sender the subject names (the first reason is kept).
func (s *Session) refuseResult(subject, why string) {
	parts := strings.Split(subject, ".")
	if len(parts) < 2 {
		return
	}
	sender := parts[len(parts)-2] + "." + parts[len(parts)-1]
	if s.byKey[sender] == nil {
		return
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	if s.ctl.refused == nil {
		s.ctl.refused = map[string]string{}
	}
	if _, ok := s.ctl.refused[sender]; !ok {
		s.ctl.refused[sender] = why
	}
}

// resultRefusals says why the result of sender (process name) was refused: its ctl.result,
// its result file ("": it sent none, and wrote none that was refused).
func (s *Session) resultRefusals(sender, name string) string {
	s.ctl.mu.Lock()
	msg := s.ctl.refused[sender]
	s.ctl.mu.Unlock()
	var fileErr error
	if p := s.byKey[sender]; p != nil {
		fileErr = p.resultErr
	}
	switch {
	case msg == "" && fileErr == nil:
		return ""
	case msg == "":
		return fmt.Sprintf("no ctl.result, and its result file was refused: %v", fileErr)
	case fileErr == nil:
		return fmt.Sprintf("its ctl.result was refused (%s), and there is no %s", msg, contract.ResultFile(name))
	}
	return fmt.Sprintf("its ctl.result was refused (%s), and its result file too: %v", msg, fileErr)
}

// claim checks that a ready or done of sender comes from the process accepted for it: the
// child spawned for it, or in attach mode the first pid heard. It records the first
// conflict and returns false for a message of another process.
func (s *Session) claim(sender string, pid int, word string) bool {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	own, known := s.ctl.pids[sender]
	switch {
	case known && own == pid:
		return true
	case known && s.byKey[sender] != nil && s.byKey[sender].Program != "" && pid > 0 && inGroup(pid, own):
		// a user's program runs under sh (--role): the process that speaks is in its group
		s.ctl.pids[sender] = pid
		s.byKey[sender].pid = pid
		return true
	case !known && s.cfg.Attach && pid > 0:
		s.ctl.pids[sender] = pid
		if p := s.byKey[sender]; p != nil {
			p.pid = pid
		}
		return true
	}
	if s.ctl.conflict == nil {
		switch {
		case known && !s.cfg.Attach && !processExists(pid):
			// no process has that pid: not a second process, the sender's own saying a wrong pid
			s.ctl.conflict = fmt.Errorf("%s: its ctl.%s says pid %d, which is no process on this machine (its own is pid %d): it sends a wrong pid (docs/protocol.md 3: the pid of the process that speaks, getpid())",
				s.byKey[sender].who(), word, pid, own)
		case known && s.cfg.Attach:
			s.ctl.conflict = fmt.Errorf("run %s: two processes claim %s: pid %d and pid %d (ctl.%s): another process uses this run id; stop it, or pick another run id",
				s.cfg.Run, sender, own, pid, word)
		case known:
			s.ctl.conflict = fmt.Errorf("run %s: %s is claimed by pid %d%s, which this launcher did not start (its own %s is pid %d; ctl.%s): another process uses this run id; stop it, or pick another --run-id",
				s.cfg.Run, sender, pid, describePID(pid), s.byKey[sender].Name, own, word)
		default:
			s.ctl.conflict = fmt.Errorf("run %s: %s is claimed by pid %d%s, which this launcher did not start (ctl.%s before its own process started): another process uses this run id; stop it, or pick another --run-id",
				s.cfg.Run, sender, pid, describePID(pid), word)
		}
	}
	return false
}

// owns reports whether pid is the process accepted for sender (a result of another is dropped).
func (s *Session) owns(sender string, pid int) bool {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	own, known := s.ctl.pids[sender]
	return known && own == pid
}

// conflictErr returns the first conflict (nil: none).
func (s *Session) conflictErr() error {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return s.ctl.conflict
}

// waitReady waits until every process announced itself ready (ctl.ready). A conflict, a process
// that exits, an interrupt or --start-timeout stops the session and returns the error.
func (s *Session) waitReady(ctx context.Context) error {
	waiting := map[string]bool{}
	for k := range s.byKey {
		waiting[k] = true
	}
	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	for len(waiting) > 0 {
		select {
		case ev := <-s.ctl.events:
			s.seen(ev)
			if err := s.conflictErr(); err != nil {
				_ = s.shutdown()
				return err
			}
			if ev.word == wire.CtlReady {
				delete(waiting, ev.sender)
			}
		case p := <-s.exits:
			_ = s.shutdown()
			return fmt.Errorf("%s exited before it was ready: %s", p.who(), p.Failure())
		case <-ctx.Done():
			_ = s.shutdown()
			return fmt.Errorf("interrupted while starting the processes: %w", context.Cause(ctx))
		case <-timer.C:
			_ = s.shutdown()
			return fmt.Errorf("processes not ready within %v: %s", s.cfg.StartTimeout, s.joinSenders(waiting))
		}
	}
	return nil
}

// joinSenders lists the senders of m, sorted and comma-separated, each played by a user's
// program with its command (--role): the processes an error names.
func (s *Session) joinSenders(m map[string]bool) string {
	var out []string
	for k := range m {
		if p := s.byKey[k]; p != nil && p.Program != "" {
			k += fmt.Sprintf(" (--role %s=%q)", k, p.Program)
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// awaitResults waits, in attach mode, until every process that announced itself sent its
// ctl.result after ctl.stop (bounded by d): the launcher cannot wait for the exit of a
// process it did not start, and stopping the server earlier would lose what is in flight.
func (s *Session) awaitResults(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		var missing []string
		s.ctl.mu.Lock()
		for key := range s.ctl.pids {
			if s.ctl.results[key] == nil {
				missing = append(missing, key)
			}
		}
		s.ctl.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.cfg.Log.Warn().Strs("procs", missing).Dur("waited", d).Msg("attach: no ctl.result after ctl.stop")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopRepeat is how often shutdown repeats ctl.stop while processes have not exited.
const stopRepeat = 100 * time.Millisecond

// publishStop sends ctl.stop (nothing when the connection is gone).
func (s *Session) publishStop() {
	if s.conn != nil && !s.conn.IsClosed() {
		_ = s.conn.Publish(s.subj.CtlStop(), contract.StopMessage(s.cfg.Run))
		_ = s.conn.Flush(2 * time.Second)
	}
}

// Result returns the process's result: its ctl.result message, else its result file.
func (s *Session) Result(p *Proc) *contract.ProcessResult {
	if p.result != nil {
		return p.result
	}
	s.ctl.mu.Lock()
	r := s.ctl.results[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]
	s.ctl.mu.Unlock()
	if r == nil {
		var err error
		r, err = contract.ReadResultFile(filepath.Join(s.cfg.Dir, contract.ResultFile(p.Name)), s.cfg.Run)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.resultErr = err
		}
	}
	p.result = r
	return r
}

// CtlInvalid returns the launcher's counts of coordination messages.
func (s *Session) CtlInvalid() wire.CountersSnapshot { return s.ctl.counters.Snapshot() }
