package launch

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/dpsim/dpsim/pkg/record"
)

// EnvLaunch marks every process a launcher starts, and every descendant that keeps its
// environment, with "<launcher tag>/<process name>": the sweep at the end of a session finds
// what the run left behind by it (a --role program's children, one that called setsid, one
// that ignores SIGTERM) and says whose it was.
const EnvLaunch = "DPSIM_LAUNCH"

// newLaunchTag is a random tag for one session's EnvLaunch marks: two sessions (a resumed
// run, a second run beside it) never claim each other's processes.
func newLaunchTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Leftovers returns the processes the session's sweep had to end (nil before Stop, or when
// everything had exited).
func (s *Session) Leftovers() []record.Leftover { return s.leftovers }
