// Package shard is what the shards of dpsim audit and dpsim run share (--shard I/N, dpsim
// merge): the slice I of N (Shard: its flag, its contiguous range of trials), the manifest
// header every part starts with (Header: format, kind, scenario digest, seed, build, I and N),
// reading it, and the check that parts are the N slices of one job - the same header but I,
// every index exactly once (Check). What a part holds beyond the header is its kind's
// (internal/auditrun: an audit's trials; internal/runner: a run's chunks).
package shard
