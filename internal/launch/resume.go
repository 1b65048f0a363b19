package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// A resumed point (dpsim run --resume) continues its collection where the killed run left it:
// the metrics of the episodes folded before are rebuilt (ReplayEpisodes), checked against the
// recorded digest (MetricsDigest) and handed to the collector (Collector.ResumeAt).

// ReplayEpisodes runs episodes 0..n-1 of p with the fast engine and folds their records into a
// fresh Accumulator, as the collector folds the processes' records.
func ReplayEpisodes(ctx context.Context, p *plan.Plan, seeds sim.Seeds, n, perHost int) (*metrics.Accumulator, []fault.LinkStats, error) {
	acc, err := metrics.NewAccumulator(p, seeds.Run)
	if err != nil {
		return nil, nil, err
	}
	sink := func(tr *trace.Traces) error {
		for i := range tr.Control {
			if err := acc.AddControl(&tr.Control[i]); err != nil {
				return err
			}
		}
		for i := range tr.Consensus {
			if err := acc.AddConsensus(&tr.Consensus[i]); err != nil {
				return err
			}
		}
		return nil
	}
	res, _, err := engine.Run(ctx, p, seeds, engine.Options{Runs: n, AgentsPerHost: perHost, TraceSink: sink})
	if err != nil {
		return nil, nil, err
	}
	return acc, res.Links, nil
}

// MetricsDigest is the sha256 of the JSON of acc's Results.
func MetricsDigest(acc *metrics.Accumulator) (string, error) {
	data, err := json.Marshal(acc.Results())
	if err != nil {
		return "", fmt.Errorf("resume: metrics digest: %w", err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]), nil
}
