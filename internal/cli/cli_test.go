package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An asked-for -h/--help prints the usage to stdout; a parse error prints the error and the
// usage to stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}} {
		var out, errb bytes.Buffer
		fs := NewCommandFlagSet("x", "x [--n N]", "Does x.", &out, &errb)
		fs.Int("n", 1, "how many")
		err := Parse(fs, args)
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%v: err = %v", args, err)
		}
		if want := "Usage: x [--n N]\n\nDoes x.\n\nFlags:\n  -n int\n    \thow many (default 1)\n"; out.String() != want {
			t.Errorf("%v: stdout %q, want %q", args, out.String(), want)
		}
		if errb.Len() != 0 {
			t.Errorf("%v: stderr %q", args, errb.String())
		}
	}
	var out, errb bytes.Buffer
	fs := NewCommandFlagSet("x", "x [--n N]", "Does x.", &out, &errb)
	fs.Int("n", 1, "how many")
	err := Parse(fs, []string{"--n", "z"})
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("err = %v", err)
	}
	// A parse error is one line - the error and where the help is - not 60 lines of help that
	// scroll it away: nothing is printed, the error says it all.
	if out.Len() != 0 || errb.Len() != 0 || !strings.Contains(err.Error(), `invalid value "z" for flag --n: a whole number`) || !strings.Contains(err.Error(), "see 'x --help'") {
		t.Errorf("err %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
	// A second parse after an error still sends an asked-for help to stdout.
	out.Reset()
	errb.Reset()
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || out.Len() == 0 || errb.Len() != 0 {
		t.Errorf("err %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
}

// A value the flag package cannot parse names what the flag takes, not "parse error"; other
// messages (out of range, a custom flag's own) are kept.
func TestParseErrorSaysWhatFlagTakes(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--period 20", `invalid value "20" for flag --period: a duration such as 20ms, 1.5s or 2m (a unit is required)`},
		{"--runs x", `invalid value "x" for flag --runs: a whole number`},
		{"--runs 99999999999999999999", `invalid value "99999999999999999999" for flag --runs: value out of range`},
		{"--scale y", `invalid value "y" for flag --scale: a number`},
		{"--fast=maybe", `invalid value "maybe" for flag --fast: true or false`},
		{"--mode z", `invalid value "z" for flag --mode: lockstep or realtime`},
	} {
		fs := NewCommandFlagSet("x", "x", "Does x.", &bytes.Buffer{}, &bytes.Buffer{})
		fs.Duration("period", 0, "")
		fs.Int("runs", 0, "")
		fs.Float64("scale", 0, "")
		fs.Bool("fast", false, "")
		fs.Func("mode", "", func(string) error { return errors.New("lockstep or realtime") })
		err := Parse(fs, strings.Fields(tc.args))
		require.ErrorIs(t, err, ErrUsage)
		require.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// NewFlagSet, given only stderr, prints help to os.Stdout for the real process's stderr and
// to the given writer otherwise (a test's buffer).
func TestNewFlagSetHelpWriter(t *testing.T) {
	var errb bytes.Buffer
	fs := NewFlagSet("x", "x", "Does x.", &errb)
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || !bytes.Contains(errb.Bytes(), []byte("Usage: x")) {
		t.Errorf("err %v, stderr %q", err, errb.String())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	fs = NewFlagSet("x", "x", "Does x.", os.Stderr)
	err = Parse(fs, []string{"-h"})
	os.Stdout = stdout
	w.Close()
	var got bytes.Buffer
	_, _ = got.ReadFrom(r)
	if !errors.Is(err, flag.ErrHelp) || !bytes.Contains(got.Bytes(), []byte("Usage: x")) {
		t.Errorf("err %v, stdout %q", err, got.String())
	}
}

func TestParseScenarioArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		path string
		err  string
	}{
		{[]string{"s.yaml", "--out", "d"}, "s.yaml", ""},
		{[]string{"--out", "d", "s.yaml"}, "s.yaml", ""},
		{[]string{"--out", "d"}, "", "missing SCENARIO (a scenario YAML file, e.g. ex.yaml)"},
		{[]string{"a.yaml", "--out", "d", "b.yaml"}, "", "one SCENARIO expected, got 2 arguments"},
		{[]string{"s.yaml", "--bogus"}, "", "flag provided but not defined"},
	} {
		var buf bytes.Buffer
		fs := NewCommandFlagSet("x", "x", "x", &buf, &buf)
		out := fs.String("out", "", "output")
		path, err := ParseScenarioArgs(fs, c.args, "ex.yaml")
		if c.err != "" {
			require.ErrorIs(t, err, ErrUsage, c.args)
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.path, path)
		require.Equal(t, "d", *out)
	}
}
