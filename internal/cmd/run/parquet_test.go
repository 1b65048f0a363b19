package run_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/trace"
)

// TestParquetTables: dpsim run --parquet over the fast engine (a sweep of the vehicle, a
// consensus scenario) and over NATS processes (the same consensus scenario, the vehicle) writes
// episodes.parquet and trace.parquet, 0600, with the documented columns: one row per point and
// episode whose Welford means (maxima, counts) in episode order are summary.json's to the bit,
// and one row per record of the trace files, equal to it value for value. The NATS run's
// episode table is the fast engine's, bit for bit.
func TestParquetTables(t *testing.T) {
	srv := server(t)
	const runs = 3
	tables := map[string][]episodeRow{}
	for _, c := range []struct {
		name, scenario string
		args           []string
	}{
		{"fast-sweep", "cloud-vehicle-sweep", []string{"--engine", "fast"}},
		{"fast-consensus", "consensus-gaussian", []string{"--engine", "fast"}},
		{"nats-consensus", "consensus-gaussian", []string{"--nats-url", srv.URL()}},
		{"nats-vehicle", "cloud-vehicle", []string{"--nats-url", srv.URL()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", scenarioPath(c.scenario), "--runs", fmt.Sprint(runs), "--out", dir, "--parquet", "--log-level", "warn"}, c.args...)
			code, _, stderr := runDpsim(t, 120*time.Second, args...)
			require.Equal(t, 0, code, stderr)
			tables[c.name] = checkEpisodesTable(t, dir, runs)
			checkTraceTable(t, dir)
			t.Run("python", func(t *testing.T) { readWithPython(t, dir) })
		})
	}
	require.NotEmpty(t, tables["nats-consensus"])
	require.Equal(t, tables["fast-consensus"], tables["nats-consensus"], "NATS processes = fast engine, bit for bit")
}

// episodeRow is a row of episodes.parquet: the metric values as their float64 bits (null: nil).
type episodeRow struct {
	point   int
	name    string
	episode int
	values  map[string]*uint64
}

// readEpisodes reads episodes.parquet with parquet-go's reader: its column names and rows.
func readEpisodes(t *testing.T, path string) ([]string, []episodeRow) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	pf, err := parquet.OpenFile(f, fi.Size())
	require.NoError(t, err)
	var names []string
	for _, c := range pf.Schema().Columns() {
		names = append(names, strings.Join(c, "."))
	}
	r := parquet.NewReader(pf)
	rows := make([]parquet.Row, pf.NumRows())
	n, err := r.ReadRows(rows)
	if !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	require.EqualValues(t, pf.NumRows(), n)
	var out []episodeRow
	for _, row := range rows[:n] {
		er := episodeRow{values: map[string]*uint64{}}
		for _, v := range row {
			switch name := names[v.Column()]; name {
			case "point":
				er.point = int(v.Int32())
			case "point_name":
				er.name = string(v.ByteArray())
			case "episode":
				er.episode = int(v.Int64())
			default:
				if !v.IsNull() {
					b := math.Float64bits(v.Double())
					er.values[name] = &b
				} else {
					er.values[name] = nil
				}
			}
		}
		out = append(out, er)
	}
	return names, out
}

