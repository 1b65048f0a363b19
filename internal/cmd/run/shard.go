package run

import (
	"flag"
	"io"

	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/internal/shard"
)

// defineShard defines --shard I/N (runner's shard.go plays it).
func defineShard(fs *flag.FlagSet, o *runner.Options) {
	fs.Func("shard", "`I/N`: play only the chunks i mod N == I of every point's episodes (as workers of --dispatch play them; the same chunks with either engine: over NATS with this shard's own server and processes) and write their results, with a manifest, into --out PART instead of the run's outputs; dpsim merge OUT PART... folds the N parts into the unsharded run's outputs, bit for bit but times and run id, a NATS run's processes listed by shard (cluster nodes: examples/slurm, examples/kubernetes). Needs a fixed seed; not with --resume, --dispatch, --ui, --attach or --record", func(v string) (err error) {
		o.Shard, err = shard.Parse(v)
		return err
	})
}

// ParseArgs parses a `dpsim run` command line (without the command name) as dpsim run does, its
// help discarded: dpsim merge parses a run part's command line with it.
func ParseArgs(args []string) (*runner.Options, error) {
	return parseOptions(args, io.Discard, io.Discard)
}
