package report

import (
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/figure"
)

// figureSVG returns the SVG of the report's figure named name.
func figureSVG(t *testing.T, rep *Report, name string) string {
	t.Helper()
	for _, f := range rep.Figures {
		if f.Name == name {
			svg, err := f.Render("svg")
			if err != nil {
				t.Fatal(err)
			}
			return string(svg)
		}
	}
	t.Fatalf("no figure %s", name)
	return ""
}

// TestFigureLabels: what the figures name is named as the rest of dpsim names it - agents from
// 0 (the scenario's x0, proc agent.0), a crash window labelled in the legend, not only shaded -
// and a bound shared by every series is drawn once.
func TestFigureLabels(t *testing.T) {
	crash := fastReport(t, shipped("faults-agent-crash"), 5)
	dev := figureSVG(t, crash, FigConsensusDev)
	for _, want := range []string{">agent 0<", ">agent 9<", "shaded: agent.0 down at steps 10..14"} {
		if !strings.Contains(dev, want) {
			t.Errorf("%s does not say %q", FigConsensusDev, want)
		}
	}
	if strings.Contains(dev, ">agent 10<") {
		t.Errorf("%s numbers the 10 agents from 1", FigConsensusDev)
	}
	loss := fastReport(t, shipped("faults-consensus-loss"), 5)
	faults := figureSVG(t, loss, FigFaults)
	if n := strings.Count(faults, ">Proposition 1 bound"); n != 1 {
		t.Errorf("%s: %d legend entries for the Proposition 1 bound, want 1 (the bound does not depend on the loss handling)", FigFaults, n)
	}
}

// TestFaultFigureDriftAxis: the network-sum drift of faults-consensus-loss (1e-11 without
// loss, tens with it) is drawn on a linear axis; on a log one its line would cross twelve
// empty decades (figure.LogUseful).
func TestFaultFigureDriftAxis(t *testing.T) {
	rep := fastReport(t, shipped("faults-consensus-loss"), 5)
	for _, f := range rep.Figures {
		if f.Name != FigFaults {
			continue
		}
		drift := f.Panels[1][0]
		if _, log := drift.Y.Tick.Marker.(figure.LogTicker); log {
			t.Errorf("drift panel %q on a log axis [1e%g, 1e%g]", drift.Title.Text, drift.Y.Min, drift.Y.Max)
		}
		return
	}
	t.Fatalf("no figure %s", FigFaults)
}
