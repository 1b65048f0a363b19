package finitejson

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

type stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Hi   float64 `json:"ci_hi,omitempty"`
}

type Inner struct{ Scale float64 }

type result struct {
	Inner
	Name   string             `json:"name"`
	Final  []stat             `json:"final"`
	Series []float64          `json:"series"`
	ByLink map[string]stat    `json:"by_link"`
	Ratios map[string]float64 `json:"ratios"`
	Any    any                `json:"any"`
	Ptr    *stat              `json:"ptr"`
	Arr    [2]float64         `json:"arr"`
	Skip   float64            `json:"-"`
}

// Non-finite floats anywhere in a value are written as null, named by their JSON path, and the
// value is left as it was; finite numbers and strings that look like the sentinel are kept.
func TestMarshalWritesNullAndNamesThem(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	r := &result{Inner: Inner{Scale: math.Inf(-1)}, Name: "-1.7976931348623157e+308 in a string",
		Final: []stat{{N: 3, Mean: 1, Hi: 2}, {N: 3, Mean: inf, Hi: nan}}, Series: []float64{1, inf, 3},
		ByLink: map[string]stat{"a->b": {Mean: nan}, "c->d": {Mean: 4}}, Ratios: map[string]float64{"x": inf, "y": 0.5},
		Any: stat{Mean: inf}, Ptr: &stat{Hi: nan}, Arr: [2]float64{nan, 1}, Skip: nan}
	data, rep, err := MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got), string(data))
	require.Nil(t, got["Scale"])
	require.Equal(t, "-1.7976931348623157e+308 in a string", got["name"])
	final := got["final"].([]any)
	require.Equal(t, map[string]any{"n": 3.0, "mean": 1.0, "ci_hi": 2.0}, final[0])
	require.Equal(t, map[string]any{"n": 3.0, "mean": nil, "ci_hi": nil}, final[1])
	require.Equal(t, []any{1.0, nil, 3.0}, got["series"])
	require.Nil(t, got["by_link"].(map[string]any)["a->b"].(map[string]any)["mean"])
	require.Equal(t, 4.0, got["by_link"].(map[string]any)["c->d"].(map[string]any)["mean"])
	require.Equal(t, map[string]any{"x": nil, "y": 0.5}, got["ratios"])
	require.Nil(t, got["any"].(map[string]any)["mean"])
	require.Nil(t, got["ptr"].(map[string]any)["ci_hi"])
	require.Equal(t, []any{nil, 1.0}, got["arr"])

	require.Equal(t, 9, rep.Count, "json:\"-\" is not written, so not counted")
	paths := map[string]string{}
	for _, n := range rep.First {
		paths[n.Path] = n.Value
	}
	require.Equal(t, map[string]string{"Scale": "-Inf", "final[1].mean": "+Inf", "final[1].ci_hi": "NaN", "series[1]": "+Inf",
		"by_link[a->b].mean": "NaN", "ratios[x]": "+Inf", "any.mean": "+Inf", "ptr.ci_hi": "NaN", "arr[0]": "NaN"}, paths)

	// left as it was
	require.True(t, math.IsInf(r.Scale, -1) && math.IsInf(r.Final[1].Mean, 1) && math.IsNaN(r.Final[1].Hi) && math.IsInf(r.Series[1], 1))
	require.True(t, math.IsNaN(r.ByLink["a->b"].Mean) && math.IsInf(r.Ratios["x"], 1) && math.IsInf(r.Any.(stat).Mean, 1))
	require.True(t, math.IsNaN(r.Ptr.Hi) && math.IsNaN(r.Arr[0]) && math.IsNaN(r.Skip))
	require.Equal(t, rep, Find(r), "Find sees the same without encoding")
}

func TestMarshalFiniteIsEncodingJSON(t *testing.T) {
	v := result{Name: "ok", Final: []stat{{N: 1, Mean: 2}}, Series: []float64{1e-7, 1e21, -0.5}, Ratios: map[string]float64{"a": 1}}
	want, err := json.Marshal(v)
	require.NoError(t, err)
	got, rep, err := Marshal(v)
	require.NoError(t, err)
	require.Nil(t, rep)
	require.Equal(t, string(want), string(got))
	require.Nil(t, Find(v))
}

func TestReportBoundsItsList(t *testing.T) {
	s := make([]float64, 100)
	for i := range s {
		s[i] = math.NaN()
	}
	data, rep, err := Marshal(s)
	require.NoError(t, err)
	require.Equal(t, 100, rep.Count)
	require.Len(t, rep.First, MaxListed)
	require.Contains(t, rep.String(), "100 non-finite values (overflowed float64) written as null: [0] (NaN)")
	require.Contains(t, rep.String(), "and 80 more")
	var back []any
	require.NoError(t, json.Unmarshal(data, &back))
	require.Len(t, back, 100)
}

func ExampleMarshal() {
	type point struct {
		MSE []float64 `json:"mse"`
	}
	data, rep, _ := Marshal(point{MSE: []float64{0.25, math.Inf(1)}})
	fmt.Println(string(data))
	fmt.Println(rep)
	// Output:
	// {"mse":[0.25,null]}
	// 1 non-finite values (overflowed float64) written as null: mse[1] (+Inf)
}
