//go:build !linux

package launch

// osStopped reports whether the process pid is stopped: not known here.
func osStopped(int) bool { return false }
