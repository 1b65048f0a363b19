package runner

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/internal/shard"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
)

// A run's shards: `dpsim run --engine fast --shard I/N --out PART` plays, of every point, the
// chunks i of the farm's cut (kinds.RunSpans) with i mod N == I - each as a worker plays it
// (kinds.PlayRunChunk), or over NATS the same chunks by its own processes (shard_nats.go) - and
// keeps their results in PART; `dpsim merge OUT PART...` runs the
// same command line again with --out OUT, its fast engine folding the parts' chunks in chunk
// order with the coordinator's judge and fold (kinds.FoldRun): what engine.Run returns, bit for
// bit, so that OUT's summary.json, report.md, traces and figures are the unsharded run's (but
// its times and run id).

// RunShardManifest is a run part's shard.json.
type RunShardManifest struct {
	shard.Header
	// Args is the run's command line without --shard and --out: the merge parses it again.
	Args []string `json:"args"`
	// Runs are the episodes of every point, Chunk the episodes of a chunk (kinds.RunSpans).
	Runs   int             `json:"runs"`
	Chunk  int             `json:"chunk_episodes"`
	Points []RunShardPoint `json:"points"`
	// Engine is the engine that played the part, fast or nats; NATS what the NATS engine's
	// processes were and did (nil: the fast engine): the shard's own summary, without points
	// (shardNATSRecord). Parts of different engines are not merged: the merged summary is of
	// one engine's run.
	Engine string          `json:"engine"`
	NATS   *record.Summary `json:"nats,omitempty"`
}

// RunShardPoint is one point's chunks in a part: Chunks of the point's cut (their indices), their
// results in File, each as lo, hi and length (uint64 little endian) then the result's bytes.
type RunShardPoint struct {
	Name   string `json:"name"`
	Chunks []int  `json:"chunks"`
	File   string `json:"file"`
	// Links are the NATS engine's link counters of the point's processes over all the
	// shard's episodes (the processes count them per session, not per chunk: the chunks hold
	// none), merged into the point's at the merge.
	Links []fault.LinkStats `json:"links,omitempty"`
}

// checkShard refuses what --shard cannot honour: it plays its chunks alone, in this process or
// over its own processes, into --out, and the merge folds what the parts hold (no checkpoint, no
// workers, no live view, no recording of the bus).
func (o *Options) checkShard() error {
	if !o.Shard.Enabled() {
		return nil
	}
	if o.Out == "" {
		return cli.UsageError("--shard %s: give --out PART, the directory of this shard's part (dpsim merge reads it)", o.Shard)
	}
	farmFlag := "--dispatch"
	if !o.Farm.Dispatch {
		farmFlag = "--spawn-workers"
	}
	for _, c := range []struct {
		on        bool
		flag, why string
	}{
		{o.Resume != "", "--resume", "a part is played whole (run the shard again)"},
		{o.Farm.Enabled(), farmFlag, "the shards are the workers (or give the whole run --dispatch instead)"},
		{o.UI != "", "--ui", "the live view is of one run (dpsim view OUT shows the merged run)"},
		{o.Attach, "--attach", "each shard starts its own processes"},
		{o.Record != "", "--record", "a recording of one shard's bus is not the run's, and the merge cannot fold recordings"},
	} {
		if c.on {
			return cli.UsageError("--shard and %s do not combine: %s", c.flag, c.why)
		}
	}
	return nil
}

// executeShard writes the shard's part (writeShard) once the run is prepared; a seed drawn here
// is refused (each shard would draw its own).
func (l *launcher) executeShard(ctx context.Context) (*Outcome, error) {
	if l.sum.SeedSource == cli.SeedFromCrypto {
		return nil, cli.UsageError("--shard %s: the scenario %s fixes no seed: give every shard the same --seed S", l.o.Shard, l.scn.Name)
	}
	if l.o.Engine == "nats" {
		// each shard its own subjects, should the shards share an external server (--nats-url)
		l.o.RunID += fmt.Sprintf("-s%d", l.o.Shard.I)
		l.sum.RunID = l.o.RunID
	}
	if err := l.writeShard(ctx); err != nil {
		return nil, err
	}
	l.log.Info().Str("shard", l.o.Shard.String()).Str("part", l.o.Out).Msg("part written: merge the parts with dpsim merge OUT PART...")
	return &Outcome{Summary: l.sum, Out: l.o.Out}, nil
}

// shardSpans are the chunk parameters and the chunks of point p of the run, as the farm cuts
// them (fastEngine.play's options, kinds.Run's spans).
func (l *launcher) shardSpans(opts engine.Options, chunk int) (kinds.RunParams, []farm.Span) {
	ps := kinds.RunParamsOf(l.seeds, opts)
	return ps, kinds.RunSpans(l.runs, chunk, ps.Traces, opts.TraceEpisodes)
}

