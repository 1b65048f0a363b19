package auditrun

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// MaxScoresBytes bounds a --scores file: a larger one is refused with its estimate before it is
// read.
const MaxScoresBytes int64 = 1 << 30

// ScoresOptions are the flags of `dpsim audit --scores FILE`: the file and the claim its trials
// are judged against.
type ScoresOptions struct {
	Path       string
	Claim      audit.Claim
	Confidence float64 // 0: 0.95
	Selection  audit.Selection
	// EpisodesPerTrial is k (0: 1): each trial of the file played k episodes, and is judged
	// against the claim composed over them (audit.NewComposedClaimGame).
	EpisodesPerTrial int
	// Limit is the largest file read (0: MaxScoresBytes).
	Limit int64
}

// ScoresPath is the --write-scores file of point k of n: path with -pNN before its extension
// for a sweep (as audit-pNN.json beside audit.json).
func ScoresPath(path string, n, k int) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + Suffix(n, k) + ext
}

// CheckWriteScores checks --write-scores: a .csv, .jsonl or .parquet path, and a game that has trials (not
// --one-run's single episode); and --parquet: --out, and trials.
func (o *Options) CheckWriteScores() error {
	if o.Parquet && o.Out == "" {
		return cli.UsageError("--parquet writes OUT/%s: give --out", ParquetScores)
	}
	if o.Parquet && o.OneRun {
		return cli.UsageError("--parquet writes the trials of the distinguishing game; --one-run plays one episode, not trials")
	}
	if o.WriteScores == "" {
		return nil
	}
	f, err := audit.ScoreFormatOf(o.WriteScores)
	if err == nil {
		err = audit.WritableFormat(f)
	}
	if err != nil {
		return cli.UsageError("--write-scores: %v", err)
	}
	if o.OneRun {
		return cli.UsageError("--write-scores writes the trials of the distinguishing game; --one-run plays one episode, not trials")
	}
	return nil
}

// WriteScores writes the trials of point k's outcome to OUT/scores.parquet with --parquet and to
// --write-scores (nothing without either),
// atomically, 0600 unless --share-outputs: the secret bit of every trial is in it
// (launch.SecretOutputs).
func (a *Audit) WriteScores(k int, out *audit.Outcome) error {
	if a.Opts.Parquet {
		path := filepath.Join(a.Opts.Out, ScoresPath(ParquetScores, len(a.Points), k))
		if err := writeScoresFile(path, out, a.Opts.ShareOutputs, "--parquet"); err != nil {
			return err
		}
	}
	if a.Opts.WriteScores == "" {
		return nil
	}
	return WriteScoresFile(ScoresPath(a.Opts.WriteScores, len(a.Points), k), out, a.Opts.ShareOutputs)
}

// ParquetScores is the file of --parquet in OUT (scores-pNN.parquet per sweep point): the
// trials as --write-scores FILE.parquet writes them.
const ParquetScores = "scores.parquet"

// WriteScoresFile writes out's trials to path in the format of its extension.
func WriteScoresFile(path string, out *audit.Outcome, share bool) error {
	return writeScoresFile(path, out, share, "--write-scores")
}