// checkEpisodesTable checks episodes.parquet against summary.json and returns its rows.
func checkEpisodesTable(t *testing.T, dir string, runs int) []episodeRow {
	names, rows := readEpisodes(t, filepath.Join(dir, "episodes.parquet"))
	require.Equal(t, []string{"point", "point_name", "episode"}, names[:3])
	sum := readSummary(t, dir)
	require.Len(t, rows, len(sum.Points)*runs, "one row per point and episode")
	for k, pt := range sum.Points {
		res := pt.Metrics
		require.Equal(t, runs, res.Runs)
		col := func(name string) []float64 {
			var v []float64
			for i, r := range rows[k*runs : (k+1)*runs] {
				require.Equal(t, k, r.point)
				require.Equal(t, i, r.episode)
				if b := r.values[name]; b != nil {
					v = append(v, math.Float64frombits(*b))
				}
			}
			return v
		}
		if c := res.Control; c != nil {
			require.Equal(t, append(numbered(len(c.FinalSqError), "final_error", "final_sq_error", "avg_sq_error", "final_abs_error"), "eve_final_sq_error"), names[3:])
			last := c.TrackingError[0].Len() - 1
			for i := range c.FinalSqError {
				sameBits(t, c.TrackingError[i].Mean[last], welford(col(fmt.Sprintf("final_error_%d", i))), "final_error")
				sameBits(t, c.FinalSqError[i].Mean, welford(col(fmt.Sprintf("final_sq_error_%d", i))), "final_sq_error")
				sameBits(t, c.AvgSqError[i].Mean, welford(col(fmt.Sprintf("avg_sq_error_%d", i))), "avg_sq_error")
				sameBits(t, c.FinalAbsErrorMax[i], colMax(col(fmt.Sprintf("final_abs_error_%d", i))), "final_abs_error")
			}
			checkEve(t, &c.EveSqError, col("eve_final_sq_error"))
		}
		if c := res.Consensus; c != nil {
			require.Equal(t, []string{"x_star", "final_sq_deviation", "final_max_abs_deviation", "sum_rel_dev_max", "final_sum_drift",
				"final_sum_abs_drift", "eve_final_sq_error"}, names[3:])
			sameBits(t, c.XStar.Mean, welford(col("x_star")), "x_star")
			sameBits(t, c.FinalSqDeviation.Mean, welford(col("final_sq_deviation")), "final_sq_deviation")
			sameBits(t, c.MaxAbsDeviation.Mean[c.MaxAbsDeviation.Len()-1], welford(col("final_max_abs_deviation")), "final_max_abs_deviation")
			sameBits(t, c.SumRelDevMax, colMax(col("sum_rel_dev_max")), "sum_rel_dev_max")
			sameBits(t, c.FinalSumDrift.Mean, welford(col("final_sum_drift")), "final_sum_drift")
			sameBits(t, c.FinalSumAbsDrift.Mean, welford(col("final_sum_abs_drift")), "final_sum_abs_drift")
			checkEve(t, &c.EveSqError, col("eve_final_sq_error"))
		}
	}
	return rows
}

func numbered(d int, names ...string) []string {
	var out []string
	for _, n := range names {
		for i := range d {
			out = append(out, fmt.Sprintf("%s_%d", n, i))
		}
	}
	return out
}

// checkEve: the non-null eve_final_sq_error values are the runs EveSqError counts at its last
// step, and their mean is its mean.
func checkEve(t *testing.T, s *metrics.Series, v []float64) {
	last := s.Len() - 1
	require.Equal(t, s.N[last], len(v))
	if len(v) > 0 {
		sameBits(t, s.Mean[last], welford(v), "eve_final_sq_error")
	}
}

// welford is the running mean the metrics compute (pkg/metrics moments.add), in row order.
func welford(v []float64) float64 {
	var mean float64
	for i, x := range v {
		mean += (x - mean) / float64(i+1)
	}
	return mean
}

