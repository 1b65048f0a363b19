package scenario

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the testdata/malformed/*.err golden files")

// refusedByPlan marks a malformed file that only the dynamics refuse (a graph whose rate
// alpha >= 1, an LQR design without a solution): Load accepts it and plan.New refuses it,
// which pkg/plan's TestMalformedDynamics checks the same way.
const refusedByPlan = "\n# refused by: plan.New\n"

// TestMalformed loads every file in testdata/malformed. Each must fail with an error that
// contains every "# want: ..." line of the file (written by hand) and equals the golden
// .err file beside it (rewritten with -update; review the diff). Files whose message comes
// from pkg/dynamics say "# golden: skip" and are checked against their wants only. Files
// marked refusedByPlan must load: pkg/plan checks their error.
func TestMalformed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "malformed", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("%d malformed files, want at least 20", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Load(path)
			if strings.Contains(string(data), refusedByPlan) {
				if err != nil {
					t.Errorf("refused by Load, marked as refused by plan.New only: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded without error: %+v", s)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Errorf("error is not a *ValidationError with problems: %v", err)
			}
			golden.CheckRefusal(t, path, string(data), err.Error(), *update)
		})
	}
}
