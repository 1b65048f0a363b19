package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// EnvLaunch marks every process a launcher starts, and every descendant that keeps its
// environment, with "<launcher tag>/<process name>": the sweep at the end of a session finds
// what the run left behind by it (a --role program's children, one that called setsid, one
// that ignores SIGTERM) and says whose it was.
const EnvLaunch = "DPSIM_LAUNCH"

// Leftover is a process the session started, or one of its descendants, that still ran after
// every child had exited or been killed: the sweep ended it.
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

// newLaunchTag is a random tag for one session's EnvLaunch marks: two sessions (a resumed
// run, a second run beside it) never claim each other's processes.
func newLaunchTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Leftovers returns the processes the session's sweep had to end (nil before Stop, or when
// everything had exited).
func (s *Session) Leftovers() []Leftover { return s.leftovers }
