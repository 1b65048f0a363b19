package report

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// faultSweepInput runs a shipped fault scenario on the fast engine with few runs.
func faultSweepInput(t *testing.T, name string, runs int) Input {
	t.Helper()
	s, err := scenario.Load("../../scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Scenario: s, Seed: s.Seed, Engine: "fast", Mode: "lockstep"}
	for _, pt := range s.Expand() {
		p, err := plan.New(pt, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := engine.Run(context.Background(), p, sim.NewSeeds(s.Seed), engine.Options{Runs: runs})
		if err != nil {
			t.Fatal(err)
		}
		in.Points = append(in.Points, Point{Scenario: pt, Plan: p, Results: res, Requested: runs})
	}
	return in
}

// A fault sweep gets the faults figure and section: rules, missing-input rule, per-point
// totals with the per-link appendix, and a passing link-accounting check per point.
func TestFaultSweepReport(t *testing.T) {
	for _, c := range []struct{ name, rule string }{
		{"faults-consensus-loss", "reuse-last"},
		{"faults-vehicle-latency", "hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := faultSweepInput(t, c.name, 20)
			if err := Write(dir, in); err != nil {
				t.Fatal(err)
			}
			md := checkFiles(t, dir, []string{FigSweepFinalMSE, FigSweepEavesdropper, FigFaults})
			for _, want := range []string{"## Faults and links", "**" + c.rule + "**", "Totals over all links, per point",
				"### Appendix: messages per link and point", "**PASS**: every link's messages add up"} {
				if !strings.Contains(md, want) {
					t.Errorf("report.md lacks %q", want)
				}
			}
			if strings.Contains(md, "**FAIL**: link") {
				t.Error("a link-accounting check failed on the engine's own counters")
			}
			rep, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range rep.Figures {
				if f.Name == FigFaults {
					found = true
					if want := map[string]int{"faults-consensus-loss": 3, "faults-vehicle-latency": 2}[c.name]; len(f.Panels) != want {
						t.Errorf("faults figure has %d panels, want %d", len(f.Panels), want)
					}
				}
			}
			if !found {
				t.Error("no faults figure")
			}
		})
	}
}

// Counters that do not add up fail the accounting check, naming the link.
func TestLinkAccountingFails(t *testing.T) {
	good := fault.LinkStats{Link: "a->b", Sent: 10, Dropped: 2, Duplicated: 1, Expired: 1, Delivered: 8, DupReceived: 1}
	if bad, _ := linkAccounting([]fault.LinkStats{good}, false); len(bad) != 0 {
		t.Fatalf("consistent counters flagged: %s", bad)
	}
	off := good
	off.Link, off.Delivered = "c->d", 9
	dups := good
	dups.Link, dups.DupReceived = "e->f", 2
	badList, _ := linkAccounting([]fault.LinkStats{good, off, dups}, false)
	bad := strings.Join(badList, "; ")
	if len(badList) != 2 || !strings.Contains(bad, "c->d") || !strings.Contains(bad, "e->f") || strings.Contains(bad, "a->b") {
		t.Fatalf("accounting: %q", bad)
	}
	// A message lost in transport is silent loss - a failure - unless the run names an outage;
	// then it is counted as lost. More delivered than sent is never explained.
	lossy := good
	lossy.Link, lossy.Delivered = "g->h", 6
	if bad, _ := linkAccounting([]fault.LinkStats{lossy}, false); !strings.Contains(strings.Join(bad, "; "), "g->h") {
		t.Fatalf("silent loss not flagged: %q", bad)
	}
	if badList, lost := linkAccounting([]fault.LinkStats{lossy, off}, true); lost != 2 || len(badList) != 1 || !strings.Contains(badList[0], "c->d") {
		t.Fatalf("outage: bad %q, lost %d", badList, lost)
	}
	in := faultSweepInput(t, "faults-consensus-loss", 5)
	in.Points = in.Points[:1]
	in.Scenario = nil
	in.Points[0].Results.Links[0].Delivered++
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	md := checkFiles(t, dir, nil)
	if !strings.Contains(md, "**FAIL**") || !strings.Contains(md, "links whose counters do not add up = 1, required = 0; 38 links; not adding up: ") {
		t.Error("inconsistent counters did not fail the check")
	}
}

// A degraded run reads as complete, with its reasons; not as one that did not finish.
func TestDegradedBanner(t *testing.T) {
	in := faultSweepInput(t, "faults-vehicle-latency", 5)
	in.Points = in.Points[:1]
	in.Scenario = nil
	in.Status = "degraded"
	in.Degraded = []string{"12 of 1500 process steps (0.8%) missed their realtime deadline"}
	in.Missed = 12
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	md := checkFiles(t, dir, nil)
	for _, want := range []string{"**Status: degraded** - every requested episode completed", "12 of 1500 process steps"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, bad := range []string{"did not finish", "partial"} {
		if strings.Contains(md, bad) {
			t.Errorf("a degraded but complete run reads %q", bad)
		}
	}
}

// "Every message was delivered once, on time" is said only when the link counters add up:
// a receiver that took fewer than were sent (a user's program late by a step) gets the table,
// beside the failing check; and the banner lists the problems attributed to the processes.
func TestOnTimeOnlyWhenLinksAddUp(t *testing.T) {
	in := faultSweepInput(t, "cloud-vehicle", 3)
	in.Status = "degraded"
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	if md := checkFiles(t, dir, nil); !strings.Contains(md, "delivered once, on time") {
		t.Fatalf("a run whose links add up does not say so:\n%s", md)
	}
	in.Points[0].Results.Links[0].Delivered--
	in.Problems = []string{"cloud-0: late-messages: most of its messages came after their step"}
	dir = t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	md := checkFiles(t, dir, nil)
	if strings.Contains(md, "delivered once, on time") {
		t.Error("report.md says every message was on time while a link does not add up")
	}
	if !strings.Contains(md, "links whose counters do not add up = 1") {
		t.Error("the link check does not fail")
	}
	if !strings.Contains(md, "> - problem: cloud-0: late-messages:") {
		t.Error("the banner does not list the problem")
	}
}
