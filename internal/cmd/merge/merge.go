package merge

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
)

// Command is the table entry for `dpsim merge`.
var Command = cli.Command{Name: "merge", Summary: "fold the parts of dpsim audit --shard I/N into the unsharded audit's outputs", Run: Run}

const synopsis = `dpsim merge OUT PART... [--json] [--fail-on-violation] [--share-outputs] [--log-level L]`

const description = `Folds the N parts written by dpsim audit --shard I/N --out PART (I = 0..N-1: a Slurm job array,
a Kubernetes Indexed Job; examples/slurm, examples/kubernetes) into OUT: audit.json, report.md and
the trade-off figures (-pNN per sweep point, composition.png for --episodes-per-trial-sweep) that
dpsim audit --out OUT would have written without --shard, and prints its table (or --json) and
verdict. The result is the unsharded audit's bit for bit, elapsed time aside (the longest shard's):
trial e is the same trial in whichever shard it was played, and the analysis depends only on the
trials (docs/math.md section 6).

The parts are checked first: each PART/shard.json must be of the same scenario (its SHA-256: the
parts carry the scenario file, which the merge rebuilds the games from), seed, N and settings
(engine, trials, adjacency, confidence, selection, episodes per trial, precision), and every index
0..N-1 must be given exactly once; a part that does not fit is named with the field that differs,
a missing or duplicated shard with its index. Each part's trials must be its slice, finite, of
the expected size.

Exit status 0 whatever the verdict (3 with --fail-on-violation and a violation), 1 when a part is
missing, duplicated or does not fit, 2 on a usage error.`

// Run executes `dpsim merge` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("merge", synopsis, description, stderr)
	var mo auditrun.MergeOptions
	fs.BoolVar(&mo.JSON, "json", false, "print dpsim audit --json's object on stdout instead of the table")
	fs.BoolVar(&mo.FailOnViolation, "fail-on-violation", false, "exit with status 3 when the verdict is violation (default: exit 0 whatever the verdict)")
	fs.BoolVar(&mo.ShareOutputs, "share-outputs", false, "write audit.json and report.md (they hold the seed and the audited pair) readable by all (0644) instead of by you alone (0600)")
	level := fs.String("log-level", "info", "zerolog level of the log on stderr: trace, debug, info, warn, error")
	var pos []string // OUT PART..., with flags before or after them
	for {
		if err := cli.Parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) < 2 {
		return cli.UsageError("want OUT and at least one PART (the --out of each dpsim audit --shard I/N), got %d arguments", len(pos))
	}
	log, err := cli.Logger(stderr, *level)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mo.Out = pos[0]
	parts, err := auditrun.ReadShards(pos[1:])
	if err != nil {
		return err
	}
	a, err := auditrun.NewMerged(parts, mo, log)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(mo.Out, 0o755); err != nil {
		return cli.UsageError("OUT %s: %v", mo.Out, err)
	}
	reports, violations, err := a.PlayAll(ctx, auditrun.ShardsPlayer{Parts: parts}, auditrun.Observer{Done: a.WriteReport})
	if err != nil {
		return err
	}
	return a.Finish(stdout, reports, violations)
}
