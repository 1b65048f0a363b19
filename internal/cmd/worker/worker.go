package workercmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/bus"
)

// Command is the table entry for `dpsim worker`.
var Command = cli.Command{Name: "worker", Summary: "play chunks of episodes for a coordinator on another host (audit/run --dispatch)", Run: Run}

const synopsis = `dpsim worker --server URL --creds FILE [--threads N] [--tls-ca FILE] [--name NAME]
                    [--connect-retry D] [--log-level L]`

const description = `Joins a coordinator - dpsim audit --dispatch or dpsim run --engine fast --dispatch, on this
or another host - and plays chunks of its episodes with the in-process fast engine. The
coordinator prints the exact command to run (its server's address and the first credentials
file it wrote, OUT/workers/w1.creds; copy it to this host, mode 0600). Each worker needs its own
file - w2.creds for the second, and so on (--worker-creds N of the coordinator) - because each
file is one account that may speak only under its own name: the coordinator's outputs name the
worker by it (w1, w2, ...; --name only labels the log), and a worker caught answering a chunk
wrongly has that account revoked. With an external server (--nats-url) the coordinator writes
one shared file, OUT/worker.creds, and a worker names itself with --name.

The job (scenario, point, seed, options) comes over the bus from the coordinator, never on the
command line; a worker learns it all, the seed included. The results do not depend on which
worker played what: they equal the coordinator's in-process engine bit for bit, and the
coordinator checks a random share of the chunks (--verify-share) by a second computation.

The worker serves every job of one coordinator and exits 0 when the coordinator is done, or on
SIGTERM / Ctrl-C (a chunk it was playing is re-issued to another worker); 1 when it cannot reach
the server or loses it for good (a lost server is retried for --connect-retry: a durable farm's
coordinator started again on the same address is rejoined, and its work queue served again); 2
on a usage error. Progress is logged on stderr.`

// Options are the parsed flags of `dpsim worker`.
type Options struct {
	Server       string
	Creds        string
	Threads      int
	TLSCA        string
	Name         string
	ConnectRetry time.Duration
	LogLevel     string
}

func parseOptions(args []string, stderr io.Writer) (*Options, error) {
	fs := cli.NewFlagSet("worker", synopsis, description, stderr)
	o := &Options{}
	fs.StringVar(&o.Server, "server", "", "the coordinator's NATS server URL, as it printed it (required)")
	fs.StringVar(&o.Creds, "creds", "", "this worker's credentials file the coordinator wrote, e.g. OUT/workers/w1.creds - one file per worker (mode 0600; required)")
	fs.IntVar(&o.Threads, "threads", 0, "goroutines playing a chunk (0 = every core); the results do not depend on it")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate (PEM) to trust when the server requires TLS")
	fs.StringVar(&o.Name, "name", "", "a label of this worker in its log (default HOST.PID); the coordinator names it by its credentials' account, or by this name with an external server's shared account")
	fs.DurationVar(&o.ConnectRetry, "connect-retry", 30*time.Second, "how long to retry a server that cannot be reached yet, or was lost (a durable farm's coordinator started again on the same address is rejoined)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "zerolog level of the log on stderr: trace, debug, info, warn, error")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, cli.UsageError("unexpected arguments %v", fs.Args())
	case o.Server == "":
		return nil, cli.UsageError("--server is required (the coordinator prints it)")
	case o.Creds == "":
		return nil, cli.UsageError("--creds is required (the file the coordinator wrote)")
	case o.Threads < 0:
		return nil, cli.UsageError("--threads %d: want >= 0", o.Threads)
	case o.ConnectRetry < 0:
		return nil, cli.UsageError("--connect-retry %v: want >= 0", o.ConnectRetry)
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = host + "." + strconv.Itoa(os.Getpid())
	}
	return o, nil
}

// Run executes `dpsim worker` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	log, err := cli.Logger(stderr, o.LogLevel)
	if err != nil {
		return err
	}
	creds, err := bus.ReadCredentials(o.Creds)
	if err != nil {
		return fmt.Errorf("--creds: %w", err)
	}
	id := farm.IdentityOf(creds.User, o.Name)
	log = log.With().Str("worker", id).Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A server lost is retried as long as one not reached yet: a durable farm's coordinator
	// started again on the same address is rejoined.
	const wait = 250 * time.Millisecond
	conn, err := bus.ConnectRetry(ctx, o.Server, "dpsim-worker-"+o.Name, o.ConnectRetry, nil,
		bus.WithUser(creds.User, creds.Password), bus.WithTLS(bus.TLSFiles{CA: o.TLSCA}),
		bus.WithReconnect(max(1, int(o.ConnectRetry/wait)), wait))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer conn.Close()
	log.Info().Str("server", o.Server).Str("name", o.Name).Int("threads", o.Threads).Msg("waiting for chunks")
	st, err := farm.Serve(ctx, conn, farm.WorkerOptions{ID: id, Name: o.Name, Threads: o.Threads, Kinds: kinds.All(), Log: log})
	log.Info().Int("chunks", st.Chunks).Int("episodes", st.Episodes).Int("refused", st.Refused).Msg("worker done")
	return err
}
