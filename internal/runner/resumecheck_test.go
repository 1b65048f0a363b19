package runner

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/contract"
)

// testParse parses the flags of `dpsim run` that the tests of the run's loop and of its
// resumption give (the command's parser is its own; its flags are held to the resume table by
// the command's test), with the command's defaults for the others, and checks them.
func testParse(args []string, _, _ any) (*Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &Options{Roles: launch.Programs{}, AgentsPerProcess: 1, Timeout: contract.DefaultTimeout, Encoding: "json",
		Inflight: launch.DefaultInflight, MaxMissedFraction: 1, ChildProcs: 1, AttachTimeout: time.Minute}
	fs.StringVar(&o.Out, "out", "", "")
	fs.StringVar(&o.Resume, "resume", "", "")
	fs.Func("role", "", o.Roles.ParseProgram)
	fs.BoolVar(&o.Attach, "attach", false, "")
	fs.IntVar(&o.Runs, "episodes", 0, "")
	fs.IntVar(&o.Runs, "runs", 0, "")
	fs.StringVar(&o.Engine, "engine", "nats", "")
	fs.IntVar(&o.TraceEpisodes, "trace-episodes", DefaultTraceEpisodes, "")
	seed := fs.String("seed", "", "")
	path, err := cli.ParseScenarioArgs(fs, args, "s.yaml")
	if err != nil && !(errors.Is(err, cli.ErrMissingScenario) && o.Resume != "") {
		return nil, err
	}
	o.ScenarioPath, o.Flags, o.Args = path, fs, args
	if o.Seed, o.SeedSet, err = cli.ParseSeed(*seed); err != nil {
		return nil, err
	}
	o.Reparse = func(args []string) (*Options, error) { return testParse(args, nil, nil) }
	return o, o.Check("")
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
