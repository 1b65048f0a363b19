package privacy

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDpEventGaussian: k episodes of a mu-GDP release are SelfComposedDpEvent(GaussianDpEvent(1/mu), k)
// in dp_accounting's to_named_tuple form, and the curve passes through the guarantee's eps_run.
func TestDpEventGaussian(t *testing.T) {
	g, err := ComposeGaussian(16, 1, 1e-2, 0.5, 1e-5, Tight)
	require.NoError(t, err)
	require.Empty(t, g.DpEventError)
	b, err := json.Marshal(g.DpEvent.Event)
	require.NoError(t, err)
	require.JSONEq(t, `{"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent",
		"event": {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 2}, "count": 16}`, string(b))
	require.True(t, g.DpEvent.Exact)
	require.Nil(t, g.DpEvent.BoundEvent)
	require.Equal(t, "GaussianMechanism", g.DpEvent.PRV.Class)
	require.Equal(t, 2.0, g.DpEvent.PRV.Args["noise_multiplier"])
	require.Len(t, g.DpEventCurve, len(CurveDeltas)) // 1e-5 is one of them
	for i, p := range g.DpEventCurve {
		if i > 0 {
			require.Less(t, p.Delta, g.DpEventCurve[i-1].Delta)
			require.Greater(t, p.Epsilon, g.DpEventCurve[i-1].Epsilon)
		}
		if p.Delta == 1e-5 {
			require.Equal(t, g.EpsilonRun, p.Epsilon)
		}
	}
	// json:"-": the record of the guarantee itself is unchanged; RunFields carries the event.
	b, err = json.Marshal(g)
	require.NoError(t, err)
	require.NotContains(t, string(b), "dp_event")
	b, err = json.Marshal(g.Fields(false))
	require.NoError(t, err)
	require.Contains(t, string(b), `"dp_event":{"version":1`)
	require.Contains(t, string(b), `"dp_event_curve":[`)
}

// TestDpEventLaplace: the event is the Laplace release, the bound the k-fold two-bucket randomized
// response whose likelihood ratio is e^eps0, and the curve is the kov-optimal composition; the run's
// delta 0 adds the point (0, k eps0).
func TestDpEventLaplace(t *testing.T) {
	g, err := ComposeLaplace(10, 0.5, 0)
	require.NoError(t, err)
	ev := g.DpEvent
	require.Equal(t, "LaplaceDpEvent", ev.Event.Event.ClassName)
	require.Equal(t, 2.0, *ev.Event.Event.NoiseMultiplier)
	require.Equal(t, 10, *ev.Event.Count)
	require.False(t, ev.Exact)
	rr := ev.BoundEvent.Event
	require.Equal(t, "RandomizedResponseDpEvent", rr.ClassName)
	require.Equal(t, 2, *rr.NumBuckets)
	p := *rr.NoiseParameter
	require.InDelta(t, 0.5, math.Log((1-p/2)/(p/2)), 1e-15)
	require.Equal(t, "REPLACE_ONE", ev.BoundNeighboringRelation)
	require.Equal(t, map[string]float64{"mu": 0.5}, ev.PRV.Args)
	require.Equal(t, "PureDPMechanism", ev.PRVBound.Class)
	last := g.DpEventCurve[len(g.DpEventCurve)-1]
	require.Equal(t, EpsDelta{Delta: 0, Epsilon: 5}, last)
	for _, c := range g.DpEventCurve[:len(g.DpEventCurve)-1] {
		e, err := LaplaceRunEpsilon(0.5, 10, c.Delta)
		require.NoError(t, err)
		require.Equal(t, e, c.Epsilon)
	}
}

// TestDpEventRefusals: no event for a zero or infinite per-episode parameter (noise_multiplier would
// not be finite), nor for an unknown mechanism; the guarantee then says why.
func TestDpEventRefusals(t *testing.T) {
	for _, c := range []struct {
		m    Mechanism
		v    float64
		k    int
		want string
	}{
		{Gaussian, 0, 3, "mu = 0"}, {Laplace, math.Inf(1), 3, "eps = +Inf"}, {"binomial", 1, 3, "no accountant event"}, {Gaussian, 1, 0, "episodes = 0"},
	} {
		_, _, err := NewDpEvent(c.m, c.v, c.k, 1e-5)
		require.ErrorContains(t, err, c.want)
	}
	g, err := ComposeGaussian(4, 1, 1e-2, 0, 1e-5, Tight)
	require.NoError(t, err)
	require.Nil(t, g.DpEvent)
	require.Contains(t, g.DpEventError, "mu = 0")
}
