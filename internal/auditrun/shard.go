package auditrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Shards: `dpsim audit --shard I/N` plays the I-th of N deterministic slices of an audit's
// trials and writes them into a part (its --out); `dpsim merge` folds the N parts into the
// outputs of the unsharded audit, bit for bit (MergeShards). Trial e is the same wherever it is
// played - its secret bit audit.Bit(seed, e), its noise episode e's streams, its split tag a hash
// of e (pkg/audit/trials.go) - so the analysis of the merged trials is the analysis of the whole.

// MaxShards bounds N in --shard I/N.
const MaxShards = 10_000

// ShardFormat names the format of a part's manifest (ShardManifestFile).
const ShardFormat = "dpsim-shard/1"

// ShardManifestFile is the part's manifest in its directory, written last: a part without it is
// incomplete.
const ShardManifestFile = "shard.json"

// ShardKindAudit is the Kind of an audit's part.
const ShardKindAudit = "audit"

// Shard is --shard I/N: slice I (0-based) of N.
type Shard struct {
	I int `json:"index"`
	N int `json:"count"`
}

// Enabled reports whether --shard was given.
func (s Shard) Enabled() bool { return s.N > 0 }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard parses --shard I/N: 0 <= I < N <= MaxShards.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, cli.UsageError("--shard %q: want I/N, e.g. 0/7 (slice I of N, I = 0..N-1)", v)
	}
	if n < 1 || n > MaxShards || i < 0 || i >= n {
		return Shard{}, cli.UsageError("--shard %q: want 0 <= I < N <= %d", v, MaxShards)
	}
	return Shard{I: i, N: n}, nil
}

// Range is the shard's trials of total: lo..hi-1, the I-th of N contiguous slices whose sizes
// differ by at most one.
func (s Shard) Range(total int) (lo, hi int) {
	return int(int64(s.I) * int64(total) / int64(s.N)), int(int64(s.I+1) * int64(total) / int64(s.N))
}

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
}

// ShardManifest is a part's shard.json: what it holds and everything a merge checks.
type ShardManifest struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	// Scenario is the scenario's name, Source its path as given, Digest the SHA-256 of its YAML
	// (hex) and YAML the file itself: the merge rebuilds the games from it.
	Scenario string `json:"scenario"`
	Source   string `json:"source"`
	Digest   string `json:"scenario_sha256"`
	YAML     []byte `json:"scenario_yaml"`
	Seed     uint64 `json:"seed"`
	// Build is the dpsim binary that played the part (buildID): parts of different builds may
	// have played different arithmetic, and are not merged.
	Build    string        `json:"build"`
	Shard    Shard         `json:"shard"`
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
// trial (audit.PlayChunk's layout).
type ShardPlayer func(ctx context.Context, k int, g *audit.Game, lo, hi int) ([]float64, error)

// NewShardPlayer is the player of a shard of a: the wire engine's processes, else in-process.
func NewShardPlayer(a *Audit, stderr io.Writer) ShardPlayer {
	if a.Opts.Engine == audit.EngineWire {
		w := NewWirePlayer(a, stderr)
		return func(ctx context.Context, k int, g *audit.Game, lo, hi int) ([]float64, error) {
			return w.playRange(ctx, k, g, a.Trials, lo, hi)
		}
	}
	return func(ctx context.Context, _ int, g *audit.Game, lo, hi int) ([]float64, error) {
		return audit.PlayChunk(ctx, g, a.Seed, lo, hi, a.Opts.Workers)
	}
}

// WriteShard plays the shard's trials of every point with play and writes the part into --out:
// each point's scores (trials-pNN.bin), then the manifest (shard.json), which it returns.
func (a *Audit) WriteShard(ctx context.Context, play ShardPlayer) (*ShardManifest, error) {
	o := a.Opts
	yaml, err := os.ReadFile(o.ScenarioPath)
	if err != nil {
		return nil, fmt.Errorf("--shard: %w", err)
	}
	if err := atomicfile.MkdirOutputs(o.Out, o.ShareOutputs); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	sum := sha256.Sum256(yaml)
	m := &ShardManifest{Format: ShardFormat, Kind: ShardKindAudit, Scenario: a.Name, Source: o.ScenarioPath, Digest: hex.EncodeToString(sum[:]),
		YAML: yaml, Seed: a.Seed, Build: buildID(), Shard: o.Shard, Settings: a.shardSettings()}
	total := 2 * a.Trials
	if o.Shard.N > total {
		return nil, cli.UsageError("--shard %s: %d shards of %d trials: at most %d shards", o.Shard, o.Shard.N, total, total)
	}
	mode := atomicfile.Mode(true, o.ShareOutputs) // the scores, like audit.json, are the audit's
	for k, g := range a.Games {
		lo, hi := o.Shard.Range(total)
		a.Log.Info().Str("point", a.Points[k].Name).Str("shard", o.Shard.String()).Int("lo", lo).Int("hi", hi).Msg("playing the shard's trials")
		start := time.Now()
		scores, err := play(ctx, k, g, lo, hi)
		if err != nil {
			return nil, PointErr(len(a.Points), k, a.Points[k], err)
		}
		p := ShardPoint{Name: a.Points[k].Name, Lo: lo, Hi: hi, Scores: g.ScoreNames(), File: fmt.Sprintf("trials-p%02d.bin", k),
			ElapsedSec: time.Since(start).Seconds()}
		if err := atomicfile.WriteFile(filepath.Join(o.Out, p.File), encodeScores(scores), mode); err != nil {
			return nil, err
		}
		m.Points = append(m.Points, p)
	}
	err = atomicfile.Write(filepath.Join(o.Out, ShardManifestFile), mode, func(w io.Writer) error { return cli.WriteJSON(w, m) })
	return m, err
}

// buildID names this binary's build: its Go version, module version and, when built from a
// git checkout, the commit (and "+modified" for uncommitted changes).
func buildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	id := bi.GoVersion + " " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		id += " " + rev + modified
	}
	return id
}
