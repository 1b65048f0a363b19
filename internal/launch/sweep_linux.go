//go:build linux

package launch

import (
	"bytes"
	"maps"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dpsim/dpsim/pkg/record"
)

// sweepPoll is how often the sweep looks whether its signals took effect.
const sweepPoll = 20 * time.Millisecond

// sweep ends every process that carries this session's EnvLaunch tag or belongs to the
// process group of one of its children, after the children themselves exited or were killed:
// SIGTERM, then SIGKILL killGrace later for what still runs (docs/protocol.md, section 2.3).
// A process that both cleared its environment and left the group escapes it (documented).
func (s *Session) sweep() []record.Leftover {
	s.ctl.mu.Lock()
	tag, groups := s.launchTag, maps.Clone(s.groups)
	s.ctl.mu.Unlock()
	if tag == "" {
		return nil
	}
	own := owner{tag: tag, groups: groups}
	found := own.find()
	if len(found) == 0 {
		return nil
	}
	var out []record.Leftover
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for pid := range found {
			if own.of(pid) == "" { // gone, or its pid now names another process
				delete(found, pid)
				continue
			}
			_ = syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(killGrace)
		for len(found) > 0 && time.Now().Before(deadline) {
			for pid, of := range found {
				if !alive(pid) {
					out = append(out, record.Leftover{PID: pid, Command: comm(pid), Of: of, Signal: signalName(sig)})
					delete(found, pid)
				}
			}
			time.Sleep(sweepPoll)
		}
	}
	for pid, of := range found { // not even SIGKILL ended it (uninterruptible sleep): name it
		out = append(out, record.Leftover{PID: pid, Command: comm(pid), Of: of, Signal: "SIGKILL (still running)"})
	}
	return out
}

// owner recognises a session's processes: by their EnvLaunch mark, or their process group.
type owner struct {
	tag    string
	groups map[int]string // process group -> the child leading it
}

// find lists the live processes of the session other than the launcher: pid -> the child
// they came from.
func (o owner) find() map[int]string {
	found := map[int]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !alive(pid) {
			continue
		}
		if of := o.of(pid); of != "" {
			found[pid] = of
		}
	}
	return found
}

// of names the child a process came from ("" when it is not the session's): by its EnvLaunch
// mark, else by its process group.
func (o owner) of(pid int) string {
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil {
		prefix := []byte(EnvLaunch + "=" + o.tag + "/")
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if name, ok := bytes.CutPrefix(kv, prefix); ok {
				return string(name)
			}
		}
	}
	// A group's members share the launcher's session (Setpgid leaves it): a reused pid that
	// leads some other session's group is not mistaken for a child's group.
	pgid, err1 := syscall.Getpgid(pid)
	sid, err2 := getsid(pid)
	self, err3 := getsid(0)
	if err1 == nil && err2 == nil && err3 == nil && sid == self {
		if name, ok := o.groups[pgid]; ok {
			return name
		}
	}
	return ""
}

// alive reports whether pid exists and is not a zombie (a zombie has ended: only its exit
// status waits for its parent).
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(st, ')')
	return i < 0 || i+2 >= len(st) || st[i+2] != 'Z'
}

// comm is a process's executable name ("?" once it is gone).
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// getsid returns the session id of pid (0: the caller).
func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
