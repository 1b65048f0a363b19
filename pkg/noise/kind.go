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

// Sampler names how a mechanism's noise becomes the float64 values a process publishes
// (docs/math.md section 10, docs/protocol.md section 12).
type Sampler string

const (
	// SamplerSecure draws the noise exactly (ExactSampler) and publishes values that are a
	// function of the real mechanism's output rounded exactly to a grid: private as float64 values.
	SamplerSecure Sampler = "secure"
	// SamplerFloat is the textbook float64 path (NormFloat64, Laplace by the inverse CDF, the
	// state's float arithmetic): private only in the reals; kept by name for demonstrations.
	SamplerFloat Sampler = "float"
)

// Samplers lists the accepted samplers, default first.
var Samplers = []Sampler{SamplerSecure, SamplerFloat}

// ParseSampler accepts the names in Samplers ("" is the default, secure).
func ParseSampler(s string) (Sampler, error) {
	if s == "" {
		return SamplerSecure, nil
	}
	for _, k := range Samplers {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown sampler %q (allowed: secure, float)", s)
}
