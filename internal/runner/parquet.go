package runner

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
)

// The Parquet tables of dpsim run --parquet (docs/outputs.md): EpisodesParquet, one row per
// point and aggregated episode with the per-run values of metrics.EpisodeColumns, and
// TraceParquet, the records of the run's trace files flattened (traceparquet.go).
const (
	EpisodesParquet = "episodes.parquet"
	TraceParquet    = "trace.parquet"
)

// parquetRowGroup is the rows a Parquet table holds in memory before it writes them out as a
// row group.
const parquetRowGroup = 4096

// costPerEpisodeRow is what an episode's row of episodes.parquet takes in memory until the run
// ends, besides its 8 bytes a value: the map entry, the slice header and the allocator's
// rounding; the row's cost is then doubled, as the collector lets the heap reach twice what is
// live (GOGC=100). Measured: 10^6 vehicle episodes (9 values) peak at 445 MB with the tables
// written, 71 MB without: 374 bytes an episode; estimated 400.
const costPerEpisodeRow = 128

// episodeTable is the rows of episodes.parquet as the points' accumulators hand them over
// (metrics.Accumulator.SetEpisodeSink): per point, the values of each episode by its number.
type episodeTable struct {
	cols   []string // the union of the points' columns, in the order first seen
	points []*episodePoint
}

type episodePoint struct {
	index int
	name  string
	cols  []int // the table column of each value
	rows  map[int][]float64
}

// episodeSink is the sink of point k's episodes (nil without --parquet).
func (l *launcher) episodeSink(k int) func(ep int, values []float64) {
	if !l.o.Parquet {
		return nil
	}
	t := &l.episodes
	var pt *episodePoint
	for _, q := range t.points {
		if q.index == k {
			pt = q
		}
	}
	if pt == nil {
		pt = &episodePoint{index: k, name: l.points[k].Name, rows: map[int][]float64{}}
		for _, c := range metrics.EpisodeColumns(l.plans[k]) {
			i := slices.Index(t.cols, c)
			if i < 0 {
				i, t.cols = len(t.cols), append(t.cols, c)
			}
			pt.cols = append(pt.cols, i)
		}
		t.points = append(t.points, pt)
	}
	return func(ep int, values []float64) { pt.rows[ep] = values }
}

// checkParquet adds episodes.parquet to the run's estimate (Options.Check refuses --parquet
// with --resume: the points the killed run completed left no rows): its rows in memory until the run ends,
// and the file, held to summary.json's bound (1/engine.SummaryShare of the budget). trace.parquet
// holds the records of the trace files, bounded as they are by --trace-episodes, and is written
// a row group at a time.
func (l *launcher) checkParquet() error {
	if !l.o.Parquet {
		return nil
	}
	var mem, file int64
	for _, p := range l.plans {
		cols := int64(len(metrics.EpisodeColumns(p)))
		mem += int64(l.runs) * 2 * (costPerEpisodeRow + 8*cols)
		file += int64(l.runs) * (8*cols + 24) // the values, point, episode and their levels, uncompressed
	}
	c := l.cost
	c.MemoryBytes += mem
	if err := engine.CheckCost(c, l.o.Budget); err != nil {
		return fmt.Errorf("--parquet keeps a row per episode in memory (~%s): %w", engine.FormatBytes(mem), err)
	}
	budget := l.o.Budget
	if budget <= 0 {
		budget = engine.DefaultMemoryBudget
	}
	if bound := budget / engine.SummaryShare; file > bound {
		const q = 256 << 20
		need := (file*engine.SummaryShare + q - 1) / q * q
		return fmt.Errorf("--parquet: %s estimated ~%s exceeds its bound %s (1/%d of the memory budget %s, as summary.json's): fewer episodes or sweep points make it smaller; to run it anyway, confirm with --budget %s",
			EpisodesParquet, engine.FormatBytes(file), engine.FormatBytes(bound), engine.SummaryShare, engine.FormatBytes(budget), engine.FormatBytes(need))
	}
	l.cost.MemoryBytes = c.MemoryBytes
	return nil
}

