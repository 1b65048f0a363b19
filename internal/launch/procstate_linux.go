package launch

import (
	"os"
	"strconv"
	"strings"
)

// osStopped reports whether the process pid is stopped (SIGSTOP, SIGTSTP, a debugger): its
// state in /proc/<pid>/stat is T or t.
func osStopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses; the state follows the last ')'
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] == 'T' || data[i+2] == 't'
}

// describePID is " (COMMAND)" of the process pid, from /proc/<pid>/cmdline ("": not known).
func describePID(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return ""
	}
	cmd := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
	if len(cmd) > 120 {
		cmd = cmd[:120] + "..."
	}
	return " (" + cmd + ")"
}
