package atomicfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// maxLineBack bounds how far CutPartialLine reads back for the start of a partial line (the
// longest trace line dpsim writes is far shorter).
const maxLineBack = 16 << 20

// LineFile is a file of lines (JSON lines: a trace) that stays a whole number of lines when a
// write fails part-way (a full disk): the partial last line is cut off, so a reader never meets
// a truncated line. Its other methods are the file's.
type LineFile struct{ *os.File }

// Write writes p at the file's position; when it fails, what it wrote of an unfinished line
// is cut off (CutPartialLine) and the write's error returned.
func (f LineFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil {
		if cerr := CutPartialLine(f.File); cerr != nil {
			err = fmt.Errorf("%w (and cutting the partial line: %v)", err, cerr)
		}
	}
	return n, err
}

// CutPartialLine truncates f at the end of its last complete line before its current position
// and moves the position there: a file that ends mid-line (a write that failed part-way) ends
// with a whole line again. A file already ending in a newline (or empty) is left as it is.
func CutPartialLine(f *os.File) error {
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || pos == 0 {
		return err
	}
	back := min(pos, maxLineBack)
	buf := make([]byte, back)
	if _, err := f.ReadAt(buf, pos-back); err != nil && err != io.EOF {
		return err
	}
	if buf[len(buf)-1] == '\n' {
		return nil
	}
	at := pos - back // no newline in reach: the whole tail is one partial line
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		at = pos - back + int64(i) + 1
	} else if back < pos {
		return fmt.Errorf("no line end in the last %d bytes", back)
	}
	if err := f.Truncate(at); err != nil {
		return err
	}
	_, err = f.Seek(at, io.SeekStart)
	return err
}
