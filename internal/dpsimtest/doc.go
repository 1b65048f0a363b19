// Package dpsimtest serves the integration tests that run real dpsim processes: it builds the
// dpsim binary once per test binary and locates the shipped scenarios.
package dpsimtest