// shardOptions are the engine options of a point as fastEngine.play gives them (the traces kept
// when the run traces episodes).
func (l *launcher) shardOptions() engine.Options {
	opts := engine.Options{Runs: l.runs, AgentsPerBlock: l.o.AgentsPerProcess}
	if t := l.traced(); !t.None() {
		opts.TraceEpisodes, opts.KeepTraces = t, true
	}
	return opts
}

// writeShard plays the shard's chunks of every point and writes them, then the manifest, into
// --out (instead of the run's outputs): in-process (playFastChunks) or over NATS
// (shard_nats.go), whose part also keeps what its processes were and did.
func (l *launcher) writeShard(ctx context.Context) (err error) {
	o := l.o
	yaml, err := os.ReadFile(o.ScenarioPath)
	if err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	m := &RunShardManifest{Header: shard.NewHeader(shard.KindRun, l.scn.Name, o.ScenarioPath, yaml, l.seeds.Run, o.Shard),
		Engine: o.Engine, Args: shardArgs(o.Args), Runs: l.runs, Chunk: farm.DefaultChunkEpisodes}
	mode := atomicfile.Mode(true, o.ShareOutputs) // the episodes' traces hold the plant's true state
	play := l.playFastChunks
	if o.Engine == "nats" {
		ne, err := l.startNATS()
		if err != nil {
			return err
		}
		defer ne.srv.Close()
		defer func() { // however the shard ends, the part keeps no secret its processes left
			if l.sum.Secrets == nil { // not yet removed (shardNATSRecord)
				l.removeSecrets()
			}
		}()
		play = ne.playChunks
	}
	for k, p := range l.plans {
		_, spans := l.shardSpans(l.shardOptions(), m.Chunk)
		pt := RunShardPoint{Name: l.points[k].Name, File: fmt.Sprintf("chunks-p%02d.bin", k), Chunks: []int{}}
		err := atomicfile.Write(filepath.Join(o.Out, pt.File), mode, func(w io.Writer) error {
			return play(ctx, k, p, spans, &pt, w)
		})
		if err != nil {
			return err
		}
		m.Points = append(m.Points, pt)
	}
	if o.Engine == "nats" {
		if m.NATS, err = l.shardNATSRecord(); err != nil {
			return err
		}
	}
	return atomicfile.Write(filepath.Join(o.Out, shard.ManifestFile), mode, func(w io.Writer) error { return cli.WriteJSON(w, m) })
}

// playFastChunks plays the shard's chunks of point k in-process, each as a worker plays it, and
// writes their results to w (pt: the point in the manifest).
func (l *launcher) playFastChunks(ctx context.Context, k int, p *plan.Plan, spans []farm.Span, pt *RunShardPoint, w io.Writer) error {
	ps, _ := l.shardSpans(l.shardOptions(), farm.DefaultChunkEpisodes)
	for i, sp := range spans {
		if !l.o.Shard.Mine(i) {
			continue
		}
		data, err := kinds.PlayRunChunk(ctx, p, ps, sp.Lo, sp.Hi, 0)
		if err != nil {
			return fmt.Errorf("point %s, episodes %d..%d: %w", pt.Name, sp.Lo, sp.Hi-1, err)
		}
		if err := writeRecord(w, sp, data); err != nil {
			return err
		}
		pt.Chunks = append(pt.Chunks, i)
	}
	return nil
}

