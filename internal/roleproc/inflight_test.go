package roleproc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// inflightTransports is a plant process's transports for n episodes in flight from first
// (plantTransport's and its siblings' over new plant cores, sharing one coalescer), begun as a
// group begins them.
func inflightTransports(t *testing.T, faults scenario.FaultsSpec, first, n int) ([]*natsTransport, *memInbox, *memWire) {
	t.Helper()
	tr, in, w, _ := plantTransport(t, faults, false)
	_, p, err := LoadPoint("../../scenarios/cloud-vehicle.yaml", 0)
	require.NoError(t, err)
	tr.batch = &coalescer{}
	trs := []*natsTransport{tr}
	for range n - 1 {
		plant, err := sim.NewPlantCore(p, 7)
		require.NoError(t, err)
		trs = append(trs, tr.sibling([]sim.Core{plant}))
	}
	in.SetEpisodes(first, n)
	for k, tr := range trs {
		tr.beginOutboxes(first + k)
	}
	return trs, in, w
}

// With no rule on its links, a publisher's outputs for the same step of consecutive episodes
// in flight go out as one message each run of consecutive episodes, once the process is about
// to wait (Recv finds nothing to deliver); with a per-message fault on a link they go out one
// message per episode at once, as with one episode.
func TestCoalescingByFault(t *testing.T) {
	lossy := scenario.FaultsSpec{Links: []scenario.LinkFault{{Name: "l", From: "plant.0", To: "cloud.0", Drop: 0.5}}}
	for _, tc := range []struct {
		name    string
		faults  scenario.FaultsSpec
		flushed []sent // nil: every output went out at once
	}{
		{"clear links", scenario.FaultsSpec{}, []sent{
			{Subject: yhat, Ep: 5, Step: 0, Values: []float64{5, 6, 7}, Route: wire.Route{Episodes: 3}},
			{Subject: yhat, Ep: 5, Step: 1, Values: []float64{15}},
			{Subject: yhat, Ep: 7, Step: 1, Values: []float64{17}},
		}},
		{"a lossy link", lossy, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trs, _, w := inflightTransports(t, tc.faults, 5, 3)
			// step 0 of episodes 7, 5, 6 (any order), then step 1 of 5 and 7 (not 6)
			for _, k := range []int{2, 0, 1} {
				require.NoError(t, trs[k].Send(&sim.Out{From: sim.PlantEndpoint, Step: 0, Values: []float64{float64(5 + k)}}))
			}
			for _, k := range []int{0, 2} {
				require.NoError(t, trs[k].Send(&sim.Out{From: sim.PlantEndpoint, Step: 1, Values: []float64{float64(15 + k)}}))
			}
			before := w.take()
			_, err := trs[0].Recv(time.Now().Add(10 * time.Millisecond))
			require.ErrorIs(t, err, sim.ErrIdle)
			flushed := w.take()
			if tc.flushed != nil {
				require.Empty(t, before, "nothing goes out before the wait")
				require.Equal(t, tc.flushed, flushed)
				return
			}
			require.Empty(t, flushed, "nothing was held")
			perEp := map[int]int{}
			for _, s := range before {
				require.Zero(t, s.Route.Episodes, "one message per episode")
				perEp[s.Ep]++
			}
			require.Len(t, perEp, 3, "every episode's messages went out")
		})
	}
}

// A batched message is handed out as one delivery per episode, in order, before the inbox is
// read again; what a delivery is waiting for goes out only when nothing is left to deliver.
func TestRecvSplitsBatch(t *testing.T) {
	trs, in, w := inflightTransports(t, scenario.FaultsSpec{}, 5, 3)
	require.Equal(t, [2]int{5, 3}, [2]int{in.ep, in.count}, "the inbox takes the group's episodes")
	require.NoError(t, trs[1].Send(&sim.Out{From: sim.PlantEndpoint, Step: 0, Values: []float64{1}}))
	u := &wire.Message{V: wire.Version, Run: "r1", Episode: 5, Step: 0, Sender: "cloud.0", Kind: "u", Values: []float64{0.5, 0.6, 0.7},
		Route: wire.Route{Episodes: 3}}
	in.msgs = []*wire.Message{u}
	for k := range 3 {
		m, err := trs[0].Recv(time.Now().Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, sim.Msg{From: sim.CloudEndpoint, ToAll: true, Episode: 5 + k, Step: 0, At: 0, Values: []float64{0.5 + 0.1*float64(k)}}, *m)
		require.Empty(t, w.take(), "delivery %d: more to deliver, nothing sent yet", k)
	}
	_, err := trs[0].Recv(time.Now().Add(10 * time.Millisecond))
	require.ErrorIs(t, err, sim.ErrIdle)
	require.Equal(t, []sent{{Subject: yhat, Ep: 6, Step: 0, Values: []float64{1}}}, w.take())
}

