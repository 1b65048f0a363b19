//go:build !linux

package launch

// osStopped reports whether the process pid is stopped: not known here.
func osStopped(int) bool { return false }

// describePID is the command of the process pid: not known here.
func describePID(int) string { return "" }
