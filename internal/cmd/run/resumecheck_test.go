package run

import (
	"flag"
	"io"
	"sort"
	"testing"

	"github.com/dpsim/dpsim/internal/runner"
	"github.com/stretchr/testify/require"
)

// Every flag of `dpsim run` is in the one table of what --resume does with it, and every entry
// of the table is a flag: a new flag must be classified (unlisted, it would count as given
// again, the safe side, but the table is the documentation).
func TestResumeFlagsTableCoversEveryFlag(t *testing.T) {
	o, err := parseOptions([]string{"s.yaml"}, io.Discard, io.Discard)
	require.NoError(t, err)
	var missing []string
	resumeFlags := runner.ResumeFlags()
	o.Flags.VisitAll(func(f *flag.Flag) {
		if _, ok := resumeFlags[f.Name]; !ok {
			missing = append(missing, f.Name)
		}
	})
	sort.Strings(missing)
	require.Empty(t, missing, "flags of dpsim run not in resumeFlags")
	for name, c := range resumeFlags {
		require.NotNil(t, o.Flags.Lookup(name), "resumeFlags lists %s, not a flag of dpsim run", name)
		if c == "value" {
			require.NotContains(t, []string{"out", "resume", "role", "attach", "tls-ca", "tls-cert", "tls-key"}, name)
		}
	}
}
