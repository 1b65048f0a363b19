package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/record"
)

// FigureDataDir is where Write puts the data of each figure (record.FigureDataDir).
const FigureDataDir = record.FigureDataDir

// FigureDataFile is the path, relative to the output directory, of the data of figure name.
func FigureDataFile(name string) string {
	return filepath.Join(FigureDataDir, figure.DataFile(name))
}

// writeFigureData writes the data of every figure into dir/FigureDataDir, atomically each,
// after removing the data of the figures this report does not draw (an earlier run's in a
// reused directory), so that the directory holds exactly the figures of report.md.
func writeFigureData(dir string, figs []*figure.Figure, in Input) error {
	data := filepath.Join(dir, FigureDataDir)
	if fi, err := os.Lstat(data); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("report: %s is a symbolic link: dpsim does not write its figures' data through it (remove it)", data)
	}
	if err := atomicfile.MkdirOutputs(data, in.ShareOutputs || in.Secret == nil); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	drawn := map[string]bool{}
	for _, f := range figs {
		drawn[f.Name] = true
	}
	for _, name := range FigureNames() {
		if drawn[name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, FigureDataFile(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("report: %w", err)
		}
	}
	for _, f := range figs {
		if _, err := f.WriteDataMode(data, in.mode(FigureDataFile(f.Name))); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}
