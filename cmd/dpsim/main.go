// Command dpsim runs differentially private control and consensus experiments over NATS,
// calibrates noise for a privacy budget, audits guarantees empirically and hosts the offline
// modules (DP vector sums, DP John ellipsoid). Run `dpsim help` for the subcommands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/dpsim/dpsim/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and maps its error to an exit code: 0 success or help,
// 2 usage error, an error's own ExitCode() when it has one (audit --fail-on-violation: 3),
// 1 any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 && args[0] == "help" {
			// `dpsim help calibrate` is `dpsim calibrate --help`.
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout) // asked for: print where it can be piped
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dpsim: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.Run(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, cli.ErrUsage):
		fmt.Fprintf(stderr, "dpsim %s: %v\n", cmd.Name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "dpsim %s: %v\n", cmd.Name, err)
		// A command may choose its own status (audit --fail-on-violation exits 3).
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			return coded.ExitCode()
		}
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "dpsim - differentially private control over a real message bus")
	fmt.Fprintln(w, "\nUsage: dpsim <command> [flags]   (dpsim <command> --help explains every flag)")
	fmt.Fprintln(w, "\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, cmds[n].Summary)
	}
}
