package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/pkg/report"
)

// writeOutputs writes the Parquet tables of --parquet (a failure is the run's, named in both
// files), report.md, then summary.json, so that the two never disagree: a file
// that cannot be written (a full disk) is recorded as the run's failure in the other, or,
// when neither can say it, in neither - report.md is then removed rather than left saying the
// run went well - and the error goes to stderr through the returned error. It returns runErr
// joined with the write errors, and whether summary.json was written.
func (l *launcher) writeOutputs(runErr error) (error, bool) {
	if err := l.writeParquet(); err != nil {
		runErr = errors.Join(runErr, err)
		l.recordWriteFailure(err)
	}
	if err := l.writeReport(); err != nil {
		err = fmt.Errorf("report.md: %w", err)
		runErr = errors.Join(runErr, err)
		l.sum.Files.Report = ""
		l.recordWriteFailure(err)
	}
	err := l.writeSummary()
	if err == nil {
		return runErr, true
	}
	runErr = errors.Join(runErr, err)
	if l.sum.Files.Report == "" {
		return runErr, false
	}
	// report.md is there and does not know: write it again with the failure (its figures
	// stand: only the words change).
	l.recordWriteFailure(err)
	if rerr := l.renderReport(false); rerr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("report.md: %w", rerr))
		if rmErr := os.Remove(filepath.Join(l.o.Out, report.FileName)); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			runErr = errors.Join(runErr, fmt.Errorf("report.md says the run went on while summary.json failed; remove it: %w", rmErr))
		}
	}
	return runErr, false
}

// recordWriteFailure makes the run failed (an interrupted run stays interrupted) and adds
// the failure to its error.
func (l *launcher) recordWriteFailure(err error) {
	if l.sum.Status != "interrupted" {
		l.sum.Status = "failed"
	}
	if l.sum.Error == "" {
		l.sum.Error = err.Error()
	} else {
		l.sum.Error += "; " + err.Error()
	}
}
