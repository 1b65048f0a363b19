package farm

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a spawned worker when the coordinator's process dies (a
// SIGKILL, a crash: no Close to stop it), so that no worker outlives it; a durable farm's
// coordinator started again spawns its own. (Linux: the parent death signal.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
