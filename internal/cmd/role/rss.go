package role

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// Sources of ProcessResult.PeakRSSSource.
const (
	// RSSVmHWM is the VmHWM line of /proc/self/status (Linux): the peak resident set of this
	// process's own address space, which exec starts afresh.
	RSSVmHWM = "VmHWM"
	// RSSGetrusage is ru_maxrss of getrusage(RUSAGE_SELF), used where /proc is missing. On
	// Linux it would include the memory of the parent at fork/exec (the launcher's), which is
	// why VmHWM is preferred there.
	RSSGetrusage = "getrusage"
)

// PeakRSS returns this process's peak resident set size in bytes (0 when unknown): what the
// launcher reports of itself.
func PeakRSS() int64 {
	v, _ := peakRSS()
	return v
}

// peakRSS returns this process's peak resident set size in bytes and where it was read
// (RSSVmHWM or RSSGetrusage); 0 and "" when neither is available.
func peakRSS() (int64, string) {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		if v, ok := parseVmHWM(data); ok {
			return v, RSSVmHWM
		}
	}
	if v := rusageMaxRSS(); v > 0 {
		return v, RSSGetrusage
	}
	return 0, ""
}

// parseVmHWM reads "VmHWM:   23456 kB" from the contents of /proc/<pid>/status.
func parseVmHWM(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, found := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
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