// writeScoresFile writes out's trials to path, its errors named by flag.
func writeScoresFile(path string, out *audit.Outcome, share bool, flag string) error {
	f, err := audit.ScoreFormatOf(path)
	if err != nil {
		return err
	}
	err = atomicfile.Write(path, launch.ScoresMode(share), func(w io.Writer) error { return audit.WriteScores(w, f, out) })
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// ReadScoresFile reads a scores file (the format of its extension), refusing one above limit
// bytes (0: MaxScoresBytes) with the estimate of what it would hold. A Parquet file is read in
// place (its footer, then only its trial, bit and score columns) and refused too when what it
// would decode - 8 bytes per value, its rows and columns from the footer - is above limit: a
// compressed file holds many more trials than its size.
func ReadScoresFile(path string, limit int64) (*audit.Outcome, error) {
	if limit <= 0 {
		limit = MaxScoresBytes
	}
	f, err := audit.ScoreFormatOf(path)
	if err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if f == audit.ScoresParquet {
		return readParquetFile(path, file, st.Size(), limit)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %s, above the limit of %s for a scores file (%s); split the trials or analyse a sample",
			path, engine.FormatBytes(st.Size()), engine.FormatBytes(limit), estimateScores(file, f, st.Size()))
	}
	out, err := audit.ReadScores(io.LimitReader(file, limit), f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// readParquetFile reads the Parquet scores file of size bytes after checking its size and the
// size of what it would decode against limit.
func readParquetFile(path string, file *os.File, size, limit int64) (*audit.Outcome, error) {
	shape, shapeErr := audit.ParquetShape(file, size)
	estimate := "no footer to estimate the trials from"
	decoded := int64(0)
	if shapeErr == nil {
		decoded = shape.Rows * 8 * int64(shape.Columns)
		estimate = fmt.Sprintf("%d trials, %s", shape.Trials, memoryOf(shape.Trials, int64(shape.Scores)))
	}
	if size > limit {
		return nil, fmt.Errorf("%s: %s, above the limit of %s for a scores file (%s); split the trials or analyse a sample",
			path, engine.FormatBytes(size), engine.FormatBytes(limit), estimate)
	}
	if decoded > limit || decoded < 0 {
		return nil, fmt.Errorf("%s: %s decoded, above the limit of %s for a scores file (%s); split the trials or analyse a sample",
			path, engine.FormatBytes(decoded), engine.FormatBytes(limit), estimate)
	}
	out, err := audit.ReadScores(io.NewSectionReader(file, 0, size), audit.ScoresParquet)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// estimateScores estimates the trials of a file of size bytes in format f from the length of its
// first lines (a .json file of the canary layout: from the values of its first 64 KiB), and the
// memory their analysis would take (memoryOf).
func estimateScores(r io.Reader, f audit.ScoreFormat, size int64) string {
	if f == audit.ScoresJSON {
		head, _ := io.ReadAll(io.LimitReader(r, 1<<16))
		values := int64(bytes.Count(head, []byte{','})) + 1
		if len(head) == 0 || !bytes.ContainsAny(head, "0123456789") {
			return "no value to estimate the trials from"
		}
		trials := size * values / int64(len(head))
		return fmt.Sprintf("about %d trials, %s", trials, memoryOf(trials, 1))
	}
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<16)
	var lines, n, fields int64
	perLine := int64(1) // trials per line: 2 in the canary layout
	for sc.Scan() {
		lines++
		n += int64(len(sc.Bytes())) + 1
		switch lines {
		case 1:
			h := strings.Split(strings.ReplaceAll(sc.Text(), " ", ""), ",")
			if slices.Contains(h, audit.CanaryIn) && slices.Contains(h, audit.CanaryOut) {
				perLine = 2
			}
		case 2:
			fields = int64(strings.Count(sc.Text(), ",")) - 1 // the scores of a CSV row (JSONL: about)
		}
	}
	if lines < 2 || n == 0 {
		return "no line to estimate the trials from"
	}
	if perLine == 2 {
		fields = 1
	}
	trials := perLine * size / (n / lines)
	return fmt.Sprintf("about %d trials, %s", trials, memoryOf(trials, fields))
}

// memoryOf is the memory the analysis of trials of scores each would take: each score 8 bytes and
// a tag, twice (the sorted copies), and the trial's number.
func memoryOf(trials, scores int64) string {
	return fmt.Sprintf("about %s of memory to analyse", engine.FormatBytes(trials*(max(1, scores)*(2*8+2)+8)))
}

// AnalyzeScores is `dpsim audit --scores FILE`: the trials of the file judged against the claim
// by the audit's own analysis (audit.NewClaimGame, Game.Analyze), without a scenario.
func AnalyzeScores(o ScoresOptions) (*audit.GameReport, error) {
	out, err := ReadScoresFile(o.Path, o.Limit)
	if err != nil {
		return nil, err
	}
	return AnalyzeOutcome(out, o)
}

// AnalyzeOutcome analyses out (read from o.Path) against o's claim (composed over
// o.EpisodesPerTrial episodes).
func AnalyzeOutcome(out *audit.Outcome, o ScoresOptions) (*audit.GameReport, error) {
	g, err := audit.NewComposedClaimGame(out.ScoreNames(), o.Claim, max(1, o.EpisodesPerTrial))
	if err != nil {
		return nil, err
	}
	rep, err := g.Analyze(out, audit.ReportOptions{Confidence: o.Confidence, Selection: o.Selection})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Path, err)
	}
	rep.Scenario = o.Path
	return rep, nil
}

// ParseClaim parses --epsilon, --delta and --mechanism ("": gaussian when delta > 0, else laplace).
func ParseClaim(eps, delta float64, mech string) (audit.Claim, error) {
	c := audit.Claim{Epsilon: eps, Delta: delta}
	switch mech {
	case "":
		c.Mechanism = privacy.Laplace
		if delta > 0 {
			c.Mechanism = privacy.Gaussian
		}
	default:
		m, err := privacy.ParseMechanism(mech)
		if err != nil {
			return c, cli.UsageError("--mechanism: %v", err)
		}
		c.Mechanism = m
	}
	if !(eps > 0) || eps > 1e6 {
		return c, cli.UsageError("--scores needs --epsilon E > 0, the claimed epsilon")
	}
	if !(delta >= 0 && delta < 1) {
		return c, cli.UsageError("--delta %v: want a value in [0, 1)", delta)
	}
	if c.Mechanism == privacy.Gaussian && delta == 0 {
		return c, cli.UsageError("--mechanism gaussian needs --delta D > 0 (a Gaussian mechanism is never (eps, 0)-DP)")
	}
	return c, nil
}
