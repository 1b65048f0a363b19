package audit

import (
	"fmt"
	"strings"
	"testing"
)

// TestTradeoffLabelsBothMu: the trade-off figure of a Gaussian claim names the mu of the
// claim and the mu fitted to the trials (which differ), each on its own curve, and the two
// bounded tests apart.
func TestTradeoffLabelsBothMu(t *testing.T) {
	const mu = 0.5
	r := analyze(t, gaussTrials(73, 4000, mu), Options{EpsilonClaimed: 1, Delta: 1e-2, CurvePoints: 100})
	if r.MuClaimed <= 0 || r.MuGDP <= 0 || r.GDP == nil {
		t.Fatalf("mu claimed %g, fitted %g, GDP test %v: want both positive", r.MuClaimed, r.MuGDP, r.GDP)
	}
	f, err := TradeoffFigure(r, "tradeoff")
	if err != nil {
		t.Fatal(err)
	}
	svg, err := f.Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("mu-GDP of the claim, mu = %.4g", r.MuClaimed),
		fmt.Sprintf("mu-GDP fitted to the trials (lower bound), mu = %.4g", r.MuGDP),
		"test giving the CP bound", "test giving the GDP bound",
		fmt.Sprintf("mu-GDP the f-DP statistic rejects (lower bound), mu = %.4g", r.MuFDP),
		"f-DP test: corner of its joint region", "empirical (4000+4000 trials)",
	} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the figure does not say %q", want)
		}
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}
