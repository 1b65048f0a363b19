package run

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/wire"
)

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(*testing.T, *runner.Options)
	}{
		{args: []string{"s.yaml"}, check: func(t *testing.T, o *runner.Options) {
			require.Equal(t, "s.yaml", o.ScenarioPath)
			require.Equal(t, "nats", o.Engine)
			require.False(t, o.SeedSet)
			require.Equal(t, 1, o.AgentsPerProcess)
			require.Equal(t, runner.DefaultTraceEpisodes, o.TraceEpisodes, "traces are bounded by default")
		}},
		{args: []string{"s.yaml", "--trace-episodes", "-1"}, check: func(t *testing.T, o *runner.Options) {
			require.Equal(t, -1, o.TraceEpisodes, "-1: every episode")
		}},
		{args: []string{"s.yaml", "--trace-episodes", "0"}, check: func(t *testing.T, o *runner.Options) {
			require.Equal(t, 0, o.TraceEpisodes, "0: no trace")
		}},
		{args: []string{"s.yaml", "--trace-episodes", "-2"}, wantErr: "--trace-episodes -2"},
		{args: []string{"s.yaml", "--timeout", "1ns"}, wantErr: "--timeout 1ns: must be at least 1ms"},
		// flags after the scenario, as in the synopsis
		{args: []string{"s.yaml", "--out", "d", "--seed", "9", "--runs", "5", "--mode", "realtime", "--period", "20ms", "--engine", "fast"}, check: func(t *testing.T, o *runner.Options) {
			require.Equal(t, "d", o.Out)
			require.Equal(t, uint64(9), o.Seed)
			require.True(t, o.SeedSet)
			require.Equal(t, 5, o.Runs)
			require.Equal(t, wire.Realtime, o.Mode)
			require.Equal(t, 20*time.Millisecond, o.Period)
			require.Equal(t, "fast", o.Engine)
		}},
		{args: []string{"--runs", "3", "s.yaml", "--agents-per-process", "25"}, check: func(t *testing.T, o *runner.Options) {
			require.Equal(t, 3, o.Runs)
			require.Equal(t, 25, o.AgentsPerProcess)
		}},
		{args: []string{}, wantErr: "missing SCENARIO"},
		{args: []string{"a.yaml", "b.yaml"}, wantErr: "one SCENARIO expected"},
		{args: []string{"s.yaml", "--engine", "warp"}, wantErr: "--engine"},
		{args: []string{"s.yaml", "--seed", "x"}, wantErr: "--seed"},
		{args: []string{"s.yaml", "--runs", "-1"}, wantErr: "--runs"},
		{args: []string{"s.yaml", "--mode", "fastest"}, wantErr: "--mode"},
		{args: []string{"s.yaml", "--timeout", "0s"}, wantErr: "--timeout"},
		{args: []string{"s.yaml", "--agents-per-process", "0"}, wantErr: "--agents-per-process"},
		{args: []string{"s.yaml", "--encoding", "xml"}, wantErr: "--encoding"},
		{args: []string{"s.yaml", "--run-id", "a.b"}, wantErr: "--run-id"},
		{args: []string{"s.yaml", "--bogus"}, wantErr: "flag provided but not defined"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			o, err := parseOptions(tc.args, io.Discard, io.Discard)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.True(t, errors.Is(err, cli.ErrUsage))
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
	// An asked-for --help goes to stdout (it can be piped into a pager); a bad flag's usage
	// goes to stderr with the error.
	var out, errb bytes.Buffer
	_, err := parseOptions([]string{"--help"}, &out, &errb)
	require.True(t, errors.Is(err, flag.ErrHelp))
	require.Contains(t, out.String(), "Usage: dpsim run SCENARIO")
	require.Contains(t, out.String(), "-trace-episodes")
	require.Empty(t, errb.String())
	out.Reset()
	_, err = parseOptions([]string{"s.yaml", "--bogus"}, &out, &errb)
	require.Error(t, err)
	require.Empty(t, out.String())
	require.Empty(t, errb.String(), "one error line, not the whole help")
	require.ErrorContains(t, err, "flag provided but not defined: -bogus (see 'dpsim run --help')")
}

// --episodes is the number of episodes per point; --runs, its old name, is still read, and
// both together are refused.
func TestEpisodesFlagAndItsOldName(t *testing.T) {
	for _, name := range []string{"--episodes", "--runs"} {
		o, err := parseOptions([]string{"s.yaml", name, "7"}, io.Discard, io.Discard)
		require.NoError(t, err, name)
		require.Equal(t, 7, o.Runs, name)
	}
	_, err := parseOptions([]string{"s.yaml", "--episodes", "7", "--runs", "7"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--episodes and --runs (its old name) are both given")
	_, err = parseOptions([]string{"s.yaml", "--episodes", "-1"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--episodes (--runs) -1: want 1..")
}
