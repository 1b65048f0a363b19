package run_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLiveUIPublic: a --ui address other than loopback is a usage error (exit 2) naming
// --ui-public; with it the run serves there and warns on stderr, the URL with its token.
func TestLiveUIPublic(t *testing.T) {
	scn := scenarioPath("cloud-vehicle")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ui=0.0.0.0:0"}, "--ui-public"},
		{[]string{"--ui=[::]:0"}, "--ui-public"},
		{[]string{"--ui-public"}, "give --ui=HOST:PORT"},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", scn, "--out", t.TempDir()}, c.args...)...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, c.args)
	}
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scn, "--out", t.TempDir(), "--engine", "fast", "--runs", "2",
		"--ui=0.0.0.0:0", "--ui-public", "--progress=false")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "warning: the live view on 0.0.0.0:0 serves the network (--ui-public)")
	require.Regexp(t, regexp.MustCompile(`live view http://[^/ ]+:\d+/\?token=[0-9a-f]{48} `), stderr)
}