// writeRecord writes one chunk's result: lo, hi, its length, its bytes.
func writeRecord(w io.Writer, sp farm.Span, data []byte) error {
	var h [24]byte
	binary.LittleEndian.PutUint64(h[0:], uint64(sp.Lo))
	binary.LittleEndian.PutUint64(h[8:], uint64(sp.Hi))
	binary.LittleEndian.PutUint64(h[16:], uint64(len(data)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// shardArgs is the command line without --shard and --out (with their values).
func shardArgs(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if strings.HasPrefix(args[i], "-") && (name == "shard" || name == "out") {
			if !hasValue {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// RunShardPart is a run part as dpsim merge read it.
type RunShardPart struct {
	Dir string
	*RunShardManifest
}

// ReadRunShards reads the run parts' manifests and checks that they are the N shards of one run
// (shard.Check; here also the same command line, episodes and chunks). The parts come back by index.
func ReadRunShards(dirs []string) ([]*RunShardPart, error) {
	var parts []*RunShardPart
	var hs []shard.Part
	for _, d := range dirs {
		m := &RunShardManifest{}
		if err := shard.ReadManifest(d, shard.KindRun, m); err != nil {
			return nil, err
		}
		if (m.Engine == "nats") != (m.NATS != nil) {
			return nil, fmt.Errorf("part %s: engine %q with no record of its processes, or the fast engine's with one", d, m.Engine)
		}
		parts = append(parts, &RunShardPart{d, m})
		hs = append(hs, shard.Part{Dir: d, Header: m.Header})
	}
	order, err := shard.Check(hs, func(first, p int) (string, any, any) {
		a, b := parts[first], parts[p]
		switch {
		case a.Engine != b.Engine:
			return "engine (parts of the fast and the NATS engine are not merged)", a.Engine, b.Engine
		case !slices.Equal(a.Args, b.Args):
			return "command line", strings.Join(a.Args, " "), strings.Join(b.Args, " ")
		case a.Runs != b.Runs || a.Chunk != b.Chunk || len(a.Points) != len(b.Points):
			return "episodes, chunk size or points", fmt.Sprint(a.Runs, a.Chunk, len(a.Points)), fmt.Sprint(b.Runs, b.Chunk, len(b.Points))
		}
		return "", nil, nil
	})
	if err != nil {
		return nil, err
	}
	byIndex := make([]*RunShardPart, len(order))
	for i, q := range order {
		byIndex[i] = parts[q]
	}
	return byIndex, nil
}

// MergeRunShards runs the parts' command line again with --out out (parse: dpsim run's parser),
// its fast engine folding the parts' chunks (foldShards) instead of playing them: the outputs of
// the unsharded run. The scenario must be at the path the shards read, with their bytes.
func MergeRunShards(ctx context.Context, parts []*RunShardPart, out string, parse func([]string) (*Options, error), stderr io.Writer, log zerolog.Logger) (*Outcome, error) {
	m := parts[0].RunShardManifest
	o, err := parse(append(slices.Clone(m.Args), "--out", out))
	if err != nil {
		return nil, fmt.Errorf("part %s: its command line: %w", parts[0].Dir, err)
	}
	if sum, err := fileSHA256(o.ScenarioPath); err != nil || sum != m.Digest {
		return nil, cli.UsageError("scenario %s: not the file the shards played (sha256 %s; run dpsim merge where they ran, with that file): %v", o.ScenarioPath, m.Digest, err)
	}
	// the seed is the command line's or the scenario's (a shard refuses a drawn one): the same
	// as the shards', and summary.json's seed_source says which, as the unsharded run's
	o.shardParts = parts
	return Execute(ctx, o, stderr, log)
}

// shardsEngine is the merge's engine: the parts' chunks folded (foldShards) and, for parts of
// the NATS engine, what their processes were and did added to the summary (natsPartsEngine).
func (l *launcher) shardsEngine() pointEngine {
	fe := &fastEngine{l: l, episodes: l.foldShards}
	if l.o.shardParts[0].NATS == nil {
		return fe
	}
	l.mergeNATSRecords()
	return &natsPartsEngine{fe: fe}
}

// foldShards is the merge's fast engine for point k: the parts' chunks of it, in chunk order
// (chunk i from part i mod N), folded by kinds.FoldRun.
func (l *launcher) foldShards(ctx context.Context, k int, p *plan.Plan, opts engine.Options) (*metrics.Results, error) {
	parts := l.o.shardParts
	n := len(parts)
	_, spans := l.shardSpans(opts, parts[0].Chunk)
	readers := make([]*bufio.Reader, n)
	for i, pt := range parts {
		if k >= len(pt.Points) {
			return nil, fmt.Errorf("part %s: no point %d", pt.Dir, k)
		}
		want := []int{}
		for c := range spans {
			if pt.Shard.Mine(c) {
				want = append(want, c)
			}
		}
		if !slices.Equal(pt.Points[k].Chunks, want) {
			return nil, fmt.Errorf("part %s: point %d holds chunks %v, want %v", pt.Dir, k, pt.Points[k].Chunks, want)
		}
		f, err := os.Open(filepath.Join(pt.Dir, filepath.Base(pt.Points[k].File)))
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", pt.Dir, err)
		}
		defer f.Close()
		readers[i] = bufio.NewReader(f)
	}
	res, _, err := kinds.FoldRun(ctx, p, l.seeds, opts, spans, func(i int) ([]byte, error) {
		data, err := readRecord(readers[i%n], spans[i])
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", parts[i%n].Dir, err)
		}
		return data, nil
	})
	return res, err
}

// maxRecord bounds a chunk's result in a part (a traced chunk is one episode: a consensus
// episode's records are (T+1) x 3N values).
const maxRecord = 256 << 20

// readRecord reads the next chunk result of a part, which must be of span sp; its length is
// bounded by maxRecord.
func readRecord(r io.Reader, sp farm.Span) ([]byte, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("chunk %d..%d: %w", sp.Lo, sp.Hi-1, errors.Join(err, errors.New("the part's chunks file ends early")))
	}
	lo, hi, n := binary.LittleEndian.Uint64(h[0:]), binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:])
	if lo != uint64(sp.Lo) || hi != uint64(sp.Hi) || n > maxRecord {
		return nil, fmt.Errorf("chunk %d..%d: the part holds %d..%d of %d bytes next", sp.Lo, sp.Hi-1, lo, hi-1, n)
	}
	data := make([]byte, n)
	_, err := io.ReadFull(r, data)
	return data, err
}
