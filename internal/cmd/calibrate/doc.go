// Package calibrate implements `dpsim calibrate`: the noise a privacy budget requires, for a
// scalar sensitivity or for a scenario's system (sensitivity under the named adjacency, rank
// condition (8), sigma or the optimal Sigma of Algorithm 1, and the worst adjacent pair).
package calibrate
