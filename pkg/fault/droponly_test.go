package fault

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// A link whose one rule only drops takes the one-draw path, and its fates are Decide's,
// episode after episode (the keys are re-derived), in any order of steps; any other rule
// (more than a drop, a window, a second rule) keeps the general path.
func TestDropOnlyLinkDecidesAsDecide(t *testing.T) {
	cases := []struct {
		name     string
		rules    []scenario.LinkFault
		dropOnly bool
	}{
		{"drop", []scenario.LinkFault{{Drop: 0.1}}, true},
		{"certain drop", []scenario.LinkFault{{Drop: 1}}, true},
		{"drop and duplicate", []scenario.LinkFault{{Drop: 0.1, Duplicate: 0.2}}, false},
		{"drop and reorder", []scenario.LinkFault{{Drop: 0.1, Reorder: 0.2}}, false},
		{"drop and delay", []scenario.LinkFault{{Drop: 0.1, Delay: 1}}, false},
		{"drop and jitter", []scenario.LinkFault{{Drop: 0.1, Jitter: 0.5}}, false},
		{"drop in a window", []scenario.LinkFault{{Drop: 0.5, Window: &scenario.StepWindow{From: 3, To: 9}}}, false},
		{"two drop rules", []scenario.LinkFault{{Drop: 0.1}, {Drop: 0.2}}, false},
		{"delay only", []scenario.LinkFault{{Delay: 2}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast := inj(t, c.rules...).Link("agent.0", "agent.1", "agent.0.y")
			ref := inj(t, c.rules...).Link("agent.0", "agent.1", "agent.0.y")
			require.Equal(t, c.dropOnly, fast.dropOnly)
			if !fast.dropOnly {
				return
			}
			drops := 0
			for _, ep := range []int{0, 1, 1, 7, 0} {
				for _, step := range []int{0, 5, 1, 99, 2, 3, 64, 63} {
					want := ref.Decide(ep, step)
					require.Equal(t, Fate{Drop: want.Drop}, want, "a drop-only rule decides nothing else")
					got := fast.dropAt(ep, step)
					require.Equal(t, want.Drop, got, "episode %d step %d", ep, step)
					if got {
						drops++
					}
				}
			}
			require.Positive(t, drops)
		})
	}
}
