package runner

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// A run's shards over NATS: `dpsim run --shard I/N` (the NATS engine) plays the same chunks as
// the fast engine's shard I/N - of every point, the chunks i of the farm's cut with i mod N == I
// - over its own server and role processes (launch.PlayPoint with the chunks' episode ranges),
// and writes each chunk as the fast engine's shard does: its episodes reduced by the collector
// (launch.PlayOptions.Reduced: the one Accumulator's reduction of the merged records) and the
// merged records of its traced episodes, as engine.Chunk. The processes draw an episode's noise
// and link fates from the run's seeds and the episode's own number, so a chunk is the same
// whichever shard plays it, and the merge's fold (foldShards) gives the unsharded NATS run's
// Results bit for bit (the NATS and fast engines agree bit for bit). What the chunks cannot
// hold - the processes' link counters (counted per session) and what the processes were and did
// - the part keeps in its manifest (RunShardPoint.Links, and RunShardManifest.NATS: the shard's
// own summary without points), and the merge adds it to the merged summary, each process named
// by its shard.

// playChunks plays the shard's chunks of point k (of spans) over the point's processes and
// writes each chunk, as the fast engine's shard does, to w as soon as its last episode is
// merged; the processes go into the summary (recordSession), their link counters into pt. A
// point with none of the shard's chunks starts no process.
func (e *natsEngine) playChunks(ctx context.Context, k int, p *plan.Plan, spans []farm.Span, pt *RunShardPoint, w io.Writer) error {
	l := e.l
	var ranges []launch.EpisodeRange
	cw := &chunkWriter{w: w, traces: map[int]*trace.Traces{}}
	for i, sp := range spans {
		if l.o.Shard.Mine(i) {
			// consecutive chunks are one range: its groups of episodes in flight span them (the
			// grouping changes no number)
			if n := len(ranges); n > 0 && ranges[n-1].Hi == sp.Lo {
				ranges[n-1].Hi = sp.Hi
			} else {
				ranges = append(ranges, launch.EpisodeRange{Lo: sp.Lo, Hi: sp.Hi})
			}
			cw.spans = append(cw.spans, sp)
			pt.Chunks = append(pt.Chunks, i)
		}
	}
	if len(ranges) == 0 {
		return nil
	}
	cfg := e.sessionConfig(k, p)
	l.log.Info().Str("point", l.points[k].Name).Str("run", cfg.Run).Str("shard", l.o.Shard.String()).Int("chunks", len(cw.spans)).Msg("starting processes")
	po, err := launch.PlayPoint(ctx, cfg, launch.PlayOptions{Runs: l.runs, Ranges: ranges, TraceEpisodes: l.traced(), Reduced: cw.episode,
		Stall: (&stallReporter{l: l}).report})
	if po == nil { // the processes did not start
		return err
	}
	ps := l.recordSession(po, k, p, cfg)
	if po.Results != nil {
		l.recordResults(po, &ps)
		pt.Links = po.Results.Links
	}
	if err == nil {
		err = cw.finish()
	}
	if err != nil {
		return fmt.Errorf("point %s: %w", pt.Name, err)
	}
	return nil
}

// chunkWriter gathers the episodes a shard's processes played, handed over in episode order,
// into the chunks of spans and writes each (engine.Chunk, as kinds.PlayRunChunk's) once whole.
type chunkWriter struct {
	w      io.Writer
	spans  []farm.Span // the shard's chunks, in order
	next   int         // the chunk being gathered
	eps    [][]byte
	traces map[int]*trace.Traces
}

// episode takes episode ep, reduced (metrics.Accumulator.MarshalEpisode), with its merged
// records when traced (nil: not).
func (cw *chunkWriter) episode(ep int, reduced []byte, tr *trace.Traces) error {
	if cw.next >= len(cw.spans) {
		return fmt.Errorf("episode %d handed over after the shard's last chunk", ep)
	}
	sp := cw.spans[cw.next]
	if want := sp.Lo + len(cw.eps); ep != want {
		return fmt.Errorf("episode %d handed over, want episode %d (chunk %d..%d)", ep, want, sp.Lo, sp.Hi-1)
	}
	cw.eps = append(cw.eps, reduced)
	if tr != nil {
		cw.traces[ep] = tr
	}
	if ep < sp.Hi-1 {
		return nil
	}
	data, err := kinds.EncodeChunk(&engine.Chunk{Lo: sp.Lo, Hi: sp.Hi, Episodes: cw.eps, Traces: cw.traces})
	if err != nil {
		return err
	}
	if err := writeRecord(cw.w, sp, data); err != nil {
		return err
	}
	cw.next, cw.eps, cw.traces = cw.next+1, nil, map[int]*trace.Traces{}
	return nil
}

// finish checks that every chunk was written.
func (cw *chunkWriter) finish() error {
	if cw.next < len(cw.spans) {
		return fmt.Errorf("%d of the shard's %d chunks complete: the processes did not finish the episodes", cw.next, len(cw.spans))
	}
	return nil
}

