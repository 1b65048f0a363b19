package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// groupsOf lists the groups PlayPoint plays for episodes start..end-1.
func groupsOf(f *scenario.FaultsSpec, start, end, k int) []Group {
	var gs []Group
	for ep := start; ep < end; {
		g := NextGroup(f, ep, end, k)
		gs = append(gs, g)
		ep += g.Count
	}
	return gs
}

func TestNextGroup(t *testing.T) {
	crash := func(ep int) scenario.Crash { return scenario.Crash{Proc: "plant.0", Episode: ep, Step: 5, Restart: 8} }
	cases := []struct {
		name            string
		f               *scenario.FaultsSpec
		start, end, k   int
		want            []Group
		crash, restarts int // AloneCounts expected
		proxy           int
	}{
		{name: "no faults, K divides", f: nil, start: 0, end: 8, k: 4,
			want: []Group{{0, 4, ""}, {4, 4, ""}}},
		{name: "no faults, a short last group", f: &scenario.FaultsSpec{}, start: 0, end: 10, k: 4,
			want: []Group{{0, 4, ""}, {4, 4, ""}, {8, 2, ""}}},
		{name: "K = 1", f: nil, start: 0, end: 3, k: 1,
			want: []Group{{0, 1, ""}, {1, 1, ""}, {2, 1, ""}}},
		{name: "K below 1 is 1", f: nil, start: 0, end: 2, k: 0,
			want: []Group{{0, 1, ""}, {1, 1, ""}}},
		{name: "K above the runs", f: nil, start: 0, end: 3, k: 16,
			want: []Group{{0, 3, ""}}},
		{name: "a resumed point starts its groups at its first episode", f: nil, start: 5, end: 12, k: 4,
			want: []Group{{5, 4, ""}, {9, 3, ""}}},
		{name: "a crash runs alone and splits the groups", f: &scenario.FaultsSpec{Crashes: []scenario.Crash{crash(3)}}, start: 0, end: 9, k: 4,
			want: []Group{{0, 3, ""}, {3, 1, AloneCrash}, {4, 4, ""}, {8, 1, ""}}, crash: 1},
		{name: "a crash in every episode", f: &scenario.FaultsSpec{Crashes: []scenario.Crash{crash(scenario.EveryEpisode)}}, start: 0, end: 3, k: 16,
			want: []Group{{0, 1, AloneCrash}, {1, 1, AloneCrash}, {2, 1, AloneCrash}}, crash: 3},
		{name: "a server restart", f: &scenario.FaultsSpec{ServerRestarts: []scenario.ServerRestart{{Episode: 0, Step: 3}}}, start: 0, end: 5, k: 3,
			want: []Group{{0, 1, AloneServerRestart}, {1, 3, ""}, {4, 1, ""}}, restarts: 1},
		{name: "a proxy reset", f: &scenario.FaultsSpec{Proxies: []scenario.Proxy{{Proc: "cloud.0", Resets: []scenario.StepPoint{{Episode: 4, Step: 1}}}}}, start: 0, end: 6, k: 16,
			want: []Group{{0, 4, ""}, {4, 1, AloneProxy}, {5, 1, ""}}, proxy: 1},
		{name: "a proxy without resets does not split", f: &scenario.FaultsSpec{Proxies: []scenario.Proxy{{Proc: "cloud.0"}}}, start: 0, end: 6, k: 16,
			want: []Group{{0, 6, ""}}},
		{name: "a fault outside the played episodes", f: &scenario.FaultsSpec{Crashes: []scenario.Crash{crash(2)}}, start: 3, end: 7, k: 16,
			want: []Group{{3, 4, ""}}},
		{name: "a crash and a restart in the same episode: the crash is named", f: &scenario.FaultsSpec{Crashes: []scenario.Crash{crash(1)},
			ServerRestarts: []scenario.ServerRestart{{Episode: 1, Step: 2}}}, start: 0, end: 3, k: 2,
			want: []Group{{0, 1, ""}, {1, 1, AloneCrash}, {2, 1, ""}}, crash: 1},
		{name: "consecutive alone episodes", f: &scenario.FaultsSpec{Crashes: []scenario.Crash{crash(1)},
			ServerRestarts: []scenario.ServerRestart{{Episode: 2, Step: 2}}}, start: 0, end: 4, k: 8,
			want: []Group{{0, 1, ""}, {1, 1, AloneCrash}, {2, 1, AloneServerRestart}, {3, 1, ""}}, crash: 1, restarts: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := groupsOf(c.f, c.start, c.end, c.k)
			require.Equal(t, c.want, got)
			var counts record.InflightCounts
			episodes := 0
			for _, g := range got {
				countGroup(&counts, g)
				episodes += g.Count
				require.LessOrEqual(t, g.Count, max(c.k, 1))
			}
			require.Equal(t, c.end-c.start, episodes, "every episode in exactly one group")
			require.Equal(t, record.AloneCounts{Crash: c.crash, ServerRestart: c.restarts, Proxy: c.proxy}, counts.Alone)
			require.Equal(t, len(got), counts.Groups)
		})
	}
}

func TestGroupString(t *testing.T) {
	require.Equal(t, "episode 4", Group{First: 4, Count: 1}.String())
	require.Equal(t, "episodes 4..19", Group{First: 4, Count: 16}.String())
}

func TestInflightCountsMerge(t *testing.T) {
	a := record.InflightCounts{Groups: 2, Largest: 4, Alone: record.AloneCounts{Crash: 1}}
	a.Merge(record.InflightCounts{Groups: 3, Largest: 16, Alone: record.AloneCounts{ServerRestart: 1, Proxy: 2}})
	require.Equal(t, record.InflightCounts{Groups: 5, Largest: 16, Alone: record.AloneCounts{Crash: 1, ServerRestart: 1, Proxy: 2}}, a)
	require.Equal(t, 4, a.Alone.Total())
}

func TestDefaultInflightFor(t *testing.T) {
	consensus := func(n int) *plan.Plan {
		return &plan.Plan{Scenario: &scenario.Scenario{Kind: scenario.Consensus}, Graph: &dynamics.Graph{N: n}}
	}
	vehicle := &plan.Plan{Scenario: &scenario.Scenario{Kind: scenario.CloudControl}}
	for _, c := range []struct {
		name string
		p    *plan.Plan
		per  int
		want int
	}{
		{"cloud control", vehicle, 1, DefaultInflight},
		{"cloud control ignores agent hosts", vehicle, 25, DefaultInflight},
		{"one agent per process", consensus(10), 1, DefaultInflight},
		{"5 agents per process", consensus(10), 5, DefaultInflight / 5},
		{"hosts larger than the graph", consensus(10), 25, DefaultInflight / 10},
		{"1,000 agents per process", consensus(10000), 1000, 1},
		{"no agents per process given", consensus(10), 0, DefaultInflight},
	} {
		require.Equal(t, c.want, DefaultInflightFor(c.p, c.per), c.name)
	}
}
