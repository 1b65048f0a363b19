package audit

import (
	"testing"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/sim"
)

// precisionTally plays n trials per value of the secret bit of g with the one-episode player
// and its precision tracker, and counts per secret (row) the episodes whose tests said yes under
// each hypothesis (column): the replay fit, the lattice test, and E_1 > E_0.
type precisionTally struct {
	fit, lat [2][2]int
	toward1  [2]int // episodes whose evidence points to x' (E_1 > E_0)
	toward0  [2]int
	n        [2]int
}

func tallyPrecision(t testing.TB, g *Game, seed uint64, n int) precisionTally {
	t.Helper()
	player, err := engine.NewPlayer(g.Plan, sim.NewSeeds(seed))
	if err != nil {
		t.Fatal(err)
	}
	trk := g.PrecisionTracker()
	if trk == nil {
		t.Fatal("the game has no precision tracker")
	}
	player.SetTap(trk)
	est := make([]float64, g.EstimateDim())
	var r precisionTally
	for e := 0; e < 2*n; e++ {
		bit := Bit(seed, uint64(e))
		if _, err := player.Play(e, g.X0(bit), est); err != nil {
			t.Fatal(err)
		}
		fit, lat := trk.counts()
		ev := trk.Evidence()
		for b := 0; b < 2; b++ {
			r.fit[bit][b] += min(fit[b], 1)
			r.lat[bit][b] += min(lat[b], 1)
		}
		switch {
		case ev[1] > ev[0]:
			r.toward1[bit]++
		case ev[0] > ev[1]:
			r.toward0[bit]++
		}
		r.n[bit]++
	}
	return r
}

func TestPrecisionTallyPrint(t *testing.T) {
	for _, name := range []string{"audit-vehicle-structured", "audit-vehicle-iid-naive", "audit-consensus-gaussian", "audit-consensus-laplace"} {
		g := newGame(t, loadPlan(t, name), GameOptions{})
		r := tallyPrecision(t, g, 7, 1000)
		t.Logf("%s: %+v", name, r)
	}
}

func TestPrecisionStepsPrint(t *testing.T) {
	defer func(v int) { precisionMinSteps = v }(precisionMinSteps)
	for _, k := range []int{4, 16, 1 << 30} {
		precisionMinSteps = k
		for _, name := range []string{"audit-vehicle-structured", "audit-vehicle-iid-naive", "audit-consensus-gaussian", "audit-consensus-laplace"} {
			g := newGame(t, loadPlan(t, name), GameOptions{})
			r := tallyPrecision(t, g, 7, 2000)
			t.Logf("%d %s: %+v", k, name, r)
		}
	}
}
