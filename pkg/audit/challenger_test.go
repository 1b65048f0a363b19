package audit

import (
	"testing"

	"github.com/dpsim/dpsim/pkg/sim"
)

// A fast-engine worker's challenger draws Bit's secret bits, for any seed and trial (pairs of
// trials share a coin: the source is reseeded per pair).
func TestChallengerDrawsBit(t *testing.T) {
	for _, seed := range []uint64{0, 1, 401, 1 << 63} {
		ch := &challenger{seed: seed}
		for _, trial := range []uint64{0, 1, 2, 3, 7, 6, 1000, 1001, 1 << 40, 1<<40 + 1} {
			if got, want := ch.bit(trial), Bit(seed, trial); got != want {
				t.Fatalf("seed %d trial %d: challenger %d, Bit %d", seed, trial, got, want)
			}
		}
		var n [2]int
		for trial := uint64(0); trial < 2000; trial++ {
			n[ch.bit(trial)]++
		}
		if n != [2]int{1000, 1000} {
			t.Fatalf("seed %d: bits %v over 2000 trials, want balanced", seed, n)
		}
	}
}

// A fast-engine worker's trial of the vehicle - the challenger's bit, the episode, the scores,
// the record - allocates nothing (the plant reseeds its random source in place, the
// challenger too): the collector has no work while the game is played.
func TestFastTrialAllocatesNothing(t *testing.T) {
	p := loadPlan(t, "audit-vehicle-structured")
	g := newGame(t, p, GameOptions{})
	player, err := newFastPlayer(g, sim.NewSeeds(5))
	if err != nil {
		t.Fatal(err)
	}
	out := g.NewOutcome(EngineFast, 5, 1000)
	sc, ch := g.Scorer(), &challenger{seed: 5}
	trk := g.PrecisionTracker() // the precision tests read the transcript as it comes
	player.SetTap(trk)
	est, scores := make([]float64, g.EstimateDim()), make([]float64, len(g.names))
	e := 0
	allocs := testing.AllocsPerRun(200, func() {
		bit := ch.bit(uint64(e))
		if ok, err := player.Play(e, g.X0(bit), est); err != nil || !ok {
			t.Fatalf("episode %d: estimate %v, error %v", e, ok, err)
		}
		sc.ScoresEvidence(est, trk.Evidence(), scores)
		out.Add(uint64(e), bit, scores)
		e++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per trial, want none", allocs)
	}
}
