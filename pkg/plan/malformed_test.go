package plan

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/internal/golden"
	"github.com/dpsim/dpsim/pkg/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden .err files of the malformed scenarios New refuses")

// refusedByPlan marks the malformed scenario files (pkg/scenario/testdata/malformed) that only
// the dynamics refuse: scenario.Load accepts them (pkg/scenario's TestMalformed checks that)
// and New refuses them.
const refusedByPlan = "\n# refused by: plan.New\n"

// TestMalformedDynamics loads every malformed scenario file marked refusedByPlan and plans its
// points: New must fail as scenario.Load fails on the other files (pkg/scenario's
// TestMalformed): a *scenario.ValidationError starting with the file name, containing every
// "# want: ..." line, and equal to the golden .err file beside it unless "# golden: skip".
func TestMalformedDynamics(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "scenario", "testdata", "malformed", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), refusedByPlan) {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			checkRefused(t, path, string(data), planError(t, path))
		})
	}
	if n < 6 {
		t.Fatalf("%d malformed files refused by New, want at least 6", n)
	}
}

// planError loads the scenario at path and returns the error of New on its first point that
// fails.
func planError(t *testing.T, path string) error {
	t.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, pt := range s.Expand() {
		if _, err := New(pt, Options{}); err != nil {
			return err
		}
	}
	t.Fatalf("planned without error: %+v", s)
	return nil
}

// checkRefused checks the error of the malformed file at path (text data): a
// *scenario.ValidationError, held to its wants and golden file (golden.CheckRefusal).
func checkRefused(t *testing.T, path, data string, err error) {
	t.Helper()
	var ve *scenario.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Errorf("error is not a *scenario.ValidationError with problems: %v", err)
	}
	golden.CheckRefusal(t, path, data, err.Error(), *update)
}
