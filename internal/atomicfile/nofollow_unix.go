//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// noFollow makes open(2) fail on a symbolic link at the last component of the path (and not
// block on a FIFO someone put there: OpenNoFollow then refuses it as not a regular file).
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// ownedBySelf reports whether fi is owned by the effective user of this process.
func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
