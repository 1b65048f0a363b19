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

// NewFlagSet returns a ContinueOnError flag set whose usage prints synopsis, description and
// every flag with its default to stderr.
func NewFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
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