func colMax(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func sameBits(t *testing.T, want, got float64, what string) {
	t.Helper()
	require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%s: summary %v, table %v", what, want, got)
}

// traceRow is a row of trace.parquet, either kind (the columns of the other kind stay empty).
type traceRow struct {
	Point      int32     `parquet:"point"`
	Episode    int64     `parquet:"episode"`
	Step       int64     `parquet:"step"`
	X          []float64 `parquet:"x,list"`
	Ref        []float64 `parquet:"ref,list,optional"`
	Yhat       []float64 `parquet:"yhat,list,optional"`
	U          []float64 `parquet:"u,list,optional"`
	Xhat       []float64 `parquet:"xhat,list,optional"`
	Y          []float64 `parquet:"y,list,optional"`
	EveX0      []float64 `parquet:"eve_x0,list"`
	EveMissing int64     `parquet:"eve_missing"`
}

// checkTraceTable: trace.parquet has one row per record of the trace files, in their order,
// equal to it value for value.
func checkTraceTable(t *testing.T, dir string) {
	f, err := os.Open(filepath.Join(dir, "trace.parquet"))
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	r := parquet.NewGenericReader[traceRow](f)
	got := make([]traceRow, r.NumRows())
	n, err := r.Read(got)
	if !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	require.EqualValues(t, r.NumRows(), n)
	var want []traceRow
	files, err := filepath.Glob(filepath.Join(dir, "trace*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files { // trace.jsonl, or trace-p00.jsonl, trace-p01.jsonl, ... in point order
		point := int32(0)
		if _, err := fmt.Sscanf(filepath.Base(path), "trace-p%d.jsonl", &point); err != nil {
			point = 0
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if strings.Contains(string(data), `"x":`) && strings.Contains(string(data), `"u":`) {
			recs, err := trace.Read[trace.ControlRecord](strings.NewReader(string(data)))
			require.NoError(t, err)
			for _, rc := range recs {
				want = append(want, traceRow{Point: point, Episode: int64(rc.Episode), Step: int64(rc.Step), X: rc.X, Ref: rc.Ref, Yhat: rc.Yhat,
					U: rc.U, Xhat: rc.Xhat, EveX0: rc.EveX0, EveMissing: int64(rc.EveMissing)})
			}
		} else {
			recs, err := trace.Read[trace.ConsensusRecord](strings.NewReader(string(data)))
			require.NoError(t, err)
			for _, rc := range recs {
				want = append(want, traceRow{Point: point, Episode: int64(rc.Episode), Step: int64(rc.Step), X: rc.X, Y: rc.Y,
					EveX0: rc.EveX0, EveMissing: int64(rc.EveMissing)})
			}
		}
	}
	require.Len(t, got, len(want), "one row per record of the trace files")
	for i := range want {
		require.Equal(t, bitsOfRow(want[i]), bitsOfRow(got[i]), "row %d", i)
	}
}

// bitsOfRow is a row with every float as its bits and an absent vector as an empty one.
func bitsOfRow(r traceRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %d %d", r.Point, r.Episode, r.Step, r.EveMissing)
	for _, v := range [][]float64{r.X, r.Ref, r.Yhat, r.U, r.Xhat, r.Y, r.EveX0} {
		b.WriteString(" [")
		for _, x := range v {
			fmt.Fprintf(&b, "%x ", math.Float64bits(x))
		}
		b.WriteString("]")
	}
	return b.String()
}

// readWithPython reads both tables with pyarrow or duckdb when python3 has one of them and
// checks the row counts and column names against parquet-go's reading; skipped otherwise.
func readWithPython(t *testing.T, dir string) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	lib := ""
	for _, m := range []string{"pyarrow.parquet", "duckdb"} {
		if exec.Command(py, "-c", "import "+m).Run() == nil {
			lib = m
			break
		}
	}
	if lib == "" {
		t.Skip("python3 has neither pyarrow nor duckdb")
	}
	script := `import sys, json
lib, d = sys.argv[1], sys.argv[2]
out = {}
for n in ("episodes", "trace"):
    p = d + "/" + n + ".parquet"
    if lib == "duckdb":
        import duckdb
        r = duckdb.sql("select * from read_parquet('%s')" % p)
        out[n] = [len(r.fetchall()), list(r.columns)]
    else:
        import pyarrow.parquet as pq
        tb = pq.read_table(p)
        out[n] = [tb.num_rows, tb.column_names]
print(json.dumps(out))
`
	res, err := exec.Command(py, "-c", script, lib, dir).Output()
	require.NoError(t, err)
	var got map[string][2]json.RawMessage
	require.NoError(t, json.Unmarshal(res, &got))
	names, rows := readEpisodes(t, filepath.Join(dir, "episodes.parquet"))
	require.JSONEq(t, fmt.Sprint(len(rows)), string(got["episodes"][0]))
	cols, _ := json.Marshal(names)
	require.JSONEq(t, string(cols), string(got["episodes"][1]))
}

// TestParquetRefusals: --parquet with --resume is a usage error, and a run whose episodes.parquet
// would pass summary.json's bound (1/16 of the budget) is refused up front with its estimate.
func TestParquetRefusals(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--parquet", "--resume", dir)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--parquet cannot be combined with --resume")
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--parquet", "--runs", "2000000", "--out", dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "--parquet: episodes.parquet estimated ~")
	require.Contains(t, stderr, "confirm with --budget 3 GiB")
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.True(t, os.IsNotExist(err), "nothing ran")
}
