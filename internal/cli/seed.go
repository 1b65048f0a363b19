package cli

import (
	"strconv"

	"github.com/dpsim/dpsim/pkg/rng"
)

// Where a run seed came from, as recorded under the JSON key seed_source and printed after it.
const (
	SeedFromFlag     = "flag"     // --seed, which may be 0
	SeedFromScenario = "scenario" // the scenario's seed (non-zero: 0 in a file means "not fixed")
	SeedFromCrypto   = "crypto"   // drawn from crypto/rand: the caller must report it
)

// SeedDrawnNote is what a command logs next to a seed drawn from crypto/rand.
const SeedDrawnNote = "seed drawn from crypto/rand; pass --seed to reproduce"

// ParseSeed parses the text of --seed: "" is absent (set false); any unsigned 64-bit integer,
// 0 included, is a real seed. Anything else is a usage error naming --seed.
func ParseSeed(text string) (seed uint64, set bool, err error) {
	if text == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, false, UsageError("--seed %q: want an unsigned 64-bit integer", text)
	}
	return v, true, nil
}

// ResolveSeed is the one place a run seed is decided, for every command: the --seed flag
// (flagSeed, when flagSet; 0 is a real seed), else the scenario's seed (scenarioSeed, when
// non-zero; pass 0 where there is no scenario), else a non-zero draw from crypto/rand. It
// returns the seed and its source (SeedFromFlag, SeedFromScenario or SeedFromCrypto).
func ResolveSeed(flagSeed uint64, flagSet bool, scenarioSeed uint64) (seed uint64, source string) {
	switch {
	case flagSet:
		return flagSeed, SeedFromFlag
	case scenarioSeed != 0:
		return scenarioSeed, SeedFromScenario
	}
	// 0 is kept out of drawn seeds: a file that records it would read back as "not fixed".
	for seed == 0 {
		seed = rng.FromCrypto()
	}
	return seed, SeedFromCrypto
}
