package scenario_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/scenario"
)

func Example() {
	doc := `
name: tiny-vehicle
kind: cloud-control
steps: 100
episodes: 10
seed: 7
plant:
  A: [[1, 0.1], [0, 1]]
  B: [0.005, 0.1]     # a flat B is one column
  C: [1, 0]           # a flat C is one row
controller:
  K: [3.4240, 4.3095] # a flat K is one row
  L: [0.8266, 0.6973] # a flat L is one column
  reference: tanh
privacy:
  epsilon: 1
  delta: 0.01
  model: {A: 1, C: 1}
sweep: {param: epsilon, values: [0.1, 1]}
`
	s, err := scenario.Parse([]byte(doc), "tiny-vehicle.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	p := s.Privacy
	fmt.Printf("%s: %s, T=%d, B is %dx%d, %s noise, %s calibration, mu=%g\n",
		s.Name, s.Kind, s.Steps, s.Plant.B.Rows(), s.Plant.B.Cols(), p.Noise, p.Calibration, p.Mu)
	for _, point := range s.Expand() {
		fmt.Println(point.Name, point.Privacy.Epsilon)
	}

	// Every problem is reported, each with its field, value, rule and line.
	_, err = scenario.Parse([]byte("kind: consensus\nsteps: 0\nepisodes: 1\nprivacy: {epsilon: -1}\n"), "bad.yaml")
	fmt.Println(err)
	// Output:
	// tiny-vehicle: cloud-control, T=100, B is 2x1, structured noise, tight calibration, mu=1
	// tiny-vehicle@epsilon=0.1 0.1
	// tiny-vehicle@epsilon=1 1
	// scenario bad.yaml: graph: missing: kind consensus requires graph: a named graph {name: paper10, ...} or an edge list {n, edges} (line 1)
	// scenario bad.yaml: x0: missing: kind consensus requires x0, one initial value per node (line 1)
	// scenario bad.yaml: steps: 0 must be >= 1 (the horizon T) (line 2)
	// scenario bad.yaml: privacy.epsilon: -1 must be > 0 (line 4)
	// scenario bad.yaml: privacy.delta: missing: mechanism gaussian requires delta in (0, 1) (line 4)
}

func ExampleLoad() {
	s, err := scenario.Load("../../scenarios/consensus-gaussian.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := s.Graph()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d agents, %d edges, x0 = %v\n", s.Name, g.N, len(g.Edges), s.X0)
	fmt.Printf("eps=%g delta=%g %s\n", s.Privacy.Epsilon, s.Privacy.Delta, s.Privacy.Mechanism)
	// Output:
	// consensus-gaussian: 10 agents, 14 edges, x0 = [10 100 20 -30 -20 -60 70 0 80 -20]
	// eps=1 delta=0.01 gaussian
}
