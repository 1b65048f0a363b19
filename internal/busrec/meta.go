package busrec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// What a recording holds besides the messages, so that it stands alone (dpsim replay --check
// re-runs its eavesdropper from it): the run's metadata record (MetadataName: scenario, seed,
// run ids, runs, mode, encoding, agents per process, timeout, period), the scenario file the
// run read as an attachment (ScenarioAttachment), and for each point that ended with results
// a metadata record PointMetadataName(k) with the recorded run's eavesdropper metrics.

// ScenarioAttachment is the name of the attachment holding the bytes of the run's scenario
// file (media type ScenarioMediaType).
const ScenarioAttachment = "scenario.yaml"

// ScenarioMediaType is the media type of ScenarioAttachment.
const ScenarioMediaType = "application/yaml"

// PointMetadataName is the name of the metadata record of point k's results.
func PointMetadataName(k int) string { return MetadataName + "/point/p" + strconv.Itoa(k) }

// Keys of a point's metadata record.
const (
	pointRunID = "run_id"
	pointRuns  = "runs"
	pointEve   = "eve_sq_error" // the JSON of metrics.Series: its floats round-trip exactly
)

// PointMetadata is the metadata record of a point of run id run that ended with res: the
// eavesdropper's metrics (Results' eve_sq_error of its kind) and the episodes they cover. Nil
// when res has no eavesdropper series.
func PointMetadata(run string, res *metrics.Results) map[string]string {
	eve := EveSeries(res)
	if eve == nil {
		return nil
	}
	data, err := json.Marshal(eve)
	if err != nil { // a non-finite value, which the accumulator never produces
		return nil
	}
	return map[string]string{pointRunID: run, pointRuns: strconv.Itoa(res.Runs), pointEve: string(data)}
}

// EveSeries is the eavesdropper's metric of res: ||x0_hat(t) - x(0)||^2 over the episodes
// (nil: none).
func EveSeries(res *metrics.Results) *metrics.Series {
	switch {
	case res == nil:
		return nil
	case res.Control != nil:
		return &res.Control.EveSqError
	case res.Consensus != nil:
		return &res.Consensus.EveSqError
	}
	return nil
}

// recordedEve reads the eavesdropper's metrics and episodes from a point's metadata record.
func recordedEve(md map[string]string) (*metrics.Series, int, error) {
	var s metrics.Series
	if err := json.Unmarshal([]byte(md[pointEve]), &s); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", pointEve, err)
	}
	runs, err := strconv.Atoi(md[pointRuns])
	if err != nil {
		return nil, 0, fmt.Errorf("%s %q: %w", pointRuns, md[pointRuns], err)
	}
	return &s, runs, nil
}

// maxMismatches bounds the differences compareSeries lists.
const maxMismatches = 10

// compareSeries lists where got differs from want, bit for bit (float64 bits; N and the
// steps exactly): the element, the step and both values. It lists at most maxMismatches and
// returns their total count.
func compareSeries(name string, want, got *metrics.Series) ([]string, int) {
	var out []string
	n := 0
	diff := func(format string, args ...any) {
		n++
		if len(out) < maxMismatches {
			out = append(out, fmt.Sprintf(name+": "+format, args...))
		}
	}
	if want.Len() != got.Len() || len(want.N) != len(got.N) || len(want.Step) != len(got.Step) {
		diff("%d elements, the recorded run's has %d", got.Len(), want.Len())
		return out, n
	}
	for k := range want.Mean {
		if want.StepOf(k) != got.StepOf(k) {
			diff("element %d is step %d, the recorded run's step %d", k, got.StepOf(k), want.StepOf(k))
			continue
		}
		if want.N[k] != got.N[k] {
			diff("step %d: n = %d, the recorded run's %d", want.StepOf(k), got.N[k], want.N[k])
		}
		for _, f := range []struct {
			field     string
			want, got float64
		}{{"mean", want.Mean[k], got.Mean[k]}, {"se", want.SE[k], got.SE[k]}, {"ci_lo", want.Lo[k], got.Lo[k]}, {"ci_hi", want.Hi[k], got.Hi[k]}} {
			if math.Float64bits(f.want) != math.Float64bits(f.got) {
				diff("step %d: %s = %v (bits %016x), the recorded run's %v (bits %016x)", want.StepOf(k), f.field, f.got,
					math.Float64bits(f.got), f.want, math.Float64bits(f.want))
			}
		}
	}
	return out, n
}
