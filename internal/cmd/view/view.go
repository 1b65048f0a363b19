package view

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/live"
)

// Command is the table entry for `dpsim view`.
var Command = cli.Command{Name: "view", Summary: "show a finished run (its --out directory) in the browser", Run: Run}

const synopsis = `dpsim view OUT [--addr HOST:PORT [--public]] [--for D]`

const description = `Serves the finished run in OUT (the --out directory of dpsim run) in the page of dpsim run --ui
and prints its URL on stderr: the traced episodes (trace.jsonl, trace-pNN.jsonl) with a slider
that moves a cursor through the steps and shows the values at each, every figure of report.md
as an interactive plot (zoom by dragging, double-click to reset) drawn from its data
(figures/NAME.json), the fault timeline (and faults.applied.yaml when the run wrote one) and
the summary: status, problems, metrics, links and processes. It serves until interrupted
(Ctrl-C), or for --for D.

The URL carries a random token (http://HOST:PORT/?token=...) that every request needs, as
dpsim run --ui's: the page keeps it as a cookie, other clients send it as ?token= or
Authorization: Bearer. A request whose Host is not the server's address, or that comes from
another site's page, is refused. An address other than loopback needs --public.

Exit status: 0 when it ran until interrupted or for D; 1 when OUT is not a dpsim run or a file
of it cannot be read (the error names the file and what is wrong); 2 for a usage error (OUT
missing or not a directory, a bad flag).`

// DefaultAddr is where the view is served unless --addr says: loopback, a free port.
const DefaultAddr = "127.0.0.1:0"

// Run executes `dpsim view` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("view", synopsis, description, stderr)
	var (
		addr   = fs.String("addr", DefaultAddr, "serve on HOST:PORT (port 0: a free one; an empty host is 127.0.0.1; an address other than loopback, e.g. 0.0.0.0, shows the plant's true state to the network: it needs --public)")
		public = fs.Bool("public", false, "allow an --addr other than loopback (0.0.0.0, ::, a LAN address or name): the run's true state is then served to the network, over plain HTTP, to whoever learns the URL with its token (a warning is printed)")
		dur    = fs.Duration("for", 0, "stop serving after this long (0: until interrupted), e.g. for scripts and tests")
	)
	pos, err := cli.ParseInterspersed(fs, args) // OUT, with flags before or after it
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return cli.UsageError("missing OUT: the --out directory of a dpsim run")
	case len(pos) > 1:
		return cli.UsageError("one OUT expected, got %d arguments: %v", len(pos), pos)
	case *dur < 0:
		return cli.UsageError("--for %v: must be >= 0", *dur)
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return cli.UsageError("--addr %s: want HOST:PORT: %v", *addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	warn, err := live.PublicAddr(net.JoinHostPort(host, port), "--public", *public)
	if err != nil {
		return cli.UsageError("--addr %s: %v", *addr, err)
	}
	out := pos[0]
	if st, err := os.Stat(out); err != nil || !st.IsDir() { // a mistake on the command line, as a missing scenario file
		if err == nil {
			return cli.UsageError("%s is not a directory (want the --out directory of a dpsim run)", out)
		}
		return cli.UsageError("%s: no such directory (want the --out directory of a dpsim run)", out)
	}
	v, err := live.LoadView(out)
	if err != nil {
		return err
	}
	srv, err := live.ServeView(net.JoinHostPort(host, port), v)
	if err != nil {
		return cli.UsageError("--addr %s: %v", *addr, err)
	}
	defer srv.Close()
	if warn != "" {
		fmt.Fprintf(stderr, "dpsim view: %s\n", warn)
	}
	st := v.State()
	fmt.Fprintf(stderr, "dpsim view: %s (%s, %s, %d point(s), %d figure(s)) at %s\n", out, st.Scenario, st.Status, len(st.Points), len(st.Figures), srv.TokenURL())
	for _, n := range st.Notes {
		fmt.Fprintf(stderr, "dpsim view: note: %s\n", n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	<-ctx.Done()
	return nil
}
