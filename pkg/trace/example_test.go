package trace_test

import (
	"bytes"
	"fmt"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Records are written as JSON lines and read back bit for bit.
func ExampleWrite() {
	y := 1.5
	recs := []trace.AgentRecord{{Episode: 0, Step: 3, Agent: 4, X: 2, Y: &y}, {Episode: 0, Step: 4, Agent: 4, X: 2.25}}
	var buf bytes.Buffer
	if err := trace.Write(&buf, recs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(buf.String())
	back, err := trace.Read[trace.AgentRecord](&buf)
	fmt.Println(len(back), *back[0].Y, back[1].Y == nil, err)
	// Output:
	// {"episode":0,"step":3,"agent":4,"x":2,"y":1.5}
	// {"episode":0,"step":4,"agent":4,"x":2.25}
	// 2 1.5 true <nil>
}

// The join puts each role's pieces of a step together and names the pieces no role supplied:
// here a horizon of one step, where the cloud's u(0) never came.
func ExampleControlJoin() {
	j, err := trace.NewControlJoin(1, dynamics.ConstantReference{V: []float64{1, 0}}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	j.Begin(0)
	for _, p := range []struct {
		from endpoint.Role
		rec  trace.ControlRecord
	}{
		{endpoint.Plant, trace.ControlRecord{Step: 0, X: []float64{0, 0}, Yhat: []float64{0.1}}},
		{endpoint.Eavesdropper, trace.ControlRecord{Step: 0, EveX0: []float64{0.2, 0}}},
		{endpoint.Plant, trace.ControlRecord{Step: 1, X: []float64{0.5, 0.1}}},
	} {
		if err := j.Add(p.from, &p.rec); err != nil {
			fmt.Println(err)
			return
		}
	}
	err = j.Emit(func(r *trace.ControlRecord, missing []trace.Missing) error {
		fmt.Println(r.Step, r.X, r.Ref, r.Yhat, r.U, r.EveX0, missing)
		return nil
	})
	fmt.Println(err)
	// Output:
	// 0 [0 0] [1 0] [0.1] [] [0.2 0] [episode 0 step 0: cloud]
	// 1 [0.5 0.1] [1 0] [] [] [] []
	// <nil>
}
