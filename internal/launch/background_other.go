//go:build !linux

package launch

// backgroundThread does nothing here: only Linux sets the priority of one thread (see the
// Linux version).
func backgroundThread() {}
