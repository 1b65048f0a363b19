package report

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsim/dpsim/pkg/figure"
)

// Write writes the data of every figure it draws as figures/NAME.json - the same titles and
// axis labels as the figure, series with points - and removes the data of figures it no
// longer draws (an earlier run's in a reused directory).
func TestFigureDataFiles(t *testing.T) {
	dir := t.TempDir()
	require := func(ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Fatalf(format, args...)
		}
	}
	stale := filepath.Join(dir, FigureDataFile(FigTrackingMSE))
	require(os.MkdirAll(filepath.Dir(stale), 0o755) == nil, "mkdir")
	require(os.WriteFile(stale, []byte("{}"), 0o644) == nil, "write")
	in := consensusInput(t, 0.5)
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	_, err := os.Stat(stale)
	require(errors.Is(err, fs.ErrNotExist), "the stale %s is still there: %v", stale, err)
	rep, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	require(len(rep.Figures) > 0, "no figures")
	for _, f := range rep.Figures {
		b, err := os.ReadFile(filepath.Join(dir, FigureDataFile(f.Name)))
		if err != nil {
			t.Fatal(err)
		}
		var d figure.Data
		require(json.Unmarshal(b, &d) == nil, "%s: invalid JSON", f.Name)
		require(d.Name == f.Name && d.Caption == f.Caption, "%s: name %q, caption %q", f.Name, d.Name, d.Caption)
		for i, row := range f.Panels {
			for j, p := range row {
				pd := d.Panels[i][j]
				require(pd.Title == p.Title.Text && pd.X.Label == p.X.Label.Text && pd.Y.Label == p.Y.Label.Text,
					"%s panel (%d, %d): %q %q %q, want %q %q %q", f.Name, i, j, pd.Title, pd.X.Label, pd.Y.Label, p.Title.Text, p.X.Label.Text, p.Y.Label.Text)
				require(len(pd.Series) > 0 && len(pd.Series[0].X) > 1, "%s panel (%d, %d): no series", f.Name, i, j)
			}
		}
	}
}
