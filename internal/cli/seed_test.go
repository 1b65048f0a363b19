package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestResolveSeed checks the one seed resolver: --seed, else the scenario's seed, else
// crypto/rand, with 0 from the flag a real seed and a bad flag a usage error naming --seed.
func TestResolveSeed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flag         string // the text of --seed; "" = absent
		scenarioSeed uint64
		wantSeed     uint64 // ignored for crypto
		wantSource   string
		wantErr      string
	}{
		{name: "flag wins over scenario", flag: "7", scenarioSeed: 53, wantSeed: 7, wantSource: "flag"},
		{name: "flag 0 is a real seed", flag: "0", scenarioSeed: 53, wantSeed: 0, wantSource: "flag"},
		{name: "flag 0 without scenario", flag: "0", wantSeed: 0, wantSource: "flag"},
		{name: "max uint64", flag: "18446744073709551615", wantSeed: 1<<64 - 1, wantSource: "flag"},
		{name: "scenario seed", scenarioSeed: 53, wantSeed: 53, wantSource: "scenario"},
		{name: "no flag, no scenario seed", wantSource: "crypto"},
		{name: "negative", flag: "-1", scenarioSeed: 53, wantErr: `--seed "-1"`},
		{name: "not a number", flag: "abc", wantErr: `--seed "abc"`},
		{name: "overflow", flag: "18446744073709551616", wantErr: "--seed"},
		{name: "hex", flag: "0x10", wantErr: "--seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, set, err := ParseSeed(tc.flag)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSeed(%q) error %v, want a usage error containing %q", tc.flag, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSeed(%q): %v", tc.flag, err)
			}
			seed, source := ResolveSeed(v, set, tc.scenarioSeed)
			if source != tc.wantSource {
				t.Fatalf("source %q, want %q", source, tc.wantSource)
			}
			if source == SeedFromCrypto {
				if seed == 0 {
					t.Fatal("drawn seed is 0: it would read back as not fixed")
				}
				if again, _ := ResolveSeed(v, set, tc.scenarioSeed); again == seed {
					t.Fatalf("two draws gave the same seed %d", seed)
				}
				return
			}
			if seed != tc.wantSeed {
				t.Fatalf("seed %d, want %d", seed, tc.wantSeed)
			}
		})
	}
}
