package noise

import (
	"fmt"
	"strings"
)

// Kind names a noise design for a control loop (docs/math.md section 4).
type Kind string

const (
	// Structured is Algorithm 1: gamma(t) = C_m A_m^t sqrt(Sigma) eta, eta drawn once per run.
	Structured Kind = "structured"
	// IIDCalibrated is Lambda = sigma I_m with sigma from Theorem 1 for the whole trajectory: sound, noisier.
	IIDCalibrated Kind = "iid-calibrated"
	// IIDNaive is fresh per-step noise calibrated for one single release: unsound over T steps.
	IIDNaive Kind = "iid-naive"
	// None adds no noise.
	None Kind = "none"
)

// Kinds lists the accepted noise kinds, default first.
var Kinds = []Kind{Structured, IIDCalibrated, IIDNaive, None}

// ParseKind accepts the names in Kinds.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown noise kind %q (allowed: %s)", s, strings.Join(names, ", "))
}
