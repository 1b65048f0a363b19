package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// A scores file holds the trials of a distinguishing game: per trial its number, its secret bit
// (0: the system ran on x, "out"; 1: on the adjacent x', "in", the member) and every score
// (larger or smaller may point to bit 1: the analysis tries both orientations). dpsim audit
// --write-scores writes the audit's own, --scores analyses one from anywhere (docs/howto-audit.md,
// "Scores from elsewhere"). Three formats, chosen by the file's extension:
//
//	.csv      a header trial,bit,<score names...>, then one row per trial: 17,1,0.25,-3.5
//	.jsonl    one object per line: {"trial":17,"bit":1,"scores":{"projection":0.25,"llr":-3.5}}
//	.parquet  the CSV's columns: trial (INT64), bit (INT32) and one DOUBLE column per score,
//	          named as the CSV's header names them (scorefile_parquet.go)
//
// Read, a file may also be in the canary layout of the canary-score auditors (jax_privacy's
// CanaryScoreAuditor): two arrays of one score, in_canary_scores and out_canary_scores, as two CSV
// columns, two Parquet columns or one .json object (scorefile_canary.go).
//
// Floats are written with strconv 'g' -1 (the shortest text that reads back to the same float64;
// Parquet keeps the float64 itself)
// and the trial number decides which half of the trials chooses the tests (a hash of it), so the
// analysis of a written file is bit for bit the audit's.

// EngineFile is the engine of an outcome read from a scores file (GameReport.Engine).
const EngineFile = "file"

// MinFileTrials is the fewest trials of each bit a scores file must hold.
const MinFileTrials = 10

// ScoreFormat is the format of a scores file.
type ScoreFormat string

// The formats of a scores file.
const (
	ScoresCSV     ScoreFormat = "csv"
	ScoresJSONL   ScoreFormat = "jsonl"
	ScoresParquet ScoreFormat = "parquet"
	// ScoresJSON is a .json file of the canary layout alone, read only (scorefile_canary.go).
	ScoresJSON ScoreFormat = "json"
)

// ScoreFormatOf is the format of the scores file path, by its extension.
func ScoreFormatOf(path string) (ScoreFormat, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return ScoresCSV, nil
	case ".jsonl":
		return ScoresJSONL, nil
	case ".parquet":
		return ScoresParquet, nil
	case ".json":
		return ScoresJSON, nil
	}
	return "", fmt.Errorf("audit: scores file %s: want the extension .csv, .jsonl, .parquet or .json (the canary layout)", path)
}

// WritableFormat refuses a format WriteScores cannot write: .json holds the canary layout alone,
// two arrays of scores, not the trials of a game whose bits are coins.
func WritableFormat(f ScoreFormat) error {
	if f == ScoresJSON {
		return errors.New("audit: .json is the canary layout, read only: write the trials as .csv, .jsonl or .parquet")
	}
	return nil
}

// Claim is a guarantee under audit: (Epsilon, Delta)-DP of a Gaussian or Laplace mechanism
// (Laplace: pure eps, Delta ignored).
type Claim struct {
	Epsilon, Delta float64
	Mechanism      privacy.Mechanism
}

// NewClaimGame is a game without a scenario: its trials come from elsewhere (ReadScores) with the
// scores names, and Analyze judges them against c with the same statistics as a scenario's
// game (one trial = one release of the mechanism the claim is about).
func NewClaimGame(names []string, c Claim) (*Game, error) { return NewComposedClaimGame(names, c, 1) }

