//go:build !unix

package role

// rusageMaxRSS is not available on this platform.
func rusageMaxRSS() int64 { return 0 }
