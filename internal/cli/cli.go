// Package cli holds what every dpsim subcommand shares: the command table entry, flag-set
// construction with a usage text that explains every flag, JSON output and logging set-up.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
// description and every flag with its default: to stdout when it was asked for (-h, --help:
// it can be piped into a pager), to stderr after a parse error, following the error message.
func NewCommandFlagSet(name, synopsis, description string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package writes a parse error to Output just before it calls Usage; -h calls
	// Usage without one. errMark tells the two apart.
	mark := &errMark{w: stderr}
	fs.SetOutput(mark)
	fs.Usage = func() {
		w := stdout
		if mark.wrote {
			w = stderr
		}
		mark.wrote = false
		fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, strings.TrimSpace(description))
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(mark)
	}
	return fs
}

// errMark forwards to w and records that something (a parse error) was written.
type errMark struct {
	w     io.Writer
	wrote bool
}

func (e *errMark) Write(p []byte) (int, error) {
	e.wrote = true
	return e.w.Write(p)
}

// Parse parses args; -h/--help prints usage and returns flag.ErrHelp, which callers pass up
// unchanged (dpsim exits 0 for it). Other parse errors are usage errors.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

// ParseScenarioArgs parses args where flags may come before or after the one SCENARIO
// argument (dpsim run SCENARIO --out DIR): it returns the scenario path, or a usage error
// naming what is missing or extra (example is shown in the "missing" message).
func ParseScenarioArgs(fs *flag.FlagSet, args []string, example string) (string, error) {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(pos) {
	case 0:
		return "", UsageError("missing SCENARIO (a scenario YAML file, e.g. %s)", example)
	case 1:
		return pos[0], nil
	}
	return "", UsageError("one SCENARIO expected, got %d arguments: %v", len(pos), pos)
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