// writeParquet writes the tables of --parquet, and names them in the summary.
func (l *launcher) writeParquet() error {
	if !l.o.Parquet {
		return nil
	}
	if err := l.writeEpisodes(); err != nil {
		return fmt.Errorf("%s: %w", EpisodesParquet, err)
	}
	l.sum.Files.Parquet = append(l.sum.Files.Parquet, EpisodesParquet)
	if err := l.writeTraceParquet(); err != nil {
		return fmt.Errorf("%s: %w", TraceParquet, err)
	}
	if slices.ContainsFunc(l.sum.Points, func(ps record.PointSummary) bool { return ps.TraceFile != "" }) {
		l.sum.Files.Parquet = append(l.sum.Files.Parquet, TraceParquet)
	}
	return nil
}

// writeEpisodes writes episodes.parquet: the columns point (INT32), point_name (STRING),
// episode (INT64), then every metric column (optional DOUBLE: null where the point has no such
// column or the value is not a number), rows ordered by point and episode.
func (l *launcher) writeEpisodes() error {
	t := &l.episodes
	names := append([]string{"point", "point_name", "episode"}, t.cols...)
	g := parquet.Group{"point": parquet.Int(32), "point_name": parquet.String(), "episode": parquet.Int(64)}
	for _, c := range t.cols {
		g[c] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
	}
	schema := parquet.NewSchema("episodes", orderedGroup{g, names})
	return atomicfile.Write(filepath.Join(l.o.Out, EpisodesParquet), l.outMode(EpisodesParquet), func(w io.Writer) error {
		pw := parquet.NewWriter(w, schema, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("dpsim", "", ""))
		rows := make([]parquet.Row, 0, parquetRowGroup)
		written := 0
		for _, pt := range t.points {
			eps := make([]int, 0, len(pt.rows))
			for ep := range pt.rows {
				eps = append(eps, ep)
			}
			slices.Sort(eps)
			for _, ep := range eps {
				rows = append(rows, episodeRow(pt, ep, len(t.cols)))
				if len(rows) == cap(rows) {
					if _, err := pw.WriteRows(rows); err != nil {
						return err
					}
					if written += len(rows); written%(16*parquetRowGroup) == 0 {
						if err := pw.Flush(); err != nil { // a row group: the writer's buffers stay bounded
							return err
						}
					}
					rows = rows[:0]
				}
			}
		}
		if _, err := pw.WriteRows(rows); err != nil {
			return err
		}
		return pw.Close()
	})
}

// episodeRow is the row of episode ep of pt in a table of n metric columns.
func episodeRow(pt *episodePoint, ep, n int) parquet.Row {
	row := make(parquet.Row, 3+n)
	row[0] = parquet.Int32Value(int32(pt.index)).Level(0, 0, 0)
	row[1] = parquet.ByteArrayValue([]byte(pt.name)).Level(0, 0, 1)
	row[2] = parquet.Int64Value(int64(ep)).Level(0, 0, 2)
	for c := 0; c < n; c++ {
		row[3+c] = parquet.NullValue().Level(0, 0, 3+c)
	}
	for i, v := range pt.rows[ep] {
		if c := pt.cols[i]; !math.IsNaN(v) {
			row[3+c] = parquet.DoubleValue(v).Level(0, 1, 3+c)
		}
	}
	return row
}

// orderedGroup is a Parquet group whose columns are in the order of names (parquet.Group sorts
// them by name), as pkg/audit's scores files keep theirs.
type orderedGroup struct {
	parquet.Group
	names []string
}

func (g orderedGroup) Fields() []parquet.Field {
	f := g.Group.Fields()
	slices.SortStableFunc(f, func(a, b parquet.Field) int {
		return slices.Index(g.names, a.Name()) - slices.Index(g.names, b.Name())
	})
	return f
}
