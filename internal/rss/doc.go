// Package rss reads the peak resident set size of the running process: what a role process
// reports of itself in its result (contract.ProcessResult.PeakRSSBytes) and the launcher of
// itself (summary.json launcher_max_rss_bytes).
package rss
