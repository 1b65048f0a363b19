package run

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/runner"
)

// Command is the table entry for `dpsim run`.
var Command = cli.Command{Name: "run", Summary: "run a scenario: every role its own process over NATS (or --engine fast)", Run: Run}

// Run executes `dpsim run` with args (without the command name): the run itself is the
// library's (internal/runner); this prints its summary, as a table or as JSON (--json).
func Run(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout, stderr)
	if err != nil {
		return err
	}
	log, err := cli.Logger(stderr, o.LogLevel)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, runErr := runner.Execute(ctx, o, stderr, log)
	if out == nil || !out.Written {
		return runErr
	}
	if o.JSON {
		if err := cli.WriteJSON(stdout, out.Summary); err != nil {
			return errors.Join(runErr, err)
		}
		return runErr
	}
	printTable(stdout, out)
	return runErr
}