// ctl.episode starts one episode (its x(0) on the message in hand-driven runs), ctl.episodes
// a group; what is neither, or a group of no episode, is refused (and counted invalid).
func TestParseEpisodeStart(t *testing.T) {
	r := &coreRunner{cores: []sim.Core{mustPlant(t)}, nx: 2}
	for _, tc := range []struct {
		name    string
		m       *wire.Message
		takesX0 bool
		want    episodeStart
		reason  wire.Reason // numReasons: valid
	}{
		{"one episode", contract.EpisodeMessage("r1", 4, false), true, episodeStart{ep: 4}, numReasonsValid},
		{"one, private", contract.EpisodeMessage("r1", 4, true), true, episodeStart{ep: 4, private: true}, numReasonsValid},
		{"one, private, not for the cloud", contract.EpisodeMessage("r1", 4, true), false, episodeStart{ep: 4}, numReasonsValid},
		{"one with x0", withValues(contract.EpisodeMessage("r1", 4, false), 1, 2), true, episodeStart{ep: 4, x0: []float64{1, 2}}, numReasonsValid},
		{"one with a bad x0", withValues(contract.EpisodeMessage("r1", 4, false), 1), true, episodeStart{}, wire.ReasonDim},
		{"a group", contract.EpisodesMessage("r1", 8, 16, false), true, episodeStart{ep: 8, count: 16}, numReasonsValid},
		{"a private group", contract.EpisodesMessage("r1", 8, 16, true), true, episodeStart{ep: 8, count: 16, private: true}, numReasonsValid},
		{"a group of none", withValues(contract.EpisodesMessage("r1", 8, 1, false), 0), true, episodeStart{}, wire.ReasonDim},
		{"a group too large", contract.EpisodesMessage("r1", 8, contract.MaxInflight+1, false), true, episodeStart{}, wire.ReasonDim},
		{"another word", &wire.Message{V: wire.Version, Run: "r1", Kind: wire.CtlStop}, true, episodeStart{}, wire.ReasonKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseEpisodeStart(tc.m, r, tc.takesX0)
			if tc.reason != numReasonsValid {
				require.Error(t, err)
				require.Equal(t, tc.reason, wire.ReasonOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			st.sent = time.Time{}
			require.Equal(t, tc.want, st)
		})
	}
}

const numReasonsValid = wire.Reason(255)

func withValues(m *wire.Message, v ...float64) *wire.Message { m.Values = v; return m }

func mustPlant(t *testing.T) sim.Core {
	t.Helper()
	_, p, err := LoadPoint("../../scenarios/cloud-vehicle.yaml", 0)
	require.NoError(t, err)
	c, err := sim.NewPlantCore(p, 7)
	require.NoError(t, err)
	return c
}

// A group of more than one episode is refused in realtime and when a process crashes in one
// of its episodes (a checkpoint holds one episode's cores); one episode alone always runs.
func TestCheckGroup(t *testing.T) {
	crash := func(ep int) []scenario.Crash {
		return []scenario.Crash{{Proc: "cloud.0", Episode: ep, Step: 3, Restart: 5}}
	}
	for _, tc := range []struct {
		name         string
		mode         wire.Mode
		crashes      []scenario.Crash
		first, count int
		err          string // "": runs
	}{
		{"lockstep group", wire.Lockstep, nil, 0, 16, ""},
		{"realtime group", wire.Realtime, nil, 0, 16, "realtime runs one episode at a time"},
		{"realtime alone", wire.Realtime, nil, 3, 1, ""},
		{"a crash in the group", wire.Lockstep, crash(5), 4, 3, "cloud.0 crashes in episode 5"},
		{"a crash in every episode", wire.Lockstep, crash(scenario.EveryEpisode), 4, 2, "cloud.0 crashes in episode 4"},
		{"a crash after the group", wire.Lockstep, crash(7), 4, 3, ""},
		{"a crash alone", wire.Lockstep, crash(5), 5, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := &process{cfg: &Config{Mode: tc.mode}, scn: &scenario.Scenario{Faults: scenario.FaultsSpec{Crashes: tc.crashes}}}
			err := checkGroup(proc, tc.first, tc.count)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// The counters of episodes run in flight survive a crash: a checkpoint carries them (its
// episode's cores and outboxes are the single episode's), and the restarted process adds
// them to its own, so the link counters are those of a process that never crashed.
func TestInflightCountsCarried(t *testing.T) {
	trs, _, _ := inflightTransports(t, scenario.FaultsSpec{}, 5, 2)
	r := &coreRunner{tr: trs[0], cores: []sim.Core{mustPlant(t)}, inflight: &inflight{}}
	for _, tr := range trs[1:] {
		r.inflight.slots = append(r.inflight.slots, &slot{tr: tr, cores: []sim.Core{mustPlant(t)}})
	}
	for step := range 3 {
		require.NoError(t, trs[1].Send(&sim.Out{From: sim.PlantEndpoint, Step: step, Values: []float64{1}}))
	}
	sent := func(links []fault.LinkStats) map[string]uint64 {
		out := map[string]uint64{}
		for _, l := range links {
			out[l.Link] = l.Sent
		}
		return out
	}
	want := map[string]uint64{"plant.0->cloud.0": 3, "plant.0->eavesdropper.0": 3, "cloud.0->plant.0": 0}
	require.Equal(t, want, sent(r.linkStats()), "the slots' outboxes count")
	data, err := json.Marshal(&Checkpoint{Inflight: &inflightCounts{Links: r.inflightCounts().Links}})
	require.NoError(t, err)
	var ck Checkpoint
	require.NoError(t, json.Unmarshal(data, &ck))
	restarted := &coreRunner{tr: trs[0], cores: r.cores, carried: *ck.Inflight}
	require.Equal(t, want, sent(restarted.linkStats()), "carried over the restart")
}

// A live change between groups rebuilds the outboxes of the slots of episodes in flight: a
// rule on the publisher's link (even one acting from a later episode) or a crash in the run
// makes the next group send one message per episode at once, and the counters carry over.
func TestCoalescingAfterLiveChange(t *testing.T) {
	from := scenario.StepPoint{Episode: 8}
	lossy := scenario.FaultsSpec{Links: []scenario.LinkFault{{Name: "l", From: "plant.0", To: "cloud.0", Drop: 0.5,
		Active: &scenario.Lifetime{From: &from}}}}
	crash := scenario.FaultsSpec{Crashes: []scenario.Crash{{Proc: "cloud.0", Episode: 20, Step: 3, Restart: 6}}}
	for _, tc := range []struct {
		name   string
		faults scenario.FaultsSpec
	}{{"a rule added", lossy}, {"a crash added", crash}} {
		t.Run(tc.name, func(t *testing.T) {
			trs, in, w := inflightTransports(t, scenario.FaultsSpec{}, 5, 3)
			for _, tr := range trs {
				require.True(t, tr.pubs[sim.PlantEndpoint].coalesce, "no rule yet: coalesced")
				require.NoError(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: 0, Values: []float64{1}}))
				require.NoError(t, tr.end())
			}
			_, err := trs[0].Recv(time.Now().Add(10 * time.Millisecond))
			require.ErrorIs(t, err, sim.ErrIdle)
			require.Len(t, w.take(), 1, "the group's step 0 as one message")
			sentBefore := trs[1].pubs[sim.PlantEndpoint].ob.Stats()[0].Sent

			inj, err := fault.New(&tc.faults, 7)
			require.NoError(t, err)
			in.SetEpisodes(8, 3)
			for k, tr := range trs {
				require.NoError(t, tr.setOutboxes(inj, tc.faults.Crashes))
				require.False(t, tr.pubs[sim.PlantEndpoint].coalesce, "slot %d: one message per episode from the change on", k)
				tr.beginOutboxes(8 + k)
				require.NoError(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: 0, Values: []float64{2}}))
			}
			out := w.take()
			require.NotEmpty(t, out, "sent at once")
			for _, s := range out {
				require.Zero(t, s.Route.Episodes, "one message per episode")
			}
			require.Equal(t, sentBefore+1, trs[1].pubs[sim.PlantEndpoint].ob.Stats()[0].Sent, "the counters carry over")
		})
	}
}
