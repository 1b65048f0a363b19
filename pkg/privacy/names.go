package privacy

import (
	"fmt"
	"strings"
)

// Mechanism names the noise law: Gaussian gives (eps, delta)-DP (Theorem 1), Laplace pure eps-DP (Theorem 2).
type Mechanism string

const (
	Gaussian Mechanism = "gaussian"
	Laplace  Mechanism = "laplace"
)

// Mechanisms lists the accepted mechanism names.
var Mechanisms = []Mechanism{Gaussian, Laplace}

// ParseMechanism accepts "gaussian" or "laplace".
func ParseMechanism(s string) (Mechanism, error) {
	return parseName(s, Mechanisms, "mechanism")
}

// Calibration names how sigma is derived from (eps, delta) for the Gaussian mechanism.
type Calibration string

const (
	// Tight is the exact inverse of kappa (eq. 7): necessary and sufficient, the least noise.
	Tight Calibration = "tight"
	// PaperBound is the closed-form lower bound the papers print; it drops kappa's second term.
	PaperBound Calibration = "paper-bound"
	// Classic is sqrt(2 ln(1.25/delta))/eps (Dwork & Roth), valid only for eps < 1.
	Classic Calibration = "classic"
)

// Calibrations lists the accepted calibration names, default first.
var Calibrations = []Calibration{Tight, PaperBound, Classic}

// ParseCalibration accepts "tight", "paper-bound" or "classic".
func ParseCalibration(s string) (Calibration, error) {
	return parseName(s, Calibrations, "calibration")
}

// Adjacency names the set of index sets over which the sensitivity is maximised (docs/math.md section 1).
type Adjacency string

const (
	// Manifold is Definition 4 exactly: every index set d_j with D_{d_j} nonsingular.
	Manifold Adjacency = "manifold"
	// Block is the T block index sets of Theorem 3: one time step's state is free.
	Block Adjacency = "block"
)

// Adjacencies lists the accepted adjacency names, default first.
var Adjacencies = []Adjacency{Manifold, Block}

// ParseAdjacency accepts "manifold" or "block".
func ParseAdjacency(s string) (Adjacency, error) {
	return parseName(s, Adjacencies, "adjacency")
}

func parseName[T ~string](s string, allowed []T, what string) (T, error) {
	for _, a := range allowed {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q (allowed: %s)", what, s, strings.Join(names, ", "))
}
