package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/internal/shard"
)

// New returns the table entry for `dpsim merge`; parseRun is dpsim run's parser, which a run
// part's command line is parsed again with (the binary's table passes it: commands import
// libraries, not each other).
func New(parseRun func(args []string) (*runner.Options, error)) cli.Command {
	return cli.Command{Name: "merge", Summary: "fold the parts of dpsim audit|run --shard I/N into the unsharded outputs",
		Run: func(args []string, stdout, stderr io.Writer) error { return Run(args, stdout, stderr, parseRun) }}
}

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

The parts of dpsim run --shard I/N --out PART (chunk i of every point's episodes played by shard
i mod N, as the workers of --dispatch play them; with the NATS engine by the shard's own server and
processes) are merged by running the parts' command line again with --out OUT, folding their
chunks in order (the coordinator's check and fold) instead of playing them: OUT's summary.json,
report.md, traces and figures are the unsharded run's, bit for bit but the times and the run id;
a NATS run lists every shard's processes, problems and timeline named by shard (their files stay in
the parts). Parts of the fast and the NATS engines are not merged together. The scenario file must
be where the shards read it, with the same bytes (its SHA-256 is checked); the run's flags
(--share-outputs, --trace-episodes, ...) are the shards' command line's, and --json here prints
its summary.json.

Exit status 0 whatever the verdict (3 with --fail-on-violation and a violation), 1 when a part is
missing, duplicated or does not fit, 2 on a usage error.`

// Run executes `dpsim merge` with args (without the command name); parseRun parses a run
// part's command line.
func Run(args []string, stdout, stderr io.Writer, parseRun func([]string) (*runner.Options, error)) error {
	fs := cli.NewFlagSet("merge", synopsis, description, stderr)
	var mo auditrun.MergeOptions
	fs.BoolVar(&mo.JSON, "json", false, "print dpsim audit --json's object (a run: summary.json) on stdout instead of the table")
	fs.BoolVar(&mo.FailOnViolation, "fail-on-violation", false, "exit with status 3 when the verdict is violation (default: exit 0 whatever the verdict)")
	fs.BoolVar(&mo.ShareOutputs, "share-outputs", false, "write audit.json and report.md (they hold the seed and the audited pair) readable by all (0644) instead of by you alone (0600)")
	level := fs.String("log-level", "info", "zerolog level of the log on stderr: trace, debug, info, warn, error")
	pos, err := cli.ParseInterspersed(fs, args) // OUT PART..., with flags before or after them
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return cli.UsageError("want OUT and at least one PART (the --out of each dpsim audit|run --shard I/N), got %d arguments", len(pos))
	}
	log, err := cli.Logger(stderr, *level)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mo.Out = pos[0]
	kind, err := shard.PeekKind(pos[1])
	if err != nil {
		return err
	}
	if kind == shard.KindRun {
		return mergeRun(ctx, mo, pos[1:], stdout, stderr, parseRun, log)
	}
	return mergeAudit(ctx, mo, pos[1:], stdout, log)
}

// mergeAudit folds an audit's parts (auditrun.ReadShards, NewMerged, ShardsPlayer) and prints
// its result as dpsim audit does (Audit.Finish).
func mergeAudit(ctx context.Context, mo auditrun.MergeOptions, dirs []string, stdout io.Writer, log zerolog.Logger) error {
	parts, err := auditrun.ReadShards(dirs)
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
	reports, violations, err := a.PlayAll(ctx, &auditrun.ShardsPlayer{Parts: parts}, auditrun.Observer{Done: a.WriteReport})
	if err != nil {
		return err
	}
	return a.Finish(stdout, reports, violations)
}

// mergeRun folds a run's parts (runner.ReadRunShards, MergeRunShards) and prints summary.json
// (--json) or where the outputs are.
func mergeRun(ctx context.Context, mo auditrun.MergeOptions, dirs []string, stdout, stderr io.Writer, parseRun func([]string) (*runner.Options, error), log zerolog.Logger) error {
	parts, err := runner.ReadRunShards(dirs)
	if err != nil {
		return err
	}
	out, runErr := runner.MergeRunShards(ctx, parts, mo.Out, parseRun, stderr, log)
	if out == nil || !out.Written {
		return runErr
	}
	if mo.JSON {
		return errors.Join(runErr, cli.WriteJSON(stdout, out.Summary))
	}
	fmt.Fprintf(stdout, "merged %d parts of %s into %s: status %s (summary.json, report.md)\n", len(parts), out.Summary.Scenario, out.Out, out.Summary.Status)
	return runErr
}
