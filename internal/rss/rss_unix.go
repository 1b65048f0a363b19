//go:build unix

package rss

import (
	"runtime"
	"syscall"
)

// rusageMaxRSS returns ru_maxrss of getrusage(RUSAGE_SELF) in bytes (0 on error).
func rusageMaxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	v := int64(ru.Maxrss)
	if runtime.GOOS != "darwin" { // Linux and the BSDs report kilobytes, macOS bytes
		v *= 1024
	}
	return v
}
