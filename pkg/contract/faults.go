package contract

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// LiveFaultsVersion is the version of a LiveFaults file.
const LiveFaultsVersion = 1

// LiveFaults is a change of a run's faults while it goes (dpsim run --ui interventions): the
// link rules, partitions and crashes in force from step 0 of episode Episode on, each change
// recorded in them with its lifetime (scenario.Lifetime) or as an ordinary crash. The launcher
// writes it to LiveFaultsFile(Generation) in the processes' directory (beside their plan
// files), then sends ctl.faults (FaultsMessage) on ctl.episode before that episode's
// ctl.episode. A process reads the file, checks its digest and run, and replaces its
// scenario's links, partitions and crashes with these before the episode begins; the other
// fields of Faults (missing-input rules, server restarts, proxies) are the scenario's.
type LiveFaults struct {
	V          int    `json:"v"`
	Run        string `json:"run"`
	Generation int    `json:"generation"` // 1, 2, ...: one per change sent
	Episode    int    `json:"episode"`    // the first episode the faults apply to
	// Step is the step of Episode they apply from: 0 between episodes; later in a realtime
	// episode in progress, where only the link rules and partitions change (their lifetimes
	// begin there).
	Step   int                 `json:"step,omitempty"`
	Faults scenario.FaultsSpec `json:"faults"`
}

// LiveFaultsFile is the file of generation gen of a run's live faults in the processes'
// directory.
func LiveFaultsFile(gen int) string { return "faults.live." + strconv.Itoa(gen) + ".json" }

// EncodeLiveFaults returns the bytes of lf's file and their digest (plan.FileDigest: 48 bits,
// exact in a float64).
func EncodeLiveFaults(lf LiveFaults) ([]byte, uint64, error) {
	lf.V = LiveFaultsVersion
	b, err := json.Marshal(lf)
	if err != nil {
		return nil, 0, fmt.Errorf("live faults: %w", err)
	}
	return b, plan.FileDigest(b), nil
}

// DecodeLiveFaults reads a LiveFaults file whose ctl.faults named generation gen and digest.
func DecodeLiveFaults(b []byte, run string, gen int, digest uint64) (LiveFaults, error) {
	var lf LiveFaults
	if got := plan.FileDigest(b); got != digest {
		return lf, fmt.Errorf("live faults %s: digest %012x, ctl.faults says %012x (a stale file?)", LiveFaultsFile(gen), got, digest)
	}
	if err := json.Unmarshal(b, &lf); err != nil {
		return lf, fmt.Errorf("live faults %s: %w", LiveFaultsFile(gen), err)
	}
	switch {
	case lf.V != LiveFaultsVersion:
		return lf, fmt.Errorf("live faults %s: version %d, want %d", LiveFaultsFile(gen), lf.V, LiveFaultsVersion)
	case lf.Run != run || lf.Generation != gen:
		return lf, fmt.Errorf("live faults %s: run %q generation %d, want run %q generation %d", LiveFaultsFile(gen), lf.Run, lf.Generation, run, gen)
	}
	return lf, nil
}

// FaultsMessage is the launcher's ctl.faults: the faults of LiveFaultsFile(gen) (whose digest
// is digest) apply from step "step" of episode ep on (Message.Step; 0: from the episode's
// start, sent before its ctl.episode). Values [generation, digest].
func FaultsMessage(run string, ep, step, gen int, digest uint64) *wire.Message {
	m := ctlMessage(run, wire.LauncherSender, wire.CtlFaults, ep, []float64{float64(gen), float64(digest)})
	m.Step = step
	return m
}

// ParseFaults reads a ctl.faults: its generation (>= 1) and digest (1..2^48-1), else an error
// (wire.ReasonDim).
func ParseFaults(m *wire.Message) (gen int, digest uint64, err error) {
	if len(m.Values) != 2 {
		return 0, 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "ctl.faults carries [generation, digest]"}
	}
	g, d := m.Values[0], m.Values[1]
	if g < 1 || g > 1<<31-1 || g != float64(int64(g)) {
		return 0, 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "generation " + strconv.FormatFloat(g, 'g', -1, 64) + " is not a positive integer"}
	}
	if d < 1 || d >= 1<<48 || d != float64(int64(d)) {
		return 0, 0, &wire.InvalidError{Reason: wire.ReasonDim, Detail: "digest " + strconv.FormatFloat(d, 'g', -1, 64) + " is not a 48-bit file digest"}
	}
	return int(g), uint64(d), nil
}
