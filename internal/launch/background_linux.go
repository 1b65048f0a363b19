package launch

import (
	"runtime"
	"syscall"
)

// backgroundNice is the nice value of the launcher's background merges (backgroundThread).
const backgroundNice = 10

// backgroundThread runs the calling goroutine from now on in an OS thread of its own at nice
// backgroundNice, so that the kernel gives a core to the processes of the episodes in flight -
// and to the embedded NATS server relaying their messages - before the merge of the previous
// group, which has until the next group ends to finish. Linux sets the priority of a thread
// given its thread id. The goroutine must end without unlocking: the thread ends with it, and
// no other goroutine ever runs at the lowered priority. A refused setpriority is harmless
// (the merge runs at the launcher's priority).
func backgroundThread() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), backgroundNice)
}
