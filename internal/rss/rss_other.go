//go:build !unix

package rss

// rusageMaxRSS is not available on this platform.
func rusageMaxRSS() int64 { return 0 }
