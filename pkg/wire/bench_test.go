package wire

import (
	"fmt"
	"testing"
	"time"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// BenchmarkCodec: encode + decode of one message (into reused buffers), JSON vs binary,
// for the 1-value control messages and a 16-value vector; bytes/msg is the wire size.
func BenchmarkCodec(b *testing.B) {
	for _, dim := range []int{1, 16} {
		m := &Message{V: Version, Run: "cloud-vehicle-20260101-3f9a", Episode: 12, Step: 345, Sender: "plant.0",
			SentUnixNano: time.Now().UnixNano(), Kind: endpoint.StreamYhat, Values: make([]float64, dim)}
		for i := range m.Values {
			m.Values[i] = 0.1234567890123*float64(i+1) - 3.3
		}
		for _, enc := range []Encoding{JSON, Binary} {
			b.Run(fmt.Sprintf("%s/dim=%d", enc, dim), func(b *testing.B) {
				buf := make([]byte, 0, 1024)
				var out Message
				b.ReportAllocs()
				for b.Loop() {
					var err error
					buf, err = Encode(buf[:0], m, enc)
					if err != nil {
						b.Fatal(err)
					}
					if err := Decode(buf, &out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(buf)), "bytes/msg")
			})
		}
	}
}
