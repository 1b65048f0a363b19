package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// controlRow is a cloud-control record of trace.parquet: trace.ControlRecord flattened, its
// vectors as Parquet LIST columns of DOUBLE (an empty list where trace.jsonl omits the field),
// with the sweep point it belongs to.
type controlRow struct {
	Point      int32     `parquet:"point"`
	Episode    int64     `parquet:"episode"`
	Step       int64     `parquet:"step"`
	X          []float64 `parquet:"x,list"`
	Ref        []float64 `parquet:"ref,list"`
	Yhat       []float64 `parquet:"yhat,list"`
	U          []float64 `parquet:"u,list"`
	Xhat       []float64 `parquet:"xhat,list"`
	EveX0      []float64 `parquet:"eve_x0,list"`
	EveMissing int64     `parquet:"eve_missing"`
	Down       []string  `parquet:"down,list"`
}

// consensusRow is a consensus record of trace.parquet (trace.ConsensusRecord), as controlRow.
type consensusRow struct {
	Point      int32     `parquet:"point"`
	Episode    int64     `parquet:"episode"`
	Step       int64     `parquet:"step"`
	X          []float64 `parquet:"x,list"`
	Y          []float64 `parquet:"y,list"`
	EveX0      []float64 `parquet:"eve_x0,list"`
	EveMissing int64     `parquet:"eve_missing"`
	Down       []int64   `parquet:"down,list"`
}

// unfinishedMarker opens the line a trace file ends with when the run stopped inside an
// episode: not a record, so not a row.
var unfinishedMarker = []byte(`{"unfinished_episode"`)

// writeTraceParquet writes trace.parquet from the points' trace files (trace.jsonl,
// trace-pNN.jsonl), in point order and, within a point, in the file's order: one row per record.
// Nothing is written when no episode was traced.
func (l *launcher) writeTraceParquet() error {
	type file struct {
		point int
		name  string
	}
	var files []file
	for _, ps := range l.sum.Points {
		if ps.TraceFile != "" {
			files = append(files, file{ps.Index, ps.TraceFile})
		}
	}
	if len(files) == 0 {
		return nil
	}
	return atomicfile.Write(filepath.Join(l.o.Out, TraceParquet), l.outMode(TraceParquet), func(w io.Writer) error {
		var put func(point int, line []byte) error
		var closeFn func() error
		if l.scn.Kind == scenario.CloudControl {
			put, closeFn = traceRows(w, func(point int, r *trace.ControlRecord) controlRow {
				return controlRow{Point: int32(point), Episode: int64(r.Episode), Step: int64(r.Step), X: r.X, Ref: r.Ref, Yhat: r.Yhat,
					U: r.U, Xhat: r.Xhat, EveX0: r.EveX0, EveMissing: int64(r.EveMissing), Down: r.Down}
			})
		} else {
			put, closeFn = traceRows(w, func(point int, r *trace.ConsensusRecord) consensusRow {
				down := make([]int64, len(r.Down))
				for i, a := range r.Down {
					down[i] = int64(a)
				}
				return consensusRow{Point: int32(point), Episode: int64(r.Episode), Step: int64(r.Step), X: r.X, Y: r.Y,
					EveX0: r.EveX0, EveMissing: int64(r.EveMissing), Down: down}
			})
		}
		for _, f := range files {
			if err := eachTraceLine(filepath.Join(l.o.Out, f.name), func(line []byte) error { return put(f.point, line) }); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		return closeFn()
	})
}

// traceRows returns put, which decodes a record line (the pkg/trace decoder) into a row of
// type W, and close, which writes the last row group and the footer.
func traceRows[R trace.Record, W any](w io.Writer, row func(point int, r *R) W) (put func(int, []byte) error, closeFn func() error) {
	pw := parquet.NewGenericWriter[W](w, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("dpsim", "", ""))
	buf := make([]W, 0, parquetRowGroup)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := pw.Write(buf)
		if err == nil {
			err = pw.Flush() // one row group: memory bounded by parquetRowGroup records
		}
		buf = buf[:0]
		return err
	}
	put = func(point int, line []byte) error {
		recs, err := trace.Read[R](bytes.NewReader(line))
		if err != nil {
			return err
		}
		for i := range recs {
			buf = append(buf, row(point, &recs[i]))
		}
		if len(buf) >= parquetRowGroup {
			return flush()
		}
		return nil
	}
	closeFn = func() error {
		if err := flush(); err != nil {
			return err
		}
		return pw.Close()
	}
	return put, closeFn
}

// eachTraceLine calls fn with each record line of the trace file path (blank lines and the
// unfinished-episode marker skipped).
func eachTraceLine(path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), trace.MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || bytes.HasPrefix(line, unfinishedMarker) {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}
