package auditrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
)

// estimateTail reads the eavesdropper's final estimates (its records of step T-1) as its trace
// file grows, scores them and hands them to the live view: the wire engine's feed of --ui.
// Every process has written a group's records once its ctl.done for the group came, so a poll
// after a group sees them; a line not yet complete is read at the next poll. The audit's result
// does not come from here: it reads the whole file at the end (readEstimates).
type estimateTail struct {
	path   string
	off    int64
	steps  int
	g      *audit.Game
	sc     *audit.Scorer
	scores []float64
	part   *audit.Outcome
	seen   []bool
	last   time.Time
}

func newEstimateTail(path string, g *audit.Game, total int) *estimateTail {
	return &estimateTail{path: path, steps: g.Plan.Steps, g: g, sc: g.Scorer(), scores: make([]float64, len(g.ScoreNames())),
		part: g.NewOutcome(audit.EngineWire, 0, 0), seen: make([]bool, total)}
}

// poll reads what the trace gained (at most every live.AuditInterval/2 unless final) and hands
// the trials it completes, with their secret bits, to chunk.
func (t *estimateTail) poll(bits []int8, chunk func(*audit.Outcome), final bool) error {
	if !final && time.Since(t.last) < live.AuditInterval/2 {
		return nil
	}
	t.last = time.Now()
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1] // whole lines only
	t.off += int64(len(b))
	var rec struct {
		Episode int       `json:"episode"`
		Step    int       `json:"step"`
		EveX0   []float64 `json:"eve_x0"`
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b[:i]
		b = b[i+1:]
		if !bytes.Contains(line, []byte(`"eve_x0"`)) {
			continue
		}
		rec.EveX0 = nil
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%s: %w", t.path, err)
		}
		e := rec.Episode
		if rec.Step != t.steps-1 || e < 0 || e >= len(t.seen) || t.seen[e] || len(rec.EveX0) != t.g.EstimateDim() {
			continue
		}
		t.seen[e] = true
		t.sc.Scores(rec.EveX0, t.scores)
		t.part.Add(uint64(e), int(bits[e]), t.scores)
	}
	if t.part.Episodes > 0 {
		chunk(t.part)
		t.part.Reset()
	}
	return nil
}
