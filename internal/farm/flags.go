package farm

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Flags are the dispatch flags `dpsim audit` and `dpsim run` share (one wording, one check).
type Flags struct {
	Dispatch bool
	Spawn    int
	Listen   string
}

// Define defines --dispatch, --spawn-workers and --worker-listen on fs.
func (f *Flags) Define(fs *flag.FlagSet) {
	fs.BoolVar(&f.Dispatch, "dispatch", false, "fast engine: hand chunks of episodes to dpsim worker processes on this or other hosts through NATS (the command to start one is printed; its credentials file is written under --out, mode 0600); the results are the in-process engine's, bit for bit, for any number of workers; a worker that dies has its chunks re-issued (counted in the output's \"dispatch\")")
	fs.IntVar(&f.Spawn, "spawn-workers", 0, "with --dispatch (implied): start N local dpsim worker processes, each with GOMAXPROCS/N threads (0: none, only workers started elsewhere)")
	fs.StringVar(&f.Listen, "worker-listen", "", "with --dispatch: the embedded NATS server's address host:port that workers on other hosts reach, e.g. 0.0.0.0:4222 (plain TCP: a trusted network); default 127.0.0.1 on a random free port")
}

// Enabled reports whether the episodes are dispatched (--dispatch or --spawn-workers).
func (f *Flags) Enabled() bool { return f.Dispatch || f.Spawn > 0 }

// Check checks the flags against the engine (dispatch needs the fast engine; engineFlag names
// the flag that chose it in the message).
func (f *Flags) Check(fast bool, engineFlag string) error {
	switch {
	case f.Spawn < 0:
		return cli.UsageError("--spawn-workers %d: want >= 0", f.Spawn)
	case !f.Enabled() && f.Listen != "":
		return cli.UsageError("--worker-listen is the address of the dispatch's server: give --dispatch too")
	case f.Enabled() && !fast:
		return cli.UsageError("--dispatch hands the fast engine's episodes to workers: give %s", engineFlag)
	}
	if f.Listen != "" {
		if _, _, err := net.SplitHostPort(f.Listen); err != nil {
			return cli.UsageError("--worker-listen %q: %v", f.Listen, err)
		}
	}
	return nil
}

// Config is the coordinator's configuration for the scenario at path (points: as the command
// expanded it, checked against the file read again, which the workers receive), the external
// server natsURL ("": embedded), the credentials under dir.
func (f *Flags) Config(path string, points []*scenario.Scenario, natsURL, dir string, stderr io.Writer, log zerolog.Logger) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("--dispatch: %w", err)
	}
	s, err := scenario.Parse(data, path)
	if err != nil {
		return Config{}, fmt.Errorf("--dispatch: %w", err)
	}
	again := s.Expand()
	if len(again) != len(points) {
		return Config{}, fmt.Errorf("--dispatch: scenario %s changed while the command started", path)
	}
	for k := range points {
		if again[k].Name != points[k].Name {
			return Config{}, fmt.Errorf("--dispatch: scenario %s changed while the command started", path)
		}
	}
	return Config{Scenario: data, Source: path, URL: natsURL, Listen: f.Listen, Dir: dir, Spawn: f.Spawn,
		Stderr: stderr, Log: log}, nil
}
