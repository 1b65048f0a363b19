package auditrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/shard"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// ShardPart is a part as dpsim merge read it: its directory and manifest.
type ShardPart struct {
	Dir string
	*ShardManifest
}

// ReadShards reads the parts' manifests and checks that they are the N shards of one audit
// (shard.Check: the same scenario, seed, build and N, every index 0..N-1 exactly once; here also
// the same settings). An error names the part (and the field) that does not fit. The parts come
// back by index.
func ReadShards(dirs []string) ([]*ShardPart, error) {
	var parts []*ShardPart
	var hs []shard.Part
	for _, d := range dirs {
		m := &ShardManifest{}
		if err := shard.ReadManifest(d, shard.KindAudit, m); err != nil {
			return nil, err
		}
		parts = append(parts, &ShardPart{d, m})
		hs = append(hs, shard.Part{Dir: d, Header: m.Header})
	}
	order, err := shard.Check(hs, func(first, p int) (string, any, any) { return settingDiff(parts[first].Settings, parts[p].Settings) })
	if err != nil {
		return nil, err
	}
	byIndex := make([]*ShardPart, len(order))
	for i, q := range order {
		byIndex[i] = parts[q]
	}
	return byIndex, nil
}

// settingDiff names the first setting that differs between a and b ("": none).
func settingDiff(a, b ShardSettings) (field string, want, got any) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			tag, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			return "setting " + tag, va.Field(i).Interface(), vb.Field(i).Interface()
		}
	}
	return "", nil, nil
}

// MergeOptions are dpsim merge's flags that reach the outputs.
type MergeOptions struct {
	Out             string
	JSON            bool
	FailOnViolation bool
	ShareOutputs    bool
}

// NewMerged rebuilds the audit of the parts (ReadShards' result) as the shards built it: the
// scenario from the YAML they carry, their seed and settings, with mo's outputs.
func NewMerged(parts []*ShardPart, mo MergeOptions, log zerolog.Logger) (*Audit, error) {
	m := parts[0].ShardManifest
	st := m.Settings
	o := &Options{ScenarioPath: m.Source, Engine: st.Engine, Trials: st.Trials, Confidence: st.Confidence, Seed: m.Seed, SeedSet: true,
		Out: mo.Out, JSON: mo.JSON, FailOnViolation: mo.FailOnViolation, ShareOutputs: mo.ShareOutputs, Selection: audit.Selection(st.Selection),
		EpisodesPerTrial: st.EpisodesPerTrial, EpisodesSweep: st.EpisodesSweep, Precision: st.Precision, LogLevel: "info"}
	if st.Adjacency != "" {
		adj, err := privacy.ParseAdjacency(st.Adjacency)
		if err != nil {
			return nil, fmt.Errorf("part %s: settings.adjacency: %w", parts[0].Dir, err)
		}
		o.Adjacency = adj
	}
	s, err := scenario.Parse(m.YAML, m.Source)
	if err != nil {
		return nil, fmt.Errorf("part %s: the scenario it carries: %w", parts[0].Dir, err)
	}
	if err := CheckCost(o, s); err != nil { // the audit the parts claim, estimated as dpsim audit estimates it
		return nil, fmt.Errorf("part %s: %w", parts[0].Dir, err)
	}
	a, err := New(o, s, m.Seed, log)
	if err != nil {
		return nil, err
	}
	if a.Trials != st.Trials || a.Conf != st.Confidence || len(a.Points) != len(m.Points) {
		return nil, fmt.Errorf("part %s: the audit rebuilt from it has %d trials, confidence %v and %d points, not %d, %v and %d",
			parts[0].Dir, a.Trials, a.Conf, len(a.Points), st.Trials, st.Confidence, len(m.Points))
	}
	return a, nil
}

// ShardsPlayer is the player of dpsim merge: point k's outcome is the parts' trials of it,
// folded in order of their index as the farm folds its chunks (audit.Outcome.AddChunk).
type ShardsPlayer struct {
	Parts []*ShardPart
	point int // the point played last (Annotate's)
}

// Annotate adds to the point's report what the wire engine's processes of each shard were and
// did (their list, problems, degradation and notes, named by shard); nothing for the fast engine.
func (sp *ShardsPlayer) Annotate(rep *audit.GameReport, complete bool) {
	for _, p := range sp.Parts {
		w := p.Points[sp.point].Wire
		if w == nil {
			continue
		}
		for _, pr := range w.Processes {
			pr.Process = fmt.Sprintf("%s (shard %s)", pr.Process, p.Shard)
			rep.Processes = append(rep.Processes, pr)
		}
		for _, pr := range w.Problems {
			pr.Process = fmt.Sprintf("%s (shard %s)", pr.Process, p.Shard)
			rep.Problems = append(rep.Problems, pr)
		}
		for _, d := range w.Degraded {
			rep.Degraded = append(rep.Degraded, fmt.Sprintf("shard %s: %s", p.Shard, d))
		}
		for _, n := range w.Notes {
			if complete {
				rep.Notes = append(rep.Notes, fmt.Sprintf("shard %s: %s", p.Shard, n))
			}
		}
	}
}

// Play reads and folds every part's trials of point k (checking each part's range and scores).
func (sp *ShardsPlayer) Play(_ context.Context, k int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error) {
	sp.point = k
	out := g.NewOutcome(sp.Parts[0].Settings.Engine, sp.Parts[0].Seed, trials)
	var elapsed float64
	for _, p := range sp.Parts {
		if len(p.Points) <= k {
			return nil, fmt.Errorf("part %s: no point %d", p.Dir, k)
		}
		pt := p.Points[k]
		if lo, hi := p.Shard.Range(2 * trials); pt.Lo != lo || pt.Hi != hi || !slices.Equal(pt.Scores, g.ScoreNames()) {
			return nil, fmt.Errorf("part %s: point %d holds trials %d..%d of scores %v, want %d..%d of %v",
				p.Dir, k, pt.Lo, pt.Hi-1, pt.Scores, lo, hi-1, g.ScoreNames())
		}
		scores, err := readScores(filepath.Join(p.Dir, filepath.Base(pt.File)), (pt.Hi-pt.Lo)*len(pt.Scores))
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", p.Dir, err)
		}
		if pt.Hi > pt.Lo {
			if err := out.AddChunk(pt.Lo, pt.Hi, scores); err != nil {
				return nil, fmt.Errorf("part %s: %w", p.Dir, err)
			}
		}
		elapsed = max(elapsed, pt.ElapsedSec) // the shards ran side by side: the longest is the wall time
		feed.Progress(out.Episodes, 2*trials)
	}
	out.Elapsed = time.Duration(elapsed * float64(time.Second))
	return out, nil
}

// readScores reads a part's scores file, which must hold exactly n scores.
func readScores(path string, n int) ([]float64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() != int64(8*n) {
		return nil, fmt.Errorf("%s: %d bytes, want %d (%d scores)", path, st.Size(), 8*n, n)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeScores(data)
}
