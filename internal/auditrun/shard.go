package auditrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/shard"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Shards: `dpsim audit --shard I/N` plays the I-th of N deterministic slices of an audit's
// trials and writes them into a part (its --out); `dpsim merge` folds the N parts into the
// outputs of the unsharded audit, bit for bit (merge.go). Trial e is the same wherever it is
// played - its secret bit audit.Bit(seed, e), its noise episode e's streams, its split tag a hash
// of e (pkg/audit/trials.go) - so the analysis of the merged trials is the analysis of the whole.

// Shard is --shard I/N (internal/shard).
type Shard = shard.Shard

// ParseShard parses --shard I/N (shard.Parse).
var ParseShard = shard.Parse

// ShardSettings are the settings that change an audit's result: every part of a merge must have
// the same (the flags resolved: the scenario's audit section and the defaults applied).
type ShardSettings struct {
	Engine           string  `json:"engine"`
	Trials           int     `json:"trials"`
	Adjacency        string  `json:"adjacency"`
	Confidence       float64 `json:"confidence"`
	Selection        string  `json:"selection"`
	EpisodesPerTrial int     `json:"episodes_per_trial"`
	EpisodesSweep    []int   `json:"episodes_per_trial_sweep"`
	Precision        bool    `json:"precision"`
}

// ShardPoint is one point's trials in a part: trials Lo..Hi-1 of the point, their scores (Scores
// per trial, in that order) in File, little-endian float64 bits.
type ShardPoint struct {
	Name       string   `json:"name"`
	Lo         int      `json:"lo"`
	Hi         int      `json:"hi"`
	Scores     []string `json:"scores"`
	File       string   `json:"file"`
	ElapsedSec float64  `json:"elapsed_sec"`
	// Wire is what the wire engine's processes of the shard were and did (nil: the fast engine):
	// the merge adds it to the point's report, named by shard.
	Wire *ShardWire `json:"wire,omitempty"`
}

// ShardWire is a wire shard's record of its processes: who played each role, the problems
// attributed to them, the degradation and the engine's notes (what WirePlayer.Annotate adds to
// an unsharded report).
type ShardWire struct {
	Processes []audit.RoleProcess `json:"processes,omitempty"`
	Problems  []audit.RoleProblem `json:"problems,omitempty"`
	Degraded  []string            `json:"degraded,omitempty"`
	Notes     []string            `json:"notes,omitempty"`
}

// ShardManifest is an audit part's shard.json: the header every part has (the scenario's
// digest, the seed, the build, I and N), the scenario file itself (the merge rebuilds the games
// from it), the settings and every point's trials.
type ShardManifest struct {
	shard.Header
	YAML     []byte        `json:"scenario_yaml"`
	Settings ShardSettings `json:"settings"`
	Points   []ShardPoint  `json:"points"`
}

// shardSettings are a's result-changing settings.
func (a *Audit) shardSettings() ShardSettings {
	o := a.Opts
	return ShardSettings{Engine: o.Engine, Trials: a.Trials, Adjacency: string(a.GameOpts.Adjacency), Confidence: a.Conf,
		Selection: string(o.Selection), EpisodesPerTrial: o.EpisodesPerTrial, EpisodesSweep: o.EpisodesSweep, Precision: o.Precision}
}

// CheckShard refuses the flags --shard cannot honour: it needs --out (the part) and a seed every
// shard shares, and plays the planned trials of the fast or wire engine, nothing else.
func (o *Options) CheckShard(set map[string]bool) error {
	if !o.Shard.Enabled() {
		return nil
	}
	if o.Out == "" {
		return cli.UsageError("--shard %s: give --out PART, the directory of this shard's part (dpsim merge reads it)", o.Shard)
	}
	for _, f := range []string{"sequential", "one-run", "ui", "write-scores", "scores", "role", "fail-on-violation", "dispatch", "spawn-workers"} {
		if set[f] {
			return cli.UsageError("--shard and --%s exclude each other (a shard plays its slice of the planned trials; dpsim merge analyses them)", f)
		}
	}
	return nil
}

// CheckShardSeed refuses a shard without a fixed seed: each shard would draw its own.
func (o *Options) CheckShardSeed(s *scenario.Scenario) error {
	if o.Shard.Enabled() && !o.SeedSet && s.Seed == 0 {
		return cli.UsageError("--shard %s: the scenario %s fixes no seed: give every shard the same --seed S", o.Shard, s.Name)
	}
	return nil
}

// ShardPlayer plays trials lo..hi-1 of point k's game and returns their scores, trial after
// trial (audit.PlayChunk's layout), and the wire engine's record of its processes (nil: none).
type ShardPlayer func(ctx context.Context, k int, g *audit.Game, lo, hi int) ([]float64, *ShardWire, error)

// NewShardPlayer is the player of a shard of a: the wire engine's processes, else in-process.
func NewShardPlayer(a *Audit, stderr io.Writer) ShardPlayer {
	if a.Opts.Engine == audit.EngineWire {
		w := NewWirePlayer(a, stderr)
		return func(ctx context.Context, k int, g *audit.Game, lo, hi int) ([]float64, *ShardWire, error) {
			return w.playRange(ctx, k, g, a.Trials, lo, hi)
		}
	}
	return func(ctx context.Context, _ int, g *audit.Game, lo, hi int) ([]float64, *ShardWire, error) {
		scores, err := audit.PlayChunk(ctx, g, a.Seed, lo, hi, a.Opts.Workers)
		return scores, nil, err
	}
}

// WriteShard plays the shard's trials of every point with play and writes the part into --out:
// each point's scores (trials-pNN.bin), then the manifest (shard.json), which it returns.
func (a *Audit) WriteShard(ctx context.Context, play ShardPlayer) (*ShardManifest, error) {
	o := a.Opts
	total := 2 * a.Trials
	if o.Shard.N > total {
		return nil, cli.UsageError("--shard %s: %d shards of %d trials: at most %d shards", o.Shard, o.Shard.N, total, total)
	}
	yaml, err := os.ReadFile(o.ScenarioPath)
	if err != nil {
		return nil, fmt.Errorf("--shard: %w", err)
	}
	if err := atomicfile.MkdirOutputs(o.Out, o.ShareOutputs); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	m := &ShardManifest{Header: shard.NewHeader(shard.KindAudit, a.Name, o.ScenarioPath, yaml, a.Seed, o.Shard), YAML: yaml, Settings: a.shardSettings()}
	mode := atomicfile.Mode(true, o.ShareOutputs) // the scores, like audit.json, are the audit's
	for k, g := range a.Games {
		lo, hi := o.Shard.Range(total)
		a.Log.Info().Str("point", a.Points[k].Name).Str("shard", o.Shard.String()).Int("lo", lo).Int("hi", hi).Msg("playing the shard's trials")
		start := time.Now()
		scores, wire, err := play(ctx, k, g, lo, hi)
		if err != nil {
			return nil, PointErr(len(a.Points), k, a.Points[k], err)
		}
		p := ShardPoint{Name: a.Points[k].Name, Lo: lo, Hi: hi, Scores: g.ScoreNames(), File: fmt.Sprintf("trials-p%02d.bin", k),
			ElapsedSec: time.Since(start).Seconds(), Wire: wire}
		if err := atomicfile.WriteFile(filepath.Join(o.Out, p.File), encodeScores(scores), mode); err != nil {
			return nil, err
		}
		m.Points = append(m.Points, p)
	}
	err = atomicfile.Write(filepath.Join(o.Out, shard.ManifestFile), mode, func(w io.Writer) error { return cli.WriteJSON(w, m) })
	return m, err
}
