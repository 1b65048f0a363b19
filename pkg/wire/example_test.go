package wire_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/wire"
)

// The JSON wire form of a message.
func ExampleEncodeJSON() {
	m := &wire.Message{V: wire.Version, Run: "r1", Episode: 0, Step: 3, Sender: "plant.0",
		SentUnixNano: 1700000000123456789, Kind: "yhat", Values: []float64{0.5, -1.25}}
	b, _ := wire.EncodeJSON(nil, m)
	fmt.Println(string(b))
	// Output:
	// {"v":1,"run":"r1","ep":0,"step":3,"from":"plant.0","sent":1700000000123456789,"kind":"yhat","vals":[0.5,-1.25]}
}
