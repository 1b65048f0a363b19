package live

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
)

// The live view's series are audit.Bounds' rows: AuditBounds has one series per row, keyed by
// the row's Name, in its order (series lines them up), and record, the state's JSON and the
// metrics fill and name them by iterating the table.
func TestAuditBoundsFromTable(t *testing.T) {
	var b AuditBounds
	v := reflect.ValueOf(&b).Elem()
	var keys []string
	for i := range v.NumField() {
		if k := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]; k != "trials" {
			keys = append(keys, k)
		}
	}
	require.Len(t, b.series(), len(audit.Bounds))
	require.Len(t, keys, len(audit.Bounds), "one series per row of audit.Bounds")
	for i, lb := range audit.Bounds {
		require.Equal(t, lb.Name, keys[i])
		f := v.FieldByIndex([]int{i + 1})
		require.Equal(t, lb.Name, strings.Split(v.Type().Field(i+1).Tag.Get("json"), ",")[0])
		require.Same(t, f.Addr().Interface().(*ExactFloats), b.series()[i], "series()[%d] is %s's field", i, lb.Name)
	}

	for _, mech := range []string{"gaussian", "laplace"} {
		res := &audit.Result{Mechanism: mech, Trials: audit.Sides{X: 3, XPrime: 4}}
		rep := &audit.GameReport{Mechanism: mech, Scores: []audit.ScoreResult{{Name: "s", Result: res}}}
		want := map[string]float64{}
		for i, lb := range audit.Bounds {
			// set through the JSON key alone, as a script reading audit.json would find it
			var m map[string]any
			raw, err := json.Marshal(rep)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &m))
			m[lb.JSONKey] = 1.5 + float64(i)
			raw, err = json.Marshal(m)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, rep))
			want[lb.Name] = 1.5 + float64(i)
		}
		p := &AuditPoint{AuditPointInfo: AuditPointInfo{Name: "pt", Mechanism: mech}, Bounds: newAuditBounds()}
		p.record(rep, false)
		raw, err := json.Marshal(p.Bounds)
		require.NoError(t, err)
		var js map[string]any
		require.NoError(t, json.Unmarshal(raw, &js))
		require.Len(t, js, 1+len(audit.Bounds), "trials and a series per row")
		for _, lb := range audit.Bounds {
			s := js[lb.Name].([]any)
			require.Len(t, s, 1)
			if lb.ValidFor(mech) {
				require.Equal(t, want[lb.Name], s[0], "%s %s", mech, lb.Name)
			} else {
				require.Nil(t, s[0], "%s: %s is null, not a number", mech, lb.Name)
			}
		}

		// the metrics: a bound gauge per valid row, labelled with its ID
		h := NewAuditHub(AuditInfo{Scenario: "s", Points: []AuditPointInfo{p.AuditPointInfo}}, time.Now())
		h.points[0] = p
		mfs, err := h.registry().Gather()
		require.NoError(t, err)
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "dpsim_audit_epsilon_lower_bound" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "bound" {
						got[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		for _, lb := range audit.Bounds {
			if lb.ValidFor(mech) {
				require.Equal(t, want[lb.Name], got[lb.ID], "%s %s", mech, lb.ID)
			} else {
				_, ok := got[lb.ID]
				require.False(t, ok, "%s: no %s gauge", mech, lb.ID)
			}
		}
		require.False(t, math.IsNaN(got["cp"]))
	}
}
