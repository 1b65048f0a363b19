package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// A resumed point (dpsim run --resume) continues its collection where the killed run left it:
// the metrics of the episodes folded before are rebuilt (ReplayEpisodes), checked against the
// recorded digest (MetricsDigest) and handed to the collector (Collector.ResumeAt); the run
// library replays them with the fast engine.

// MetricsDigest is the sha256 of the JSON of acc's Results.
func MetricsDigest(acc *metrics.Accumulator) (string, error) {
	data, err := json.Marshal(acc.Results())
	if err != nil {
		return "", fmt.Errorf("resume: metrics digest: %w", err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]), nil
}
