package report

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFiguresInHouseStyle builds the report of shipped scenarios that together draw every
// figure the report knows (FigureNames) - the main run, a sweep, consensus, the fault sweeps,
// crashes, a partition and a server restart - and a newcomer's 3-state plant whose noise
// swamps the control, and checks each figure against the house style (figure.Check: fonts,
// sizes, no clipped data, every series distinguishable, no line drawn twice, readable axes,
// both formats render), and that its data can be written (figure.Data, for dpsim view). The fast engine with 20 runs keeps it to a few seconds.
func TestFiguresInHouseStyle(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range []string{
		shipped("cloud-vehicle"), shipped("cloud-vehicle-sweep"),
		shipped("cloud-vehicle-fullstate"), shipped("consensus-gaussian"),
		shipped("consensus-laplace"), shipped("faults-vehicle-latency"),
		shipped("faults-consensus-loss"), shipped("faults-agent-crash"),
		shipped("faults-agent-crash-redraw"), shipped("faults-partition"),
		shipped("faults-nats-restart"), filepath.Join("testdata", "noisy-3state.yaml"),
		// the fast engine ignores delays in ms: every point of the sweep gives the same numbers
		shipped("faults-vehicle-latency-realtime"),
	} {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			for _, f := range fastReport(t, path, 20).Figures {
				seen[f.Name] = true
				if err := f.Check(); err != nil {
					t.Error(err)
				}
				if _, err := f.Data(); err != nil { // what dpsim view draws again
					t.Error(err)
				}
			}
		})
	}
	for _, n := range FigureNames() {
		if !seen[n] {
			t.Errorf("no shipped scenario draws %s: it is not checked", n)
		}
	}
}

// fastReport builds the report of the scenario at path run by the fast engine with runs runs
// (fastInput).
func fastReport(t *testing.T, path string, runs int) *Report {
	t.Helper()
	rep, err := Build(fastInput(t, path, runs))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
