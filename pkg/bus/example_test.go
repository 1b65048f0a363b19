package bus_test

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// A plant publishes its noisy output for step 0 on an embedded server; the cloud receives
// and validates it.
func Example() {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{}) // random loopback port
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()

	subj, _ := wire.NewSubjects("demo")
	plant, _ := bus.Connect(srv.URL(), "dpsim-plant-0")
	cloud, _ := bus.Connect(srv.URL(), "dpsim-cloud-0")
	defer plant.Close()
	defer cloud.Close()

	yhat, _ := cloud.Receive(subj.PlantYhat(0), bus.ReceiverOptions{
		Expect:       wire.Expect{Run: "demo", Dim: 2, Steps: 100, Episode: 0},
		MatchSubject: true,
	})
	_ = cloud.Flush(time.Second) // the subscription is active on the server

	pub := plant.Publisher(subj.PlantYhat(0), "demo", endpoint.Endpoint{Role: endpoint.Plant, ID: 0}.String(), endpoint.StreamYhat)
	_ = plant.PublishRaw(subj.PlantYhat(0), []byte("not a message")) // counted and dropped
	_ = pub.Send(0, 0, []float64{0.5, -1.25})

	m, err := yhat.Next(time.Now().Add(5 * time.Second)) // the garbage is dropped on the way
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(subj.PlantYhat(0), m.Values)
	fmt.Printf("%+v\n", yhat.Counters().Snapshot())
	_ = cloud.Drain(time.Second)
	_ = plant.Drain(time.Second)
	// Output:
	// dpsim.demo.plant.0.yhat [0.5 -1.25]
	// {Received:2 Accepted:1 Dropped:1 ByReason:map[decode:1] BySender:map[plant.0:map[decode:1]]}
}
