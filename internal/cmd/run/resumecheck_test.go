package run

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// Every flag of `dpsim run` is in the one table of what --resume does with it, and every entry
// of the table is a flag: a new flag must be classified (unlisted, it would count as given
// again, the safe side, but the table is the documentation).
func TestResumeFlagsTableCoversEveryFlag(t *testing.T) {
	o, err := parseOptions([]string{"s.yaml"}, io.Discard, io.Discard)
	require.NoError(t, err)
	var missing []string
	o.flags.VisitAll(func(f *flag.Flag) {
		if _, ok := resumeFlags[f.Name]; !ok {
			missing = append(missing, f.Name)
		}
	})
	sort.Strings(missing)
	require.Empty(t, missing, "flags of dpsim run not in resumeFlags")
	for name, c := range resumeFlags {
		require.NotNil(t, o.flags.Lookup(name), "resumeFlags lists %s, not a flag of dpsim run", name)
		if c == resumeValue {
			require.NotContains(t, []string{"out", "resume", "role", "attach", "tls-ca", "tls-cert", "tls-key"}, name)
		}
	}
}

// A run started with --role resumes with the same --role given again (the command comes from
// the command line, the file holds its sha256 only) and is refused without it or with another.
func TestResumeRoleGivenAgain(t *testing.T) {
	scn := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(scn, []byte("name: x\n"), 0o644))
	out := t.TempDir()
	first, err := parseOptions([]string{scn, "--out", out, "--role", "cloud.0=my-cloud --fast", "--runs", "7"}, io.Discard, io.Discard)
	require.NoError(t, err)
	sum, err := fileSHA256(scn)
	require.NoError(t, err)
	key, err := newResumeKey(out)
	require.NoError(t, err)
	st := &resumeState{Version: resumeVersion, ScenarioSHA256: sum, Seed: 5, SeedString: "5", SeedSource: "flag",
		Flags: map[string]string{"runs": "7"}, Given: givenDigests(first), Engine: "nats", Runs: 7, Points: 1, Done: []resumePoint{}}
	l := &launcher{o: first, log: zerolog.Nop()}
	l.resume.state, l.resume.key = st, key
	l.saveResume(true)

	resume := func(args ...string) (*launcher, error) {
		o, err := parseOptions(append([]string{scn, "--resume", out}, args...), io.Discard, io.Discard)
		require.NoError(t, err)
		l := &launcher{o: o, log: zerolog.Nop()}
		return l, l.applyResume()
	}
	l, err = resume("--role", "cloud.0=my-cloud --fast")
	require.NoError(t, err)
	require.Equal(t, "my-cloud --fast", l.o.Roles["cloud.0"], "the command given again")
	require.Equal(t, 7, l.o.Runs, "the recorded value")
	require.Equal(t, uint64(5), l.o.Seed)
	require.Equal(t, out, l.o.Out)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--role is not the run's"},
		{[]string{"--role", "cloud.0=other"}, "--role is not the run's"},
		{[]string{"--attach"}, "--attach is not the run's"},
		{[]string{"--role", "cloud.0=my-cloud --fast", "--runs", "8"}, "--runs 8 (the run has 7)"},
	} {
		_, err = resume(tc.args...)
		require.Error(t, err, tc.args)
		require.Contains(t, err.Error(), tc.want, tc.args)
	}
}
