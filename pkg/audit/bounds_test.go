package audit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonKeys are the JSON keys of the fields of struct type t.
func jsonKeys(t reflect.Type) []string {
	var k []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("json"); tag != "" && tag != "-" {
			k = append(k, strings.Split(tag, ",")[0])
		}
	}
	return k
}

// boundsReport is a report of mechanism whose every bound (and the mu behind it) has a distinct
// value, set through the table alone: headline row i is 1.5 + i, the score's 1.25 + i.
func boundsReport(mechanism string) *GameReport {
	res := &Result{EpsilonClaimed: 1, Delta: 0.01, Mechanism: mechanism, Confidence: 0.95}
	if mechanism == "gaussian" { // the tests behind the Gaussian-DP fit and the f-DP statistic
		res.GDP, res.FDP = &Bound{}, []FDPBound{{}}
	}
	r := &GameReport{Scenario: "s", EpsilonClaimed: 1, Delta: 0.01, Mechanism: mechanism, Confidence: 0.95, EpisodesPerTrial: 1,
		Scores: []ScoreResult{{Name: ScoreLLR, Result: res}}, Score: ScoreLLR}
	for i, b := range Bounds {
		e, m := b.of(res)
		*e = 1.25 + float64(i)
		if m != nil {
			*m = 0.25 + float64(i)
		}
		r.raiseHeadline(res) // the headline reads the table too
		e, _ = b.ofReport(r)
		*e = 1.5 + float64(i)
	}
	r.Verdict = r.verdict()
	return r
}

// The table is the single source of the bounds: the JSON keys of audit.json, the verdict's
// comparisons, report.md's lines and tables and dpsim audit's score line all come from iterating
// Bounds, so each row shows up in each of them, in the table's order, with its own value.
func TestBoundsTableIsTheSource(t *testing.T) {
	names := map[string]bool{}
	for _, b := range Bounds {
		require.False(t, names[b.Name], "row %s twice", b.Name)
		names[b.Name] = true
		require.Equal(t, "eps_lb_"+b.ID, b.Name)
		require.Equal(t, "epsilon_lb_"+b.ID, b.JSONKey)
		require.NotEmpty(t, b.what)
		require.NotEmpty(t, b.validity)
		require.NotEmpty(t, b.columns)
		require.Equal(t, b.SingleThreshold, b.set != nil, "%s: a single-threshold bound says how its test makes it", b.Name)
	}

	// Every epsilon_lb_ key of Result and GameReport is a row's; every row's keys are there.
	for _, typ := range []reflect.Type{reflect.TypeFor[Result](), reflect.TypeFor[GameReport]()} {
		var lb []string
		for _, k := range jsonKeys(typ) {
			if strings.HasPrefix(k, "epsilon_lb_") {
				lb = append(lb, k)
			}
		}
		var want []string
		for _, b := range Bounds {
			want = append(want, b.JSONKey)
		}
		require.Equal(t, want, lb, "%s: the epsilon_lb_ fields are the table's rows, in its order", typ.Name())
	}

	for _, mech := range []string{"gaussian", "laplace"} {
		r := boundsReport(mech)
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		var js map[string]any
		require.NoError(t, json.Unmarshal(raw, &js))
		res := r.Scores[0].Result
		var valid []LowerBound
		for i, b := range Bounds {
			// audit.json: the headline under the row's key, the score's too, the mu beside it
			require.Equal(t, 1.5+float64(i), js[b.JSONKey], "%s %s", mech, b.JSONKey)
			require.Equal(t, b.OfReport(r), js[b.JSONKey])
			sc := js["scores"].([]any)[0].(map[string]any)["result"].(map[string]any)
			require.Equal(t, b.Of(res), sc[b.JSONKey])
			if b.MuKey != "" {
				require.Equal(t, 0.25+float64(i), js[b.MuKey], "%s %s: the headline mu is the score's", mech, b.MuKey)
				require.Equal(t, js[b.MuKey], sc[b.MuKey])
			}
			if b.ValidFor(mech) {
				valid = append(valid, b)
			}
		}
		require.Equal(t, "gaussian" == mech, len(valid) == len(Bounds), "a pure-eps audit lacks the Gaussian rows")

		// the verdict compares every valid row, in order, with its own value
		for _, checks := range [][]BoundCheck{r.Checks(), r.EpisodeChecks(), res.Checks()} {
			require.Len(t, checks, len(valid))
			for i, c := range checks {
				require.Equal(t, valid[i].Name, c.Bound)
			}
		}
		for i, c := range r.Checks() {
			require.Equal(t, valid[i].OfReport(r), c.Value)
			require.Contains(t, c.Sentence(), valid[i].what)
			require.Contains(t, c.Sentence(), valid[i].validity)
		}
		require.Equal(t, Violation, r.Verdict)

		// a result's notes: one per row its audit computes, naming the row's keys
		ns := strings.Join(notes(Options{Selection: SelectSplit}, res, 1), "\n")
		fig, err := TradeoffFigure(res, "t")
		require.NoError(t, err)
		title := fig.Panels[0][0].Title.Text
		for _, b := range Bounds {
			require.Equal(t, b.ValidFor(mech), strings.Contains(ns, b.Name+" ("), "%s: note of %s", mech, b.Name)
			if b.ValidFor(mech) {
				require.Contains(t, title, fmt.Sprintf("%s %.3g", b.Label, b.Of(res)))
			} else {
				require.Contains(t, title, b.Label)
				require.Contains(t, title, "n/a (pure eps)")
			}
		}

		// report.md: a verdict line and a setup row per valid row, a column per row's column
		md := r.Markdown("")
		header := "| score |"
		for _, b := range Bounds {
			for _, c := range b.columns {
				header += " " + c.header + " |"
			}
		}
		require.Contains(t, md, header)
		for _, b := range Bounds {
			setup := "| " + b.Name + " | " + fmtG(b.OfReport(r)) + " ("
			if b.ValidFor(mech) {
				require.Contains(t, md, "- "+b.Name+" = ", "%s: verdict sentence of %s", mech, b.Name)
				require.Contains(t, md, b.Name+" > eps")
				require.Contains(t, md, setup)
				require.Contains(t, res.ScoreLine(fmtG), b.Name+" "+fmtG(b.Of(res)))
			} else {
				require.NotContains(t, md, setup)
				require.NotContains(t, res.ScoreLine(fmtG), b.Name)
			}
		}
	}
}
