package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/stretchr/testify/require"
)

// Blocks of agents give the same numbers as one core per agent, bit for bit, whatever the
// block size (one block of everyone included), and count one message per block per step.
func TestHostsBitIdentical(t *testing.T) {
	const n, steps, runs = 20, 40, 3
	p := planOf(t, largeConsensus(t, n, steps))
	want, wantTr := runFast(t, p, 7, Options{Runs: runs, KeepTraces: true})
	for _, size := range []int{3, 7, 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			hs := sim.NewBlocks(p, size)
			require.True(t, hs.Batched())
			res, tr, err := Run(context.Background(), p, sim.NewSeeds(7), Options{Runs: runs, KeepTraces: true, AgentsPerBlock: size})
			require.NoError(t, err)
			links := res.Links
			require.Equal(t, want, withoutLinks(res))
			require.Equal(t, wantTr, tr)

			blocks := hs.Endpoints()
			require.Len(t, blocks, (n+size-1)/size)
			require.NotEmpty(t, links)
			for _, l := range links {
				require.True(t, strings.HasPrefix(l.Link, "host."), l.Link)
				require.EqualValues(t, runs*steps, l.Sent, l.Link)
				require.EqualValues(t, runs*steps, l.Delivered, l.Link)
			}
			if size == n { // one block: nobody but the eavesdropper hears it
				require.Len(t, links, 1)
				require.Equal(t, "host.0->eavesdropper.0", links[0].Link)
			}
		})
	}
}
