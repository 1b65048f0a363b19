package auditrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// maxManifest bounds a part's shard.json: the scenario file (scenario.MaxFileSize, base64) and
// a line per point.
const maxManifest = 2*scenario.MaxFileSize + 1<<20

// ShardPart is a part as dpsim merge read it: its directory and manifest.
type ShardPart struct {
	Dir string
	*ShardManifest
}

// ReadShards reads the parts' manifests and checks that they are the N shards of one audit:
// the same kind, scenario (digest), seed, N and settings, every index 0..N-1 exactly once. An
// error names the part (and the field) that does not fit. The parts come back by index.
func ReadShards(dirs []string) ([]*ShardPart, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no parts given")
	}
	var parts []*ShardPart
	for _, d := range dirs {
		m, err := readManifest(d)
		if err != nil {
			return nil, err
		}
		if len(parts) > 0 {
			if err := sameAudit(parts[0], &ShardPart{d, m}); err != nil {
				return nil, err
			}
		}
		parts = append(parts, &ShardPart{d, m})
	}
	return checkIndices(parts)
}

// readManifest reads and checks DIR/shard.json.
func readManifest(dir string) (*ShardManifest, error) {
	path := filepath.Join(dir, ShardManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("part %s: %w (not the --out of a dpsim audit --shard, or the shard did not finish)", dir, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxManifest {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a part's manifest", path, maxManifest)
	}
	var m ShardManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Format != ShardFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", path, m.Format, ShardFormat)
	}
	if m.Shard.N < 1 || m.Shard.N > MaxShards || m.Shard.I < 0 || m.Shard.I >= m.Shard.N {
		return nil, fmt.Errorf("%s: shard %s out of range", path, m.Shard)
	}
	return &m, nil
}

// sameAudit says which field of part p differs from the first part's.
func sameAudit(first, p *ShardPart) error {
	diff := func(field string, a, b any) error {
		return fmt.Errorf("part %s (shard %s) is not of the same audit as part %s (shard %s): %s %v, not %v",
			p.Dir, p.Shard, first.Dir, first.Shard, field, b, a)
	}
	switch {
	case p.Kind != first.Kind:
		return diff("kind", first.Kind, p.Kind)
	case p.Digest != first.Digest:
		return diff("scenario_sha256 (the scenario file differs)", first.Digest, p.Digest)
	case p.Seed != first.Seed:
		return diff("seed", first.Seed, p.Seed)
	case p.Build != first.Build:
		return diff("build (another dpsim binary)", first.Build, p.Build)
	case p.Shard.N != first.Shard.N:
		return diff("shard count N", first.Shard.N, p.Shard.N)
	}
	a, b := reflect.ValueOf(first.Settings), reflect.ValueOf(p.Settings)
	for i := range a.NumField() {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			tag, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
			return diff("setting "+tag, a.Field(i).Interface(), b.Field(i).Interface())
		}
	}
	return nil
}

// checkIndices orders the parts by index and refuses a duplicated or missing one.
func checkIndices(parts []*ShardPart) ([]*ShardPart, error) {
	n := parts[0].Shard.N
	byIndex := make([]*ShardPart, n)
	for _, p := range parts {
		if q := byIndex[p.Shard.I]; q != nil {
			return nil, fmt.Errorf("shard %s given twice: parts %s and %s", p.Shard, q.Dir, p.Dir)
		}
		byIndex[p.Shard.I] = p
	}
	var missing []string
	for i, p := range byIndex {
		if p == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d of %d shards missing: %s (run dpsim audit --shard for each and give all their parts)",
			len(missing), n, strings.Join(missing, ", "))
	}
	return byIndex, nil
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
type ShardsPlayer struct{ Parts []*ShardPart }

// Play reads and folds every part's trials of point k (checking each part's range and scores).
func (sp ShardsPlayer) Play(_ context.Context, k int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error) {
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
