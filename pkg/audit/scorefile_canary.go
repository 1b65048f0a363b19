package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// The canary layout is how the canary-score auditors (jax_privacy's CanaryScoreAuditor(
// in_canary_scores, out_canary_scores) and the like) hand over a game: two arrays of one score,
// the attack's scores of the canaries held in and of those held out, not one row per trial.
// Read, it is the game's pairs: out_canary_scores[i] is trial 2i with bit 0 (x, the canary out),
// in_canary_scores[i] trial 2i+1 with bit 1 (x', the canary in), and the one score is named
// CanaryScore. The arrays may differ in length. Three formats hold it:
//
//	.csv      a header of the two names (either order), a value of each per row; a column may end
//	          before the other: empty cells at its end, and only there
//	.json     one object {"in_canary_scores": [...], "out_canary_scores": [...]}, what Python's
//	          json.dump of the two lists writes; read a token at a time (readCanaryJSON)
//	.parquet  two FLOAT or DOUBLE columns of the two names; the shorter ends in nulls
//
// Every value goes through the per-trial files' checks (parseScore, finite, checkCounts).

// The names of the canary layout: its two arrays and its one score.
const (
	CanaryIn    = "in_canary_scores"
	CanaryOut   = "out_canary_scores"
	CanaryScore = "canary_score"
)

// canaryNames reports whether names are the canary layout's two, in either order.
func canaryNames(names []string) bool {
	return len(names) == 2 && (names[0] == CanaryIn && names[1] == CanaryOut || names[0] == CanaryOut && names[1] == CanaryIn)
}

// canaryBit is the bit of the trials of a canary array: 1 for in_canary_scores, 0 for
// out_canary_scores; ok false for any other name.
func canaryBit(name string) (bit int, ok bool) {
	switch name {
	case CanaryIn:
		return 1, true
	case CanaryOut:
		return 0, true
	}
	return 0, false
}

// canaryFile is the outcome of a file of the canary layout being read.
type canaryFile struct {
	out *Outcome
	n   [2]int // the values of each bit so far
	row [1]float64
}

func newCanaryFile() *canaryFile { return &canaryFile{out: newFileOutcome([]string{CanaryScore})} }

// add records the next value of the array of bit: its n-th is trial 2n+bit.
func (c *canaryFile) add(bit int, v float64) {
	c.row[0] = v
	c.out.Add(uint64(2*c.n[bit]+bit), bit, c.row[:])
	c.n[bit]++
}

// done is the outcome, with enough trials of each bit.
func (c *canaryFile) done() (*Outcome, error) {
	if err := checkCounts(c.out, true); err != nil {
		return nil, err
	}
	return c.out, nil
}

// readCanaryCSV reads the rows of a CSV file of the canary layout after its header h on line ln.
func readCanaryCSV(sc *bufio.Scanner, ln int, h []string) (*Outcome, error) {
	c := newCanaryFile()
	var bits [2]int
	var ended [2]int // the line of the column's first empty cell
	for k, name := range h {
		bits[k], _ = canaryBit(name)
	}
	for sc.Scan() {
		ln++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f, err := csvFields(text, ln, h)
		if err != nil {
			return nil, err
		}
		for k, s := range f {
			if s == "" {
				if ended[k] == 0 {
					ended[k] = ln
				}
				continue
			}
			if ended[k] != 0 {
				return nil, scoresErr(ln, h[k], "a value after the empty cell of line %d: a column may end early, with empty cells at its end only", ended[k])
			}
			v, err := parseScore(ln, h[k], s)
			if err != nil {
				return nil, err
			}
			c.add(bits[k], v)
		}
	}
	if err := scanErr(sc, ln); err != nil {
		return nil, err
	}
	return c.done()
}

// canaryJSONShape is what a .json scores file must hold.
const canaryJSONShape = `one object {"in_canary_scores":[..],"out_canary_scores":[..]}`

// readCanaryJSON reads a .json file of the canary layout a token at a time: its memory is that of
// the values, whatever the text (the caller bounds the input's size).
func readCanaryJSON(r io.Reader) (*Outcome, error) {
	lc := &lineCounter{r: r}
	d := json.NewDecoder(lc)
	d.UseNumber()
	t, err := d.Token()
	if errors.Is(err, io.EOF) {
		return nil, scoresErr(0, "", "no trials (an empty file)")
	}
	if err != nil || t != json.Delim('{') {
		return nil, scoresErr(lc.line(d), "", "not %s", canaryJSONShape)
	}
	c := newCanaryFile()
	var seen [2]bool
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, jsonErr(lc, d, "", err)
		}
		key, _ := t.(string)
		bit, ok := canaryBit(key)
		if !ok {
			return nil, scoresErr(lc.line(d), key, "not a key of the canary layout (want %s and %s)", CanaryIn, CanaryOut)
		}
		if seen[bit] {
			return nil, scoresErr(lc.line(d), key, "appears twice")
		}
		seen[bit] = true
		if err := c.jsonArray(lc, d, key, bit); err != nil {
			return nil, err
		}
	}
	if _, err := d.Token(); err != nil {
		return nil, jsonErr(lc, d, "", err)
	}
	for bit, name := range []string{CanaryOut, CanaryIn} {
		if !seen[bit] {
			return nil, scoresErr(0, name, "missing (want %s)", canaryJSONShape)
		}
	}
	if t, err := d.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, jsonErr(lc, d, "", err)
		}
		return nil, scoresErr(lc.line(d), "", "%s after the object: want %s", jsonText(t), canaryJSONShape)
	}
	return c.done()
}

// jsonArray reads the array of numbers of key, the values of bit.
func (c *canaryFile) jsonArray(lc *lineCounter, d *json.Decoder, key string, bit int) error {
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		if err != nil {
			return jsonErr(lc, d, key, err)
		}
		return scoresErr(lc.line(d), key, "%s is not an array of numbers", jsonText(t))
	}
	for i := 0; d.More(); i++ {
		field := fmt.Sprintf("%s[%d]", key, i)
		t, err := d.Token()
		if err != nil {
			return jsonErr(lc, d, field, err)
		}
		num, ok := t.(json.Number)
		if !ok {
			return scoresErr(lc.line(d), field, "%s is not a number", jsonText(t))
		}
		v, err := parseScore(lc.line(d), field, string(num))
		if err != nil {
			return err
		}
		c.add(bit, v)
	}
	_, err := d.Token() // the ]
	if err != nil {
		return jsonErr(lc, d, key, err)
	}
	return nil
}

// jsonErr is the error of a JSON token at field: NaN and Infinity, which Python's json.dump writes
// for a float that is not finite, are said to be so (finite); anything else is a syntax error.
func jsonErr(lc *lineCounter, d *json.Decoder, field string, err error) error {
	ln := lc.line(d)
	var rest [16]byte
	n, _ := io.ReadFull(d.Buffered(), rest[:])
	for _, s := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(rest[:n], []byte(strings.TrimSuffix(s[:2], "a"))) { // N, In, -I
			return finite(ln, field, math.NaN(), s)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return scoresErr(ln, field, "the file ends inside the object: want %s", canaryJSONShape)
	}
	return scoresErr(ln, field, "%v", err)
}

// lineCounter counts the lines a JSON decoder read, for the line of its position (line).
type lineCounter struct {
	r     io.Reader
	lines int
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.lines += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

// line is the line (1-based) of d's position: the lines read less those still in its buffer.
func (l *lineCounter) line(d *json.Decoder) int {
	b, _ := io.ReadAll(d.Buffered())
	return 1 + l.lines - bytes.Count(b, []byte{'\n'})
}
