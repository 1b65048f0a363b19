package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/report"
)

// procFileSuffixes are the files a role process writes into its --out directory.
var procFileSuffixes = []string{contract.LogFile(""), contract.TraceFile(""), contract.ResultFile(""), contract.TranscriptFile(""),
	contract.FaultsFile(""), contract.CheckpointFile(""), contract.PlanFile(""), "public-keys.json"}

// cleanOutputs removes from dir what an earlier dpsim run wrote there, so that a reused --out
// holds only this run's outputs: summary.json, report.md, resume.json and resume.key, trace.jsonl and trace-pNN.jsonl (and
// faults.jsonl, faults-pNN.jsonl beside them), episodes.parquet and trace.parquet (--parquet), faults.applied.yaml (--ui), the
// report's figures (report.FigureNames as .png and .svg), and procs/ with the processes'
// files (procs/ and procs/pNN/: *.log, *.trace.jsonl, *.result.json, *.transcript.jsonl, *.faults.jsonl, *.checkpoint.json, *.plan.json, faults.live.*.json; the
// directories go when that leaves them empty). Nothing else is touched.
func cleanOutputs(dir string) error {
	var errs []error
	remove := func(path string) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if isRunOutput(name) {
			remove(filepath.Join(dir, name))
		}
	}
	// A link where dpsim keeps a folder of its own (procs/, figures/) is removed itself, never
	// followed: cleaning through it would delete, and writing through it would write, outside OUT.
	for _, sub := range []string{"procs", record.FigureDataDir} {
		if fi, err := os.Lstat(filepath.Join(dir, sub)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			remove(filepath.Join(dir, sub))
		}
	}
	procs := filepath.Join(dir, "procs")
	var cleanProcs func(d string, depth int)
	cleanProcs = func(d string, depth int) {
		entries, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case e.Type()&fs.ModeSymlink != 0: // never followed (see above); not dpsim's to remove
			case e.IsDir() && depth == 0 && isPointDir(name):
				cleanProcs(filepath.Join(d, name), 1)
			case e.IsDir() && name == launch.AttachDir:
				if err := launch.RemoveAttach(d, false); err != nil {
					errs = append(errs, err)
				}
			case !e.IsDir() && (hasAnySuffix(name, procFileSuffixes) || strings.HasPrefix(name, "faults.live.")):
				remove(filepath.Join(d, name))
			}
		}
		_ = os.Remove(d) // only when empty: a directory with other files stays
	}
	cleanProcs(procs, 0)
	return errors.Join(errs...)
}

// isRunOutput reports whether name, in OUT, is a file dpsim run writes there (cleanOutputs).
func isRunOutput(name string) bool {
	if name == "summary.json" || name == report.FileName || name == ResumeFile || name == ResumeKeyFile || name == "trace.jsonl" || isPointTrace(name) ||
		name == "faults.jsonl" || name == AppliedFaultsFile || name == EpisodesParquet || name == TraceParquet || isPointTrace(strings.Replace(name, "faults-p", "trace-p", 1)) {
		return true
	}
	for _, f := range record.FigureNames() {
		if name == f+".png" || name == f+".svg" {
			return true
		}
	}
	return false
}

// isPointTrace matches trace-pNN.jsonl.
func isPointTrace(name string) bool {
	digits, ok := strings.CutPrefix(name, "trace-p")
	if !ok {
		return false
	}
	digits, ok = strings.CutSuffix(digits, ".jsonl")
	return ok && allDigits(digits)
}

// isPointDir matches pNN.
func isPointDir(name string) bool {
	digits, ok := strings.CutPrefix(name, "p")
	return ok && allDigits(digits)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// outMode is the mode of the output name (a path in OUT): 0600 when it holds the run's secrets
// (launch.SecretOutputs) unless --share-outputs, else 0644.
func (l *launcher) outMode(name string) os.FileMode { return launch.OutputMode(name, l.o.ShareOutputs) }
