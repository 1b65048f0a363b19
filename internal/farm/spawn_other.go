//go:build !linux

package farm

import "os/exec"

// dieWithParent: elsewhere a spawned worker whose coordinator died exits once its connection's
// reconnects are exhausted (about 30 s).
func dieWithParent(*exec.Cmd) {}
