package launch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/trace"
)

// TraceOut is a point's trace file in a run's output directory (trace.jsonl, trace-pNN.jsonl):
// the merged per-step records of its traced episodes, in the pkg/trace format (JSON lines),
// streamed as the episodes complete - by the collector (PlayPoint) or by the fast engine's
// sink (Write) - and, beside it, the fault events of those episodes (FaultsName, created at the
// first one).
type TraceOut struct {
	name     string
	dir      string
	f        *os.File
	w        hashWriter // every byte written to f goes through it: Digest
	perm     os.FileMode
	faults   *os.File // FaultsName(name) beside it, created at the first fault event
	fenc     *json.Encoder
	fbuf     *bufio.Writer
	ctl      *trace.Writer[trace.ControlRecord]
	cns      *trace.Writer[trace.ConsensusRecord]
	episodes int
}

// hashWriter writes to f and hashes what it wrote.
type hashWriter struct {
	f *os.File
	h hash.Hash
}

func (w hashWriter) Write(p []byte) (int, error) {
	n, err := atomicfile.LineFile{File: w.f}.Write(p) // a write cut short leaves no partial line
	w.h.Write(p[:n])
	return n, err
}

// CreateTrace creates (or empties) the trace file dir/name with permissions perm, never through
// a symbolic link.
func CreateTrace(dir, name string, perm os.FileMode) (*TraceOut, error) {
	f, err := atomicfile.OpenNoFollow(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err == nil {
		err = f.Chmod(perm) // an existing file keeps its mode through O_TRUNC
	}
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	return &TraceOut{name: name, dir: dir, f: f, w: hashWriter{f, sha256.New()}, perm: perm}, nil
}

// AppendTrace opens the trace file dir/name to append after what it holds (a resumed point's
// file, cut back to its last folded episode and checked against its recorded digest), never
// through a symbolic link; what it holds is read once, for Digest.
func AppendTrace(dir, name string, perm os.FileMode) (*TraceOut, error) {
	f, err := atomicfile.OpenNoFollow(filepath.Join(dir, name), os.O_RDWR|os.O_APPEND, perm)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	return &TraceOut{name: name, dir: dir, f: f, w: hashWriter{f, h}, perm: perm}, nil
}

// FaultsName is the file beside a trace file (trace.jsonl, trace-pNN.jsonl) that records what
// the fault injector did to the traced episodes' messages (faults.jsonl, faults-pNN.jsonl).
func FaultsName(trace string) string { return "faults" + strings.TrimPrefix(trace, "trace") }

// Name is the trace file's name in its directory.
func (t *TraceOut) Name() string { return t.name }

// Episodes is the number of episodes Write appended.
func (t *TraceOut) Episodes() int { return t.episodes }

// Offset is the size of what was written to the trace file so far: a resumed run cuts it back
// there (the records of the episodes folded up to now).
func (t *TraceOut) Offset() (int64, error) { return t.f.Seek(0, io.SeekCurrent) }

// Digest is the hex sha256 of the trace file's bytes up to Offset: a resumed run checks the
// file it continues against it.
func (t *TraceOut) Digest() string { return hex.EncodeToString(t.w.h.Sum(nil)) }

// Writer is where the merged records go (the file, through the digest).
func (t *TraceOut) Writer() io.Writer { return t.w }

// Write appends one episode's records (the sink of engine.Run).
func (t *TraceOut) Write(tr *trace.Traces) error {
	if len(tr.Control) > 0 {
		if t.ctl == nil {
			t.ctl = trace.NewWriter[trace.ControlRecord](t.w)
		}
		for i := range tr.Control {
			if err := t.ctl.Write(&tr.Control[i]); err != nil {
				return err
			}
		}
	}
	if len(tr.Consensus) > 0 {
		if t.cns == nil {
			t.cns = trace.NewWriter[trace.ConsensusRecord](t.w)
		}
		for i := range tr.Consensus {
			if err := t.cns.Write(&tr.Consensus[i]); err != nil {
				return err
			}
		}
	}
	if err := t.writeFaults(tr.Faults); err != nil {
		return err
	}
	t.episodes++
	return nil
}

// writeFaults appends fault events to the file beside the trace, created at the first one.
func (t *TraceOut) writeFaults(events []fault.Event) error {
	if len(events) == 0 {
		return nil
	}
	if t.faults == nil {
		f, err := atomicfile.OpenNoFollow(filepath.Join(t.dir, FaultsName(t.name)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, t.perm)
		if err != nil {
			return fmt.Errorf("fault record: %w", err)
		}
		t.faults, t.fbuf = f, bufio.NewWriterSize(atomicfile.LineFile{File: f}, 1<<16)
		t.fenc = json.NewEncoder(t.fbuf)
	}
	for i := range events {
		if err := t.fenc.Encode(&events[i]); err != nil {
			return fmt.Errorf("fault record: %w", err)
		}
	}
	return nil
}

// Close flushes and closes the trace file and the fault file beside it.
func (t *TraceOut) Close() error {
	var err error
	if t.ctl != nil {
		err = t.ctl.Flush()
	}
	if t.cns != nil {
		if ferr := t.cns.Flush(); err == nil {
			err = ferr
		}
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if t.faults != nil {
		if ferr := t.fbuf.Flush(); err == nil {
			err = ferr
		}
		if cerr := t.faults.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.name, err)
	}
	return nil
}
