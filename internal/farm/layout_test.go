package farm_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The farm is a generic chunk farm: what it plays (the fast engine's episodes, the audit's game)
// is plugged in from internal/farm/kinds, so neither it nor anything it imports depends on
// them or on the reports.
func TestFarmImportsNoKind(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/dpsim/dpsim/internal/farm").CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/dpsim/dpsim/pkg/bus")
	for _, p := range []string{"pkg/engine", "pkg/report", "pkg/audit", "internal/farm/kinds", "internal/launch"} {
		require.NotContains(t, deps, "github.com/dpsim/dpsim/"+p, "internal/farm depends on %s", p)
	}
}
