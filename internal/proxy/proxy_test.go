package proxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// A client behind the proxy reaches the real server, and a round trip through it takes at
// least the latency twice (request and reply each cross the proxy); without toxics, it is fast.
func TestProxyAddsLatency(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	rtt := func(spec scenario.Proxy) time.Duration {
		x, err := Start("test", srv.URL(), spec)
		require.NoError(t, err)
		defer x.Close()
		require.NotEqual(t, srv.URL(), x.URL())
		c, err := bus.Connect(x.URL(), "behind-proxy")
		require.NoError(t, err)
		defer c.Close()
		best := time.Hour
		for i := 0; i < 3; i++ {
			start := time.Now()
			require.NoError(t, c.Flush(5*time.Second)) // PING/PONG through the proxy
			best = min(best, time.Since(start))
		}
		return best
	}
	fast := rtt(scenario.Proxy{})
	slow := rtt(scenario.Proxy{Latency: 40 * time.Millisecond})
	require.GreaterOrEqual(t, slow, 80*time.Millisecond, "latency both ways")
	require.Less(t, fast, 40*time.Millisecond)
	t.Logf("round trip: %v without toxics, %v with 40 ms each way", fast, slow)
}

func TestHostPort(t *testing.T) {
	hp, err := hostPort("nats://user:pw@127.0.0.1:4222")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:4222", hp)
	_, err = hostPort("nats://nowhere")
	require.Error(t, err)
}
