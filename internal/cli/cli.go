package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// Command is one dpsim subcommand.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) error
}

// ErrUsage marks an error caused by the command line itself (exit code 2).
var ErrUsage = errors.New("usage error")

// ErrMissingScenario is wrapped (with ErrUsage) by ParseScenarioArgs' error when no SCENARIO
// was given.
var ErrMissingScenario = errors.New("missing SCENARIO")

// UsageError wraps err so that the caller exits with code 2.
func UsageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// NewFlagSet is NewCommandFlagSet for a command that has only its stderr at hand: the
// explicit --help goes to os.Stdout when stderr is os.Stderr (a real process, so every
// command of the binary prints its help to stdout), else to stderr (a test's buffer).
// Prefer NewCommandFlagSet.
func NewFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	help := stderr
	if f, ok := stderr.(*os.File); ok && f == os.Stderr {
		help = os.Stdout
	}
	return NewCommandFlagSet(name, synopsis, description, help, stderr)
}

// NewCommandFlagSet returns a ContinueOnError flag set whose usage prints synopsis,
// description and every flag with its default to stdout when it was asked for (-h, --help:
// it can be piped into a pager); after a parse error only one line follows the error on
// stderr, "see 'dpsim run --help'", so that the error is not scrolled away.
func NewCommandFlagSet(name, synopsis, description string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package writes a parse error to Output just before it calls Usage; -h calls
	// Usage without one. errMark tells the two apart.
	mark := &errMark{cmd: commandOf(synopsis)}
	fs.SetOutput(mark)
	fs.Usage = func() {
		if mark.wrote {
			mark.wrote = false // Parse returns the error with the hint; nothing more here
			return
		}
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, strings.TrimSpace(description))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(mark)
	}
	return fs
}

// commandOf returns the command a synopsis starts with: "dpsim run" of "dpsim run SCENARIO
// [--out DIR]", "plant" of "plant --run ID ...".
func commandOf(synopsis string) string {
	f := strings.Fields(synopsis)
	switch {
	case len(f) == 0:
		return "dpsim"
	case f[0] == "dpsim" && len(f) > 1 && !strings.HasPrefix(f[1], "-") && !strings.HasPrefix(f[1], "["):
		return f[0] + " " + f[1]
	}
	return f[0]
}

// errMark swallows the flag package's own error message (Parse returns the error, with a
// hint, for the caller to print once) and records that one was written.
type errMark struct {
	cmd   string
	wrote bool
}

func (e *errMark) Write(p []byte) (int, error) {
	e.wrote = true
	return len(p), nil
}

// Parse parses args; -h/--help prints usage and returns flag.ErrHelp, which callers pass up
// unchanged (dpsim exits 0 for it). Other parse errors are usage errors.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		msg := explainParseError(fs, err)
		if m, ok := fs.Output().(*errMark); ok {
			return fmt.Errorf("%w: %s (see '%s --help')", ErrUsage, msg, m.cmd)
		}
		return fmt.Errorf("%w: %s", ErrUsage, msg)
	}
	return nil
}

// explainParseError replaces the flag package's bare "parse error" with what the flag takes:
// `invalid value "20" for flag -period: parse error` becomes `... for flag --period: a duration
// such as 20ms, 1.5s or 2m (a unit is required)`.
func explainParseError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	const prefix = "invalid value "
	if v, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if i := strings.Index(v, " for -"); i >= 0 {
			name := strings.TrimSuffix(v[i+len(" for -"):], ": parse error")
			return prefix + v[:i] + " for flag --" + name + ": true or false"
		}
	}
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		return msg
	}
	i := strings.Index(rest, " for flag -")
	j := strings.LastIndex(rest, ": ")
	if i < 0 || j < i {
		return msg
	}
	name := rest[i+len(" for flag -") : j]
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	want := ""
	if g, ok := f.Value.(flag.Getter); ok && rest[j+2:] == "parse error" {
		switch g.Get().(type) {
		case time.Duration:
			want = "a duration such as 20ms, 1.5s or 2m (a unit is required)"
		case int, int64:
			want = "a whole number"
		case uint, uint64:
			want = "a whole number >= 0"
		case float64:
			want = "a number"
		case bool:
			want = "true or false"
		}
	}
	if want == "" {
		return prefix + rest[:i] + " for flag --" + rest[i+len(" for flag -"):]
	}
	return prefix + rest[:i] + " for flag --" + name + ": " + want
}

// ParseInterspersed parses args with fs (Parse), flags before, between or after the positional
// arguments, which it returns in order.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// ParseScenarioArgs parses args where flags may come before or after the one SCENARIO
// argument (dpsim run SCENARIO --out DIR): it returns the scenario path, or a usage error
// naming what is missing or extra (example is shown in the "missing" message).
func ParseScenarioArgs(fs *flag.FlagSet, args []string, example string) (string, error) {
	pos, err := ParseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	switch len(pos) {
	case 0:
		return "", fmt.Errorf("%w: %w (a scenario YAML file, e.g. %s)", ErrUsage, ErrMissingScenario, example)
	case 1:
		return pos[0], nil
	}
	return "", UsageError("one SCENARIO expected, got %d arguments: %v", len(pos), pos)
}

// CheckScenarioFile returns a usage error (exit 2) when path is not a file that can be read: a
// scenario file that is not there is a mistake on the command line, not a failed run.
func CheckScenarioFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return UsageError("scenario %s: no such file", path)
	case err != nil:
		return UsageError("scenario %s: %v", path, err)
	case st.IsDir():
		return UsageError("scenario %s: is a directory, want a scenario YAML file", path)
	}
	return nil
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// IsTerminal reports whether f is an interactive terminal (progress bars and colour only then).
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// Logger returns the process logger: structured zerolog on stderr, human-readable on a
// terminal, JSON lines otherwise. level is a zerolog level name ("info", "debug", ...).
func Logger(stderr io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("%w: --log-level %q: allowed trace, debug, info, warn, error", ErrUsage, level)
	}
	var w io.Writer = stderr
	if f, ok := stderr.(*os.File); ok && IsTerminal(f) {
		w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}
