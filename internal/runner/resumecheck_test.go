package runner

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
)

// testParse parses the flags of `dpsim run` that the resumption of a run started with --role
// reads (the command's parser is its own; its flags are held to the table by the command's
// test): SCENARIO, --out, --resume, --role, --attach, --runs, --seed.
func testParse(args []string, _, _ any) (*Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o := &Options{Roles: launch.Programs{}, Engine: "nats", AgentsPerProcess: 1}
	fs.StringVar(&o.Out, "out", "", "")
	fs.StringVar(&o.Resume, "resume", "", "")
	fs.Func("role", "", o.Roles.ParseProgram)
	fs.BoolVar(&o.Attach, "attach", false, "")
	fs.IntVar(&o.Runs, "runs", 0, "")
	seed := fs.String("seed", "", "")
	path, err := cli.ParseScenarioArgs(fs, args, "s.yaml")
	if err != nil {
		return nil, err
	}
	o.ScenarioPath, o.Flags, o.Args = path, fs, args
	if o.Seed, o.SeedSet, err = cli.ParseSeed(*seed); err != nil {
		return nil, err
	}
	o.Reparse = func(args []string) (*Options, error) { return testParse(args, nil, nil) }
	return o, nil
}

// A run started with --role resumes with the same --role given again (the command comes from
// the command line, the file holds its sha256 only) and is refused without it or with another.
func TestResumeRoleGivenAgain(t *testing.T) {
	scn := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(scn, []byte("name: x\n"), 0o644))
	out := t.TempDir()
	first, err := testParse([]string{scn, "--out", out, "--role", "cloud.0=my-cloud --fast", "--runs", "7"}, io.Discard, io.Discard)
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
		o, err := testParse(append([]string{scn, "--resume", out}, args...), io.Discard, io.Discard)
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
