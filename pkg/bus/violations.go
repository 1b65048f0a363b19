package bus

import (
	"fmt"
	"regexp"
	"sort"
	"sync"
)

// Violation is a client's attempt, refused by an embedded server, to publish or subscribe on a
// subject its permissions do not allow (User's Publish and Subscribe): the server's own word
// on who tried what, which a process that ignores the error it gets back cannot hide.
type Violation struct {
	User    string `json:"user"`    // the NATS user (UserName: "<run>-<role>-<id>")
	Op      string `json:"op"`      // publish or subscribe
	Subject string `json:"subject"` // the subject refused
	Count   uint64 `json:"count"`   // how many times
}

// maxViolationKeys bounds the distinct (user, op, subject) a server remembers: a flood of
// random subjects is counted under the last key rather than grow the memory.
const maxViolationKeys = 1000

// violationLog is the embedded server's logger: it keeps the permission violations the server
// reports (client.go: `<conn> - "$G/user:NAME" - Publish Violation - Subject "S"`) and
// drops every other line (the server otherwise does not log: StartEmbedded).
type violationLog struct {
	mu   sync.Mutex
	seen map[[3]string]uint64
	over uint64 // violations past maxViolationKeys
}

var violationLine = regexp.MustCompile(`/user:([^"]*)".* - (Publish|Subscription) Violation - .*Subject "([^"]*)"`)

func (l *violationLog) Errorf(format string, v ...any) {
	m := violationLine.FindStringSubmatch(fmt.Sprintf(format, v...))
	if m == nil {
		return
	}
	op := "publish"
	if m[2] == "Subscription" {
		op = "subscribe"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[[3]string]uint64{}
	}
	k := [3]string{m[1], op, m[3]}
	if _, ok := l.seen[k]; !ok && len(l.seen) >= maxViolationKeys {
		l.over++
		return
	}
	l.seen[k]++
}

func (*violationLog) Noticef(string, ...any) {}
func (*violationLog) Warnf(string, ...any)   {}
func (*violationLog) Fatalf(string, ...any)  {}
func (*violationLog) Debugf(string, ...any)  {}
func (*violationLog) Tracef(string, ...any)  {}

// list returns the violations so far, sorted by user, op and subject (plus one entry with an
// empty subject counting those past maxViolationKeys).
func (l *violationLog) list() []Violation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Violation, 0, len(l.seen)+1)
	for k, n := range l.seen {
		out = append(out, Violation{User: k[0], Op: k[1], Subject: k[2], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.User != b.User {
			return a.User < b.User
		}
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		return a.Subject < b.Subject
	})
	if l.over > 0 {
		out = append(out, Violation{User: "?", Op: "publish or subscribe", Count: l.over})
	}
	return out
}

// Violations returns the permission violations the server has reported since it started
// (across restarts), by user, operation and subject.
func (e *Embedded) Violations() []Violation { return e.opts.violations.list() }
