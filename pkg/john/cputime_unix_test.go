//go:build unix

package john

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time of the process (all threads): unlike wall time it
// is not inflated when other sessions share the cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
