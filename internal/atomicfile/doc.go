// Package atomicfile writes result files so that a reader never sees a truncated one: the
// data goes to a temporary file in the same directory, is fsync'd, and replaces the target
// by rename(2), which is atomic on POSIX file systems; the directory is fsync'd after the
// rename so the new name survives a crash too. A full disk or a crash mid-write leaves the
// previous file (or none) in place, never a partial one.
package atomicfile
