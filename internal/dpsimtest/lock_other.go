//go:build !unix

package dpsimtest

// lockFile does not lock where flock is missing: the tests that install a JavaScript example
// then rely on .ci/run installing it first.
func lockFile(string) (func(), error) { return func() {}, nil }