// NewComposedClaimGame is NewClaimGame for trials that each played k episodes of the mechanism
// c is about (c is the per-episode claim): Analyze judges them against c composed over k
// episodes (ComposeClaim, as a scenario's game with GameOptions.EpisodesPerTrial k: the report's
// EpsilonClaimed is c's, EpsilonClaimedRun the composed one, VerdictEpisode what c alone would
// say). k = 1 is NewClaimGame.
func NewComposedClaimGame(names []string, c Claim, k int) (*Game, error) {
	if k < 1 || k > MaxEpisodesPerTrial {
		return nil, fmt.Errorf("audit: %d episodes per trial: want 1..%d", k, MaxEpisodesPerTrial)
	}
	if len(names) == 0 {
		return nil, errors.New("audit: claim game: no scores")
	}
	for i, n := range names {
		if n == "" || slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("audit: claim game: score name %q empty or twice", n)
		}
	}
	if c.Mechanism == privacy.Laplace {
		c.Delta = 0
	}
	if _, err := (Options{EpsilonClaimed: c.Epsilon, Delta: c.Delta, Mechanism: c.Mechanism}).normalise(); err != nil {
		return nil, err
	}
	if !(c.Epsilon > 0) {
		return nil, fmt.Errorf("audit: claimed epsilon %v must be > 0", c.Epsilon)
	}
	g := &Game{names: slices.Clone(names), k: k, claim: &c,
		Pair: Pair{Time: -1, Component: -1, Agent: -1}}
	if k > 1 {
		run, err := g.ClaimRun()
		if err != nil {
			return nil, err
		}
		g.Notes = append(g.Notes, fmt.Sprintf("%d episodes per trial: each trial of the file played %d episodes of the mechanism, "+
			"and is judged against the per-episode claim eps = %s composed over them, eps_run = %s", k, k, fmtScore(c.Epsilon), fmtScore(run)))
	}
	return g, nil
}

// ScoreNames are the names of the outcome's scores (its Trials' order).
func (o *Outcome) ScoreNames() []string { return slices.Clone(o.names) }

// EachTrial calls f with every trial of the outcome in the order of the trial numbers: its number,
// bit and scores (a view valid during the call). It fails when a score rejected a trial (the
// scores of the trials no longer line up; Analyze fails on such an outcome too).
func (o *Outcome) EachTrial(f func(trial uint64, bit int, scores []float64) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sc [2][][]float64
	for k, t := range o.Trials {
		n0, n1, bad := t.Count()
		if bad > 0 {
			return fmt.Errorf("audit: score %s: %d trials rejected (bit not 0/1 or non-finite score): the trials cannot be written", o.names[k], bad)
		}
		if n0 != len(o.trial[0]) || n1 != len(o.trial[1]) {
			return fmt.Errorf("audit: score %s: %d + %d trials but %d + %d trial numbers: the trials cannot be written", o.names[k], n0, n1, len(o.trial[0]), len(o.trial[1]))
		}
		for b := range sc {
			sc[b] = append(sc[b], t.Scores(b))
		}
	}
	type ref struct {
		trial uint64
		bit   int
		i     int
	}
	refs := make([]ref, 0, len(o.trial[0])+len(o.trial[1]))
	for b := range o.trial {
		for i, tr := range o.trial[b] {
			refs = append(refs, ref{tr, b, i})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.trial != b.trial {
			if a.trial < b.trial {
				return -1
			}
			return 1
		}
		return a.bit - b.bit
	})
	row := make([]float64, len(o.Trials))
	for _, r := range refs {
		for k := range row {
			row[k] = sc[r.bit][k][r.i]
		}
		if err := f(r.trial, r.bit, row); err != nil {
			return err
		}
	}
	return nil
}

