//go:build !unix

package launch

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func terminate(p *os.Process) error { return p.Kill() }

func kill(p *os.Process) error { return p.Kill() }

// inGroup: process groups are not known here; a program must announce the pid it was started with.
func inGroup(pid, leader int) bool { return false }

// ResourceUsage returns the CPU times (seconds) of an exited child; its peak resident set is
// not known here (0).
func ResourceUsage(ps *os.ProcessState) (maxRSS int64, user, sys float64) {
	if ps == nil {
		return 0, 0, 0
	}
	return 0, ps.UserTime().Seconds(), ps.SystemTime().Seconds()
}

// killed reports whether the process was killed (a crash of the scenario): not known here.
func killed(*os.ProcessState) bool { return false }

// processExists reports whether a process pid exists: not known here (true: a pid is believed).
func processExists(pid int) bool { return true }
