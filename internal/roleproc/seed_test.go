package roleproc

import (
	"errors"
	"testing"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// TestResolveSeed checks a plant or agents process's seed: --seed (0 included), else the
// scenario's, else a usage error naming --seed (a role never draws its own).
func TestResolveSeed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flagSeed     uint64
		flagSet      bool
		scenarioSeed uint64
		want         uint64
		wantErr      bool
	}{
		{name: "flag", flagSeed: 7, flagSet: true, scenarioSeed: 53, want: 7},
		{name: "flag 0 is a real seed", flagSeed: 0, flagSet: true, scenarioSeed: 53, want: 0},
		{name: "scenario", scenarioSeed: 53, want: 53},
		{name: "neither", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Seed: tc.flagSeed, SeedSet: tc.flagSet}
			err := c.resolveSeed(&scenario.Scenario{Seed: tc.scenarioSeed})
			if tc.wantErr {
				if !errors.Is(err, cli.ErrUsage) {
					t.Fatalf("error %v, want a usage error", err)
				}
				return
			}
			if err != nil || c.Seed != tc.want {
				t.Fatalf("seed %d err %v, want %d", c.Seed, err, tc.want)
			}
		})
	}
}
