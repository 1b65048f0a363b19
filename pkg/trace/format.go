package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Writer writes records as JSON lines (one JSON object per line, fields as in the struct tags).
// Floats are written in the shortest form that round-trips, so Read gives back the same bits.
// Non-finite values cannot be encoded and are an error naming the record.
type Writer[R Record] struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

// NewWriter returns a writer to w; call Flush at the end.
func NewWriter[R Record](w io.Writer) *Writer[R] {
	tw := &Writer[R]{w: bufio.NewWriterSize(w, 1<<16)}
	tw.enc = json.NewEncoder(&tw.buf)
	return tw
}

// Write appends one record as a line: encoded in place in the buffered writer's free space
// (appendRecord), or by encoding/json for the records the append encoder leaves to it.
func (tw *Writer[R]) Write(r *R) error {
	if b, ok := appendRecord(tw.w.AvailableBuffer(), r); ok {
		if _, err := tw.w.Write(b); err != nil {
			return fmt.Errorf("trace: record %d: %w", tw.n, err)
		}
		tw.n++
		return nil
	}
	tw.buf.Reset()
	if err := tw.enc.Encode(r); err != nil {
		return fmt.Errorf("trace: record %d (%s): %w", tw.n, recordKey(r), err)
	}
	if _, err := tw.w.Write(tw.buf.Bytes()); err != nil {
		return fmt.Errorf("trace: record %d: %w", tw.n, err)
	}
	tw.n++
	return nil
}

// WriteLine appends v as a JSON line that is not a record (a marker), in order with the
// records.
func (tw *Writer[R]) WriteLine(v any) error {
	tw.buf.Reset()
	if err := tw.enc.Encode(v); err != nil {
		return fmt.Errorf("trace: line after record %d: %w", tw.n, err)
	}
	if _, err := tw.w.Write(tw.buf.Bytes()); err != nil {
		return fmt.Errorf("trace: line after record %d: %w", tw.n, err)
	}
	return nil
}

// Flush writes buffered lines to the underlying writer.
func (tw *Writer[R]) Flush() error {
	if err := tw.w.Flush(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// Count returns the number of records written.
func (tw *Writer[R]) Count() int { return tw.n }

func recordKey(r any) string {
	switch v := r.(type) {
	case *ControlRecord:
		return fmt.Sprintf("episode %d step %d", v.Episode, v.Step)
	case *ConsensusRecord:
		return fmt.Sprintf("episode %d step %d", v.Episode, v.Step)
	case *AgentRecord:
		return fmt.Sprintf("episode %d step %d agent %d", v.Episode, v.Step, v.Agent)
	}
	return "?"
}

// Write writes recs as JSON lines to w.
func Write[R Record](w io.Writer, recs []R) error {
	tw := NewWriter[R](w)
	for i := range recs {
		if err := tw.Write(&recs[i]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// MaxLine is the longest line Read accepts (bytes).
const MaxLine = 64 << 20

// Read reads JSON-lines records written by Write (or a Writer). Blank lines are
// skipped; unknown fields and malformed lines are errors naming the line.
func Read[R Record](r io.Reader) ([]R, error) {
	return NewReader[R](r).readAll() // the one decoder of a trace line
}

// readAll returns the records up to the end, or those before the error that stopped it.
func (tr *Reader[R]) readAll() ([]R, error) {
	var out []R
	for {
		rec, err := tr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// Reader reads JSON-lines records (as Read) one at a time, so that a trace file of
// any length is read in constant memory. The records of a role process's trace are grouped
// by episode in increasing order (a process runs its episodes one after the other), which is
// what ReadEpisode and the stream merges rely on.
type Reader[R Record] struct {
	sc   *bufio.Scanner
	line int
	head R
	has  bool // head holds the next record
	err  error
	eof  bool
	last int // episode of the last record returned (-1: none)

	// scan decodes the lines json.Encoder writes without encoding/json (several times
	// faster); the lines it does not recognise go to decodeJSON. nil: decodeJSON only.
	scan    func(*lineScanner, []byte, *R) bool
	scanner lineScanner
}

// NewReader returns a reader of the records in r.
func NewReader[R Record](r io.Reader) *Reader[R] {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), MaxLine)
	return &Reader[R]{sc: sc, last: -1, scan: fastDecoder[R]()}
}

// fill reads the next record into head; at the end or on an error has stays false.
func (tr *Reader[R]) fill() {
	for !tr.has && !tr.eof && tr.err == nil {
		if !tr.sc.Scan() {
			if err := tr.sc.Err(); err != nil {
				tr.err = fmt.Errorf("trace: line %d: %w", tr.line+1, err)
			}
			tr.eof = true
			return
		}
		tr.line++
		b := bytes.TrimSpace(tr.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if tr.scan != nil && tr.scan(&tr.scanner, b, &tr.head) {
			tr.has = true
			continue
		}
		var zero R
		tr.head = zero // what the scanner set before it gave up
		rec, err := decodeJSON[R](b)
		if err != nil {
			tr.err = fmt.Errorf("trace: line %d: %w", tr.line, err)
			return
		}
		tr.head, tr.has = rec, true
	}
}

// errMoreThanOne is a line holding more than one JSON value.
var errMoreThanOne = errors.New("more than one JSON value")

// decodeJSON decodes one line with encoding/json: the definition of the format, which the
// scanner's fast path (lineScanner) reproduces on the lines json.Encoder writes, and the one
// source of the errors of malformed lines.
func decodeJSON[R Record](b []byte) (R, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rec R
	if err := dec.Decode(&rec); err != nil {
		return rec, err
	}
	if dec.More() {
		return rec, errMoreThanOne
	}
	return rec, nil
}

// Peek returns the episode of the next record; ok is false at the end of the records or
// after an error (see Err).
func (tr *Reader[R]) Peek() (episode int, ok bool) {
	tr.fill()
	if !tr.has {
		return 0, false
	}
	return episodeOf(&tr.head), true
}

// Read returns the next record; io.EOF at the end, or the error that stopped the reader.
func (tr *Reader[R]) Read() (R, error) {
	tr.fill()
	var zero R
	if !tr.has {
		if tr.err != nil {
			return zero, tr.err
		}
		return zero, io.EOF
	}
	r := tr.head
	tr.head, tr.has = zero, false
	tr.last = episodeOf(&r)
	return r, nil
}

// ReadEpisode appends to dst the records of episode ep at the head of the stream (it stops at
// the first record of another episode) and returns dst. Records of an episode below one
// already read are an error: the stream is not ordered by episode.
func (tr *Reader[R]) ReadEpisode(ep int, dst []R) ([]R, error) {
	for {
		e, ok := tr.Peek()
		if !ok {
			return dst, tr.err
		}
		if e < tr.last {
			return dst, fmt.Errorf("trace: line %d: episode %d after episode %d: records are not ordered by episode", tr.line, e, tr.last)
		}
		if e != ep {
			return dst, nil
		}
		r, err := tr.Read()
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
}

// Err returns the error that stopped the reader (a malformed line), nil at a clean end.
func (tr *Reader[R]) Err() error { return tr.err }

func episodeOf(r any) int {
	switch v := r.(type) {
	case *ControlRecord:
		return v.Episode
	case *ConsensusRecord:
		return v.Episode
	case *AgentRecord:
		return v.Episode
	}
	return 0
}
