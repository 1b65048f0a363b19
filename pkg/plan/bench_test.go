package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// consensusYAML is a consensus scenario of n agents on a random 4-regular graph (weight 0.2,
// every weight sum 0.8) drawn with seed.
func consensusYAML(n, seed int) []byte {
	x0 := make([]string, n)
	for i := range x0 {
		x0[i] = fmt.Sprint(i)
	}
	return []byte(fmt.Sprintf(`name: large
kind: consensus
steps: 30
episodes: 10
seed: 1
graph:
  name: random-regular
  n: %d
  degree: 4
  weight: 0.2
  seed: %d
x0: [%s]
privacy:
  mechanism: gaussian
  epsilon: 1
  delta: 0.01
  mu: 1
  noise: structured
`, n, seed, strings.Join(x0, ", ")))
}

// BenchmarkParsePlan1000 parses a 1,000-agent consensus scenario and plans it: what a command
// does before it runs. Each iteration draws another graph (its seed), so no computation is
// served from a previous one.
func BenchmarkParsePlan1000(b *testing.B) {
	files := make([][]byte, b.N)
	for i := range files {
		files[i] = consensusYAML(1000, i+1)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := scenario.Parse(files[i], "large.yaml")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := New(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
