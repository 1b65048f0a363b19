package rss

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// Sources of contract.ProcessResult.PeakRSSSource.
const (
	// VmHWM is the VmHWM line of /proc/self/status (Linux): the peak resident set of this
	// process's own address space, which exec starts afresh.
	VmHWM = "VmHWM"
	// Getrusage is ru_maxrss of getrusage(RUSAGE_SELF), used where /proc is missing. On
	// Linux it would include the memory of the parent at fork/exec (the launcher's), which is
	// why VmHWM is preferred there.
	Getrusage = "getrusage"
)

// Peak returns this process's peak resident set size in bytes and where it was read (VmHWM
// or Getrusage); 0 and "" when neither is available.
func Peak() (int64, string) {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		if v, ok := parseVmHWM(data); ok {
			return v, VmHWM
		}
	}
	if v := rusageMaxRSS(); v > 0 {
		return v, Getrusage
	}
	return 0, ""
}

// Current returns the current resident set size in bytes of process pid (the VmRSS line of
// /proc/<pid>/status: Linux); false when it cannot be read (another platform, the process
// gone).
func Current(pid int) (int64, bool) {
	if pid <= 0 {
		return 0, false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	return parseKB(data, "VmRSS:")
}

// parseVmHWM reads "VmHWM:   23456 kB" from the contents of /proc/<pid>/status.
func parseVmHWM(status []byte) (int64, bool) { return parseKB(status, "VmHWM:") }

// parseKB reads the line "<field>   23456 kB" of /proc/<pid>/status, in bytes.
func parseKB(status []byte, field string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, found := bytes.CutPrefix(sc.Bytes(), []byte(field))
		if !found {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
