package sim

import "github.com/dpsim/dpsim/pkg/fault"

// Seeds are the two seeds of a run. Run is the run seed: the noise streams of the plant and
// the agents (see the package doc), so only they are given it. Fault is the seed of the link
// faults' fates (pkg/fault), which every process of the run draws from, and a hash of Run
// (fault.SeedOf) so that it reveals nothing of the noise to the cloud or the eavesdropper.
//
// NewSeeds derives Fault once, where the run seed is decided; the value is then carried to
// every engine of the run - the fast engine and the auditor's player in memory, every NATS
// process on its command line (--fault-seed) - which is what makes their fates, and so their
// numbers, the same.
type Seeds struct {
	Run   uint64
	Fault uint64
}

// NewSeeds returns the seeds of a run with run seed run: the one derivation of its fault seed.
func NewSeeds(run uint64) Seeds { return Seeds{Run: run, Fault: fault.SeedOf(run)} }
