package auditcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
)

// executeShard plays --shard I/N's slice of every point and writes the part into --out
// (auditrun.WriteShard); --json prints its manifest without the scenario's YAML.
func executeShard(ctx context.Context, a *auditrun.Audit, stdout, stderr io.Writer) error {
	m, err := a.WriteShard(ctx, auditrun.NewShardPlayer(a, stderr))
	if err != nil {
		return err
	}
	if a.Opts.JSON {
		c := *m
		c.YAML = nil
		return cli.WriteJSON(stdout, &c)
	}
	for _, p := range m.Points {
		fmt.Fprintf(stdout, "shard %s of %s: trials %d..%d of %d (%s)\n", m.Shard, p.Name, p.Lo, p.Hi-1, 2*m.Settings.Trials, m.Settings.Engine)
	}
	fmt.Fprintf(stdout, "part written to %s: merge the %d parts with dpsim merge OUT PART...\n", a.Opts.Out, m.Shard.N)
	return nil
}