// shardNATSRecord is the part's record of what its processes were and did, once every point
// was played: the shard's own summary (its processes, problems, connections, episodes in flight,
// timeline, security, secrets), with the degradation worded - a shard degraded past
// --max-missed-fraction, or with a conflict and --strict, fails as the run would - and no
// points: their numbers are in the chunks.
func (l *launcher) shardNATSRecord() (*record.Summary, error) {
	l.sum.Timeline = l.tl.Sorted()
	if err := l.degradation(); err != nil {
		return nil, err
	}
	l.sum.Status = record.StatusOK
	if len(l.sum.Degraded) > 0 {
		l.sum.Status = record.StatusDegraded
	}
	l.removeSecrets()
	return l.sum, nil
}

// natsPartsEngine is the merge's engine for parts of the NATS engine: the parts' chunks folded
// (foldShards, as for the fast engine's parts), with each part's link counters of the point
// merged into its metrics and each part's processes and problems of the point added to the
// summary, named by shard.
type natsPartsEngine struct{ fe *fastEngine }

func (e *natsPartsEngine) play(ctx context.Context, k int, p *plan.Plan) (pointPlayed, error) {
	l := e.fe.l
	pp, err := e.fe.play(ctx, k, p)
	pp.summary.RunID = l.pointRunID(k)
	if pp.results != nil {
		links := [][]fault.LinkStats{pp.results.Links}
		for _, part := range l.o.shardParts {
			links = append(links, part.Points[k].Links)
		}
		pp.results.Links = sim.MergeLinkStats(links...)
		for _, lk := range pp.results.Links {
			l.sum.Timing.LateMessages += lk.Late // delivered after their step
		}
	}
	for _, part := range l.o.shardParts {
		r := part.NATS
		for _, ps := range r.Processes {
			if ps.Point != k {
				continue
			}
			stale := r.Stale[l.processKey(ps)] // the same key: the shard ran the same points
			ps.Name = byShard(ps.Name, part)
			ps.LogFile, ps.TraceFile, ps.ResultFile = partFile(l.o.Out, part, ps.LogFile), partFile(l.o.Out, part, ps.TraceFile), partFile(l.o.Out, part, ps.ResultFile)
			l.noteProcess(ps, stale)
		}
		var problems []record.Problem
		for _, pb := range r.Problems {
			if pb.Point == k {
				pb.Process = byShard(pb.Process, part)
				problems = append(problems, pb.Problem)
			}
		}
		l.recordProblems(k, problems)
	}
	return pp, err
}

// mergeNATSRecords adds to the merged summary what concerns the parts' runs as wholes: their
// servers' security (every shard's is the one command line's), connections, grouping of
// episodes, the launcher's dropped ctl messages, leftover processes, timelines (each shard's
// times from its own start) and the files holding secrets.
func (l *launcher) mergeNATSRecords() {
	parts := l.o.shardParts
	first := parts[0].NATS
	l.sum.Security, l.sum.NATSEmbedded, l.sum.NATSCluster, l.sum.TLS = first.Security, first.NATSEmbedded, first.NATSCluster, first.TLS
	for _, part := range parts {
		r := part.NATS
		c := &l.sum.Connections
		c.Disconnects += r.Connections.Disconnects
		c.Reconnects += r.Connections.Reconnects
		c.ServerRestarts += r.Connections.ServerRestarts
		c.Crashes += r.Connections.Crashes
		c.Restarts += r.Connections.Restarts
		if r.Inflight != nil {
			l.noteInflight(r.Inflight.InflightCounts)
		}
		l.sum.LauncherCtlInvalid = addCounters(l.sum.LauncherCtlInvalid, r.LauncherCtlInvalid)
		l.sum.LeftoverProcesses = append(l.sum.LeftoverProcesses, r.LeftoverProcesses...)
		evs := make([]record.TimelineEvent, 0, len(r.Timeline))
		for _, ev := range r.Timeline {
			if ev.Proc != "" {
				ev.Proc = byShard(ev.Proc, part)
			} else {
				ev.Detail = fmt.Sprintf("shard %s: %s", part.Shard, ev.Detail)
			}
			evs = append(evs, ev)
		}
		l.tl.Append(evs)
		if s := r.Secrets; s != nil {
			if l.sum.Secrets == nil {
				l.sum.Secrets = &record.SecretFiles{}
			}
			l.sum.Secrets.Kept = l.sum.Secrets.Kept || s.Kept
			l.sum.Secrets.Removed += s.Removed
			for _, f := range s.Files {
				l.sum.Secrets.Files = append(l.sum.Secrets.Files, partFile(l.o.Out, part, f))
			}
		}
	}
}

// byShard names a process of part by its shard: "cloud-0 (shard 1/7)".
func byShard(name string, part *RunShardPart) string {
	return fmt.Sprintf("%s (shard %s)", name, part.Shard)
}

// partFile is the file f of part (relative to the part's directory) relative to the merged
// run's out, where summary.json is ("" stays "").
func partFile(out string, part *RunShardPart, f string) string {
	if f == "" {
		return ""
	}
	path := filepath.Join(part.Dir, f)
	if rel, err := relPath(out, path); err == nil {
		return rel
	}
	return path
}

// relPath is target relative to base, both made absolute first.
func relPath(base, target string) (string, error) {
	b, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	t, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(b, t)
}