// fmtScore writes a float64 so that it reads back bit for bit.
func fmtScore(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteScores writes the trials of out to w in format f.
func WriteScores(w io.Writer, f ScoreFormat, out *Outcome) error {
	if err := WritableFormat(f); err != nil {
		return err
	}
	if f == ScoresParquet {
		return writeParquet(w, out)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	names := out.ScoreNames()
	switch f {
	case ScoresCSV:
		for _, n := range names {
			if strings.ContainsAny(n, ",\"\r\n") {
				return fmt.Errorf("audit: score name %q cannot be a CSV column", n)
			}
		}
		fmt.Fprintf(bw, "trial,bit,%s\n", strings.Join(names, ","))
	case ScoresJSONL:
	default:
		return fmt.Errorf("audit: unknown scores format %q", f)
	}
	keys := make([]string, len(names))
	for k, n := range names {
		b, _ := json.Marshal(n)
		keys[k] = string(b)
	}
	var line []byte
	err := out.EachTrial(func(trial uint64, bit int, scores []float64) error {
		line = strconv.AppendUint(line[:0], trial, 10)
		if f == ScoresCSV {
			line = append(line, ',', byte('0'+bit))
			for _, v := range scores {
				line = append(line, ',')
				line = strconv.AppendFloat(line, v, 'g', -1, 64)
			}
		} else {
			line = append(append([]byte(`{"trial":`), line...), `,"bit":`...)
			line = append(line, byte('0'+bit))
			line = append(line, `,"scores":{`...)
			for k, v := range scores {
				if k > 0 {
					line = append(line, ',')
				}
				line = append(append(line, keys[k]...), ':')
				line = strconv.AppendFloat(line, v, 'g', -1, 64)
			}
			line = append(line, "}}"...)
		}
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// ScoresError is a malformed scores file: the line (1-based; 0 for the file as a whole) and the
// field it is about; in a Parquet file (Row) the row (1-based, across its row groups) and the
// column.
type ScoresError struct {
	Line  int
	Field string
	Msg   string
	Row   bool
}

func (e *ScoresError) Error() string {
	line, field := "line", "field"
	if e.Row {
		line, field = "row", "column"
	}
	switch {
	case e.Line == 0 && e.Field == "":
		return e.Msg
	case e.Line == 0:
		return fmt.Sprintf("%s %q: %s", field, e.Field, e.Msg)
	case e.Field == "":
		return fmt.Sprintf("%s %d: %s", line, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s %d: %s %q: %s", line, e.Line, field, e.Field, e.Msg)
}

func scoresErr(line int, field, format string, a ...any) error {
	return &ScoresError{Line: line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

// maxScoresLine bounds one line of a scores file.
const maxScoresLine = 1 << 20

// ReadScores reads a scores file in format f: the outcome of its trials (engine EngineFile,
// N the larger side), whose ScoreNames are the file's. Anything malformed is a *ScoresError
// naming the line and the field; every bit must be 0 or 1, every score finite, every trial number
// once, and each bit needs MinFileTrials trials. The caller bounds the input's size. A Parquet
// file is read in place when r is an io.ReaderAt with a Size (an *io.SectionReader, a
// *bytes.Reader), else into memory first (readParquet).
func ReadScores(r io.Reader, f ScoreFormat) (*Outcome, error) {
	if f == ScoresParquet {
		ra, ok := r.(sizedReaderAt)
		if !ok {
			b, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			ra = bytes.NewReader(b)
		}
		return readParquet(ra, ra.Size())
	}
	if f == ScoresJSON {
		return readCanaryJSON(r)
	}
	if f != ScoresCSV && f != ScoresJSONL {
		return nil, fmt.Errorf("audit: unknown scores format %q", f)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxScoresLine)
	var (
		out    *Outcome
		header []string // the CSV's
		names  []string
		lines  []int // the line of each trial, by order of reading
		nums   []uint64
		row    []float64
		ln     int
	)
	for sc.Scan() {
		ln++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if f == ScoresCSV && names == nil {
			h := strings.Split(text, ",")
			for i := range h {
				h[i] = strings.TrimSpace(h[i])
			}
			if canaryNames(h) {
				return readCanaryCSV(sc, ln, h)
			}
			if len(h) < 3 || h[0] != "trial" || h[1] != "bit" {
				return nil, scoresErr(ln, "", "header %q: want trial,bit,<score names...> (at least one score), or in_canary_scores,out_canary_scores", text)
			}
			header, names = h, h[2:]
			if err := checkNames(names, ln); err != nil {
				return nil, err
			}
			out = newFileOutcome(names)
			row = make([]float64, len(names))
			continue
		}
		var (
			trial uint64
			bit   int
			err   error
		)
		if f == ScoresCSV {
			trial, bit, err = csvRow(text, ln, header, row)
		} else {
			trial, bit, names, err = jsonlRow(text, ln, names, &row)
			if out == nil && err == nil {
				out = newFileOutcome(names)
			}
		}
		if err != nil {
			return nil, err
		}
		out.Add(trial, bit, row)
		lines, nums = append(lines, ln), append(nums, trial)
	}
	if err := scanErr(sc, ln); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, scoresErr(0, "", "no trials (an empty file)")
	}
	if err := checkTrials(out, nums, lines, false); err != nil {
		return nil, err
	}
	return out, nil
}

// scanErr is the error of the scan of a scores file after line ln.
func scanErr(sc *bufio.Scanner, ln int) error {
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return scoresErr(ln+1, "", "longer than %d bytes", maxScoresLine)
	}
	return err
}

// newFileOutcome is an empty outcome of a scores file with the scores names.
func newFileOutcome(names []string) *Outcome {
	o := &Outcome{Engine: EngineFile, names: slices.Clone(names)}
	for range names {
		o.Trials = append(o.Trials, NewTrials(0))
	}
	return o
}

// checkNames refuses empty and repeated score names.
func checkNames(names []string, ln int) error {
	for i, n := range names {
		if n == "" {
			return scoresErr(ln, "", "score %d has no name", i+1)
		}
		if n == "trial" || n == "bit" || slices.Contains(names[:i], n) {
			return scoresErr(ln, n, "the score name appears twice")
		}
	}
	return nil
}

// checkTrials checks that every trial number appears once and that each bit has enough trials
// (checkCounts); lines are the line of each trial, or its row in a Parquet file (rows).
func checkTrials(out *Outcome, nums []uint64, lines []int, rows bool) error {
	idx := make([]int, len(nums))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if nums[a] != nums[b] {
			if nums[a] < nums[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	for i := 1; i < len(idx); i++ {
		if nums[idx[i]] == nums[idx[i-1]] {
			where := "on line"
			if rows {
				where = "in row"
			}
			return scoresErr(lines[idx[i]], "trial", "trial %d appears twice (also %s %d)", nums[idx[i]], where, lines[idx[i-1]])
		}
	}
	return checkCounts(out, false)
}

// checkCounts checks that each bit has MinFileTrials trials and sets out.N; canary: a file of the
// canary layout, whose trials of bit 0 are its out_canary_scores, of bit 1 its in_canary_scores.
func checkCounts(out *Outcome, canary bool) error {
	n0, n1 := len(out.trial[0]), len(out.trial[1])
	if n0 < MinFileTrials || n1 < MinFileTrials {
		if canary {
			return scoresErr(0, "", "%d %s and %d %s: want at least %d of each", n0, CanaryOut, n1, CanaryIn, MinFileTrials)
		}
		return scoresErr(0, "", "%d trials with bit 0 and %d with bit 1: want at least %d of each", n0, n1, MinFileTrials)
	}
	out.N = max(n0, n1)
	return nil
}

// parseTrialBit parses a trial number and a bit.
func parseTrialBit(ln int, trial, bit string) (uint64, int, error) {
	t, err := strconv.ParseUint(trial, 10, 64)
	if err != nil {
		return 0, 0, scoresErr(ln, "trial", "%q is not a trial number (an integer in 0..2^64-1)", trial)
	}
	switch bit {
	case "0":
		return t, 0, nil
	case "1":
		return t, 1, nil
	}
	return 0, 0, scoresErr(ln, "bit", "%q is not 0 or 1", bit)
}

// parseScore parses a finite score.
func parseScore(ln int, name, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, scoresErr(ln, name, "%q is not a number", s)
	}
	return v, finite(ln, name, v, s)
}

func finite(ln int, name string, v float64, s string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return scoresErr(ln, name, "%s is not a finite number", s)
	}
	return nil
}

// csvFields splits a CSV row into its fields, trimmed, refusing any other number than the
// header's.
func csvFields(text string, ln int, header []string) ([]string, error) {
	f := strings.Split(text, ",")
	if len(f) != len(header) {
		return nil, scoresErr(ln, "", "%d fields, want %d (%s)", len(f), len(header), strings.Join(header, ","))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f, nil
}

// csvRow parses a CSV row of the header trial,bit,<names...> into row.
func csvRow(text string, ln int, header []string, row []float64) (uint64, int, error) {
	names := header[2:]
	f, err := csvFields(text, ln, header)
	if err != nil {
		return 0, 0, err
	}
	trial, bit, err := parseTrialBit(ln, f[0], f[1])
	if err != nil {
		return 0, 0, err
	}
	for k, n := range names {
		if row[k], err = parseScore(ln, n, f[k+2]); err != nil {
			return 0, 0, err
		}
	}
	return trial, bit, nil
}

// jsonlRow parses a JSON line into *row; the first line sets the score names (their order in
// its "scores" object), which every later line must have, no more and no fewer.
func jsonlRow(text string, ln int, names []string, row *[]float64) (uint64, int, []string, error) {
	var obj struct {
		Trial  json.RawMessage `json:"trial"`
		Bit    json.RawMessage `json:"bit"`
		Scores json.RawMessage `json:"scores"`
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&obj); err != nil {
		return 0, 0, nil, scoresErr(ln, "", "not a JSON object {\"trial\":..,\"bit\":..,\"scores\":{..}}: %v", err)
	}
	for _, m := range []struct {
		name string
		v    json.RawMessage
	}{{"trial", obj.Trial}, {"bit", obj.Bit}, {"scores", obj.Scores}} {
		if m.v == nil {
			return 0, 0, nil, scoresErr(ln, m.name, "missing")
		}
	}
	trial, bit, err := parseTrialBit(ln, string(obj.Trial), string(obj.Bit))
	if err != nil {
		return 0, 0, nil, err
	}
	got, vals, err := orderedScores(obj.Scores, ln)
	if err != nil {
		return 0, 0, nil, err
	}
	if names == nil {
		if len(got) == 0 {
			return 0, 0, nil, scoresErr(ln, "scores", "no score")
		}
		if err := checkNames(got, ln); err != nil {
			return 0, 0, nil, err
		}
		names, *row = got, make([]float64, len(got))
	}
	for k, n := range names {
		i := slices.Index(got, n)
		if i < 0 {
			return 0, 0, nil, scoresErr(ln, n, "missing (the first line's scores: %s)", strings.Join(names, ", "))
		}
		(*row)[k] = vals[i]
	}
	for _, n := range got {
		if !slices.Contains(names, n) {
			return 0, 0, nil, scoresErr(ln, n, "not a score of the first line (%s)", strings.Join(names, ", "))
		}
	}
	return trial, bit, names, nil
}

// orderedScores reads a JSON object of numbers, keeping the order of its keys.
func orderedScores(raw json.RawMessage, ln int) ([]string, []float64, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, scoresErr(ln, "scores", "not an object of numbers")
	}
	var names []string
	var vals []float64
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, scoresErr(ln, "scores", "%v", err)
		}
		name, _ := t.(string)
		if slices.Contains(names, name) {
			return nil, nil, scoresErr(ln, name, "the score appears twice")
		}
		t, err = d.Token()
		num, ok := t.(json.Number)
		if err != nil || !ok {
			return nil, nil, scoresErr(ln, name, "%s is not a number", jsonText(t))
		}
		v, err := parseScore(ln, name, string(num))
		if err != nil {
			return nil, nil, err
		}
		names, vals = append(names, name), append(vals, v)
	}
	return names, vals, nil
}

// jsonText is a JSON token as the file has it (a string quoted, null as null).
func jsonText(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case json.Delim:
		return string(v)
	}
	return fmt.Sprint(t)
}
