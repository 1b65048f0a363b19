//go:build unix

package launch

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// setProcAttr puts a child in its own process group: a Ctrl-C on the terminal reaches only
// the launcher, which then stops the children itself (ctl.stop, then SIGTERM, then SIGKILL).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate asks a child to flush and exit: its process group, so that a user's program
// started through sh (--role) gets it too, not only the shell.
func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill kills a child's process group (see terminate).
func kill(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }

// inGroup reports whether pid is in the process group of leader: a process a user's program
// started through sh (--role: the shell is the child, the program or its own child announces
// itself in ctl.ready).
func inGroup(pid, leader int) bool {
	g, err := syscall.Getpgid(pid)
	return err == nil && g == leader
}

// ResourceUsage returns the peak resident set size (bytes) and CPU times (seconds) of an exited child.
func ResourceUsage(ps *os.ProcessState) (maxRSS int64, user, sys float64) {
	if ps == nil {
		return 0, 0, 0
	}
	user, sys = ps.UserTime().Seconds(), ps.SystemTime().Seconds()
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, user, sys
	}
	maxRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" { // Linux and the BSDs report kilobytes, macOS bytes
		maxRSS *= 1024
	}
	return maxRSS, user, sys
}

// killed reports whether the process was killed by SIGKILL (a crash of the scenario).
func killed(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// processExists reports whether a process pid exists (kill(pid, 0) does not say ESRCH).
func processExists(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}
