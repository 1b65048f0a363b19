package live

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/trace"
)

func controlHub(steps int) *Hub {
	return NewHub(Info{Scenario: "s", Kind: "cloud-control", Runs: 10, Points: []PointInfo{{Name: "s", Steps: steps}}}, time.Now())
}

// The hub keeps the last MaxEpisodes episodes, each thinned to about MaxPoints steps with its
// terminal step, and writes unknown values as null.
func TestHubSeriesBounded(t *testing.T) {
	const steps = 1000
	h := controlHub(steps)
	for ep := 0; ep < 5; ep++ {
		for st := 0; st <= steps; st++ {
			r := trace.ControlRecord{Episode: ep, Step: st, X: []float64{1, 2, 3, 4, 5}, Ref: []float64{0, 0, 0, 0, 0}}
			if st > 3 {
				r.EveX0 = []float64{1, 2, 3, 4, 5}
			}
			h.Control(0, &r)
		}
	}
	st, err := h.State()
	require.NoError(t, err)
	require.Len(t, st.Episodes, MaxEpisodes)
	require.Equal(t, 2, st.Episodes[0].Episode)
	s := st.Episodes[2]
	require.True(t, s.Complete)
	require.LessOrEqual(t, len(s.T), MaxPoints+1)
	require.Equal(t, steps, s.T[len(s.T)-1])
	require.Len(t, s.X, MaxComponents)
	require.InDelta(t, math.Sqrt(55), s.TrackingError[0], 1e-4) // 6 significant digits in JSON
	_, b := h.JSON(0)
	var raw struct {
		Episodes []struct {
			EveError []*float64 `json:"eve_error"`
		} `json:"episodes"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Nil(t, raw.Episodes[0].EveError[0], "not identifiable yet: null")
	require.Equal(t, 0.0, *raw.Episodes[0].EveError[len(raw.Episodes[0].EveError)-1])
}

// Progress, links, processes and the end.
func TestHubProgressAndEnd(t *testing.T) {
	h := controlHub(10)
	h.BeginPoint(0)
	h.Progress(4)
	h.Ready(0, []string{"plant.0", "cloud.0"})
	h.ProcessDone(Proc{Point: 0, Name: "plant.0", State: "ok", PeakRSSBytes: 1 << 20, Invalid: map[string]uint64{"late": 2}})
	h.PointDone(0, 10, []fault.LinkStats{{Link: "plant.0->cloud.0", Sent: 110, Delivered: 110}})
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, 10, st.EpisodesDone)
	require.Equal(t, 100, st.StepsDone)
	require.NotNil(t, st.RemainingSec)
	require.Len(t, st.Processes, 2)
	require.Equal(t, "ok", st.Processes[0].State)
	require.Equal(t, "ready", st.Processes[1].State)
	require.Len(t, st.Links, 1)
	select {
	case <-h.Ended():
		t.Fatal("ended before Finish")
	default:
	}
	h.Finish("ok", "")
	<-h.Ended()
	var nilHub *Hub // the launcher without --ui
	nilHub.Progress(1)
	nilHub.Control(0, &trace.ControlRecord{})
}
