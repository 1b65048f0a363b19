package bus

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// EmbeddedOptions.Monitor serves nats-server's monitoring on a free port, and a restarted
// server serves it at the same address.
func TestEmbeddedMonitor(t *testing.T) {
	e, err := StartEmbedded(EmbeddedOptions{Monitor: ":0"})
	require.NoError(t, err)
	defer e.Shutdown()
	url := e.MonitorURL()
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, url)
	get := func(path string) string {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Contains(t, get("/healthz"), `"ok"`)
	require.Contains(t, get("/varz"), `"server_name"`)
	require.NoError(t, e.Restart(10*time.Millisecond))
	require.Equal(t, url, e.MonitorURL())
	require.Contains(t, get("/healthz"), `"ok"`)

	plain, err := StartEmbedded(EmbeddedOptions{})
	require.NoError(t, err)
	defer plain.Shutdown()
	require.Empty(t, plain.MonitorURL())
}
