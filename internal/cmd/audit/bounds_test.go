package auditcmd

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/pkg/audit"
)

// withBounds sets every row of audit.Bounds in v (a *GameReport or *Result) through its JSON
// keys alone, as a script reading audit.json finds them: row i's eps to base + i, its mu to
// base/10 + i.
func withBounds(t *testing.T, v any, base float64) {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for i, b := range audit.Bounds {
		m[b.JSONKey] = base + float64(i)
		if b.MuKey != "" {
			m[b.MuKey] = base/10 + float64(i)
		}
	}
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v))
}

// dpsim audit's JSON and table read audit.Bounds: a sweep's top-level keys are every row's
// (the worst point's values), the table's score lines name each row the audit computes with its
// value, its composition lines each row of the composition figure.
func TestOutputBoundsFromTable(t *testing.T) {
	for _, mech := range []string{"gaussian", "laplace"} {
		var reps []*audit.GameReport
		for k, base := range []float64{1.5, 2.5} {
			res := &audit.Result{Mechanism: mech, FDP: []audit.FDPBound{{}}}
			withBounds(t, res, base)
			r := &audit.GameReport{Scenario: "p" + string(rune('0'+k)), Mechanism: mech, EpsilonClaimed: 1, EpisodesPerTrial: 1 + k,
				EpsilonClaimedRun: 1, Scores: []audit.ScoreResult{{Name: "llr", Result: res}}, Score: "llr"}
			withBounds(t, r, base)
			reps = append(reps, r)
		}
		o := auditrun.SweepOutput("s", audit.Violation, 0.95, reps)
		raw, err := json.Marshal(o)
		require.NoError(t, err)
		var js map[string]any
		require.NoError(t, json.Unmarshal(raw, &js))
		n := 0
		for k := range js {
			if strings.HasPrefix(k, "epsilon_lb_") {
				n++
			}
		}
		require.Equal(t, len(audit.Bounds), n, "the epsilon_lb_ keys of dpsim audit --json are the table's rows")
		var table, comp bytes.Buffer
		printTable(&table, reps, "")
		printComposition(&comp, reps)
		var scores []string
		for _, l := range strings.Split(table.String(), "\n") {
			if strings.HasPrefix(l, "score ") {
				scores = append(scores, l)
			}
		}
		lines := strings.Join(scores, "\n")
		for i, b := range audit.Bounds {
			require.Equal(t, 2.5+float64(i), js[b.JSONKey], "%s: the worst point's %s", mech, b.JSONKey)
			if b.MuKey != "" {
				require.Equal(t, 0.25+float64(i), js[b.MuKey])
			}
			g := func(v float64) string { return b.Name + " " + strconv.FormatFloat(v, 'g', 4, 64) }
			if b.ValidFor(mech) {
				require.Contains(t, lines, g(1.5+float64(i)), "%s: score line of %s", mech, b.Name)
			} else {
				require.NotContains(t, lines, b.Name)
			}
			if b.Composition != "" {
				require.Contains(t, comp.String(), g(2.5+float64(i)))
			}
		}
	}
}
