package auditrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/trace"
)

// scoreWire reads the eavesdropper's final estimate of every episode from its trace in dir (and,
// for the precision score, the evidence of its transcript: readPrecision), scores it with the
// public pair and joins it with the episode's secret bit.
func scoreWire(g *audit.Game, c wireConfig, dir string, bits []int8) (*audit.Outcome, error) {
	total := len(bits)
	lo, hi := c.span()
	hi = min(hi, total) // a sequential audit's stop between groups: bits[:e]
	est, err := readEstimates(dir, g.Plan.Steps, lo, hi, total, g.EstimateDim())
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	ev, err := readPrecision(g, filepath.Join(dir, contract.TranscriptFile(contract.ProcName(endpoint.Eavesdropper, 0, 0))), total)
	if err != nil {
		return nil, fmt.Errorf("wire engine: %w", err)
	}
	out := g.NewOutcome(audit.EngineWire, c.seed, c.trials)
	sc := g.Scorer()
	scores := make([]float64, len(g.ScoreNames()))
	for e := lo; e < hi; e++ {
		var pe audit.PrecisionEvidence
		if ev != nil {
			pe = ev[e]
		}
		sc.ScoresEvidence(est[e], pe, scores)
		out.Add(uint64(e), int(bits[e]), scores)
	}
	return out, nil
}

// readEstimates streams the eavesdropper process's trace file (pkg/sim trace format, one JSON
// record per step) and keeps its final estimate - the record of step T-1 - of every episode
// lo..hi-1 of the 0..total-1 (a shard's: --shard): memory O(episodes), whatever T.
func readEstimates(dir string, steps, lo, hi, total, dim int) ([][]float64, error) {
	path := launch.TracePath(dir, endpoint.Eavesdropper, 0, 0)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the eavesdropper's estimates: %w", err)
	}
	defer f.Close()
	est := make([][]float64, total)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), trace.MaxLine)
	// the fields every eavesdropper record has (trace.ControlRecord and trace.ConsensusRecord)
	var rec struct {
		Episode int       `json:"episode"`
		Step    int       `json:"step"`
		EveX0   []float64 `json:"eve_x0"`
	}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec.EveX0 = nil
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if rec.Step != steps-1 {
			continue
		}
		switch {
		case rec.Episode < 0 || rec.Episode >= total:
			return nil, fmt.Errorf("%s:%d: episode %d out of range 0..%d", path, line, rec.Episode, total-1)
		case len(rec.EveX0) != dim:
			return nil, fmt.Errorf("%s:%d: episode %d: final estimate has %d values, want %d", path, line, rec.Episode, len(rec.EveX0), dim)
		}
		est[rec.Episode] = rec.EveX0
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	var missing []int
	for e := lo; e < hi; e++ {
		if est[e] == nil {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no final estimate for %d episode(s), first %d", path, len(missing), missing[0])
	}
	return est, nil
}
