// Package rng derives reproducible, independent random streams from one run seed.
//
// Every random draw in dpsim comes from a stream named by a path of labels below the
// run seed, e.g. New(seed, Label("plant"), 0, episode). Two different paths give
// statistically independent PCG streams; the same path always gives the same stream,
// so a run is reproduced exactly from --seed whichever process or engine draws it.
package rng
