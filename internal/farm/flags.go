package farm

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Flags are the dispatch flags `dpsim audit` and `dpsim run` share (one wording, one check).
type Flags struct {
	Dispatch     bool
	Spawn        int
	Listen       string
	WorkerCreds  int
	VerifyShare  float64
	ChunkTimeout time.Duration
	Durable      bool
}

// Define defines --dispatch, --spawn-workers, --worker-listen, --worker-creds, --verify-share,
// --chunk-timeout and --dispatch-durable on fs.
func (f *Flags) Define(fs *flag.FlagSet) {
	fs.BoolVar(&f.Dispatch, "dispatch", false, "fast engine: hand chunks of episodes to dpsim worker processes on this or other hosts through NATS (the command to start one is printed; one credentials file per worker is written under --out/workers, mode 0600: see --worker-creds); the results are the in-process engine's, bit for bit, for any number of workers; a worker that dies or hoards has its chunks re-issued, one caught answering wrongly (--verify-share) is quarantined and its chunks played again (all counted and named in the output's \"dispatch\")")
	fs.IntVar(&f.WorkerCreds, "worker-creds", DefaultWorkerCreds, "with --dispatch: write N credential files --out/workers/w1.creds .. wN.creds, one per worker started on another host (each its own account, named in the outputs and revoked if caught lying); spawned workers get their own besides (0: none)")
	fs.Float64Var(&f.VerifyShare, "verify-share", DefaultVerifyShare, "with --dispatch: the share of chunks, drawn secretly by the coordinator, played a second time by another worker (or the coordinator) and compared bit for bit; a worker whose result differs from the coordinator's is quarantined and all its chunks played again. A worker forging k chunks escapes with probability (1-P)^k; 1 checks every chunk (twice the work), 0 none")
	fs.DurationVar(&f.ChunkTimeout, "chunk-timeout", 0, "with --dispatch: how long a worker may hold a chunk, heartbeats or not, before it is re-issued to another (0: ten times the median chunk time observed, at least 12 s; 60 s before any chunk came back)")
	fs.IntVar(&f.Spawn, "spawn-workers", 0, "with --dispatch (implied): start N local dpsim worker processes, each with GOMAXPROCS/N threads (0: none, only workers started elsewhere)")
	fs.BoolVar(&f.Durable, "dispatch-durable", false, "with --dispatch: a durable farm that survives a killed coordinator: the embedded NATS server keeps a JetStream store in --out/"+JournalDir+" (mode 0700; needs --out, not --nats-url) and the chunks and the workers' answers travel through JetStream work queues there (pulled by the workers, delivered again after a worker's silence), and every chunk result the coordinator accepted is journaled there before it counts; the same command run again with the same --out takes the chunks and answers still queued, plays only the chunks not journaled (the output's dispatch.restored_chunks counts the others) and its result is the uninterrupted one, bit for bit. A different scenario, seed, options or trials is refused. Spawned workers are started again; a worker started elsewhere keeps its credential file and, with the same --worker-listen address, rejoins by itself")
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
	case f.WorkerCreds < 0 || f.WorkerCreds > 1000:
		return cli.UsageError("--worker-creds %d: want 0..1000", f.WorkerCreds)
	case !(f.VerifyShare >= 0 && f.VerifyShare <= 1):
		return cli.UsageError("--verify-share %g: want 0..1", f.VerifyShare)
	case f.ChunkTimeout < 0:
		return cli.UsageError("--chunk-timeout %v: want >= 0", f.ChunkTimeout)
	case f.Durable && !f.Enabled():
		return cli.UsageError("--dispatch-durable journals the dispatch's chunks: give --dispatch too")
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
	if f.Durable && dir == "" {
		return Config{}, cli.UsageError("--dispatch-durable keeps its journal in --out/%s: give --out", JournalDir)
	}
	if f.Durable && natsURL != "" {
		return Config{}, cli.UsageError("--dispatch-durable keeps its journal in the embedded server: not with --nats-url")
	}
	cfg := Config{Scenario: data, Source: path, URL: natsURL, Listen: f.Listen, Dir: dir, Spawn: f.Spawn,
		WorkerCreds: f.WorkerCreds, VerifyShare: f.VerifyShare, ChunkTimeout: f.ChunkTimeout, Stderr: stderr, Log: log}
	if f.Durable {
		cfg.Durable = filepath.Join(dir, JournalDir)
	}
	if f.WorkerCreds == 0 {
		cfg.WorkerCreds = NoWorkerCreds
	}
	if f.VerifyShare == 0 {
		cfg.VerifyShare = -1 // none
	}
	return cfg, nil
}
