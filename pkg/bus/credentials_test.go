package bus

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCredentialsFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "attach")
	path := filepath.Join(dir, "plant-0.env")
	want := Credentials{User: "r1.plant.0", Password: "s3cret=with=equals", SignSeed: "SUAXYZ", X0Seed: "SXAXYZ", X0Sender: "XAXYZ"}
	require.NoError(t, WriteCredentials(path, want))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	got, err := ReadCredentials(path)
	require.NoError(t, err)
	require.Equal(t, want, got)

	write := func(body string, mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), "c.env")
		require.NoError(t, os.WriteFile(p, []byte(body), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	for _, c := range []struct {
		body string
		mode os.FileMode
		want string
	}{
		{"DPSIM_NATS_USER=u\nDPSIM_NATS_PASSWORD=p\n", 0o644, "lets others read it"},
		{"DPSIM_NATS_USER=u\nPASSWORD=hunter2\n", 0o600, `line 2: unknown key "PASSWORD"`},
		{"DPSIM_NATS_USER u\n", 0o600, "line 1: want KEY=VALUE"},
		{"DPSIM_NATS_PASSWORD=p\n", 0o600, "without DPSIM_NATS_USER"},
	} {
		if c.mode&0o077 != 0 && runtime.GOOS == "windows" {
			continue
		}
		_, err := ReadCredentials(write(c.body, c.mode))
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "hunter2", "a value is never echoed")
	}
	_, err = ReadCredentials(filepath.Join(t.TempDir(), "none.env"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A server that comes up after the client started: ConnectRetry gets it (start order does
// not matter), and without retry the same address fails at once.
func TestConnectRetryWaitsForTheServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	url := "nats://127.0.0.1:" + strconv.Itoa(port)

	_, err = ConnectRetry(context.Background(), url, "t", 0, nil)
	require.Error(t, err)

	go func() {
		time.Sleep(time.Second)
		srv, err := StartEmbedded(EmbeddedOptions{Port: port})
		if err == nil {
			t.Cleanup(srv.Shutdown)
		}
	}()
	attempts := 0
	c, err := ConnectRetry(context.Background(), url, "t", 20*time.Second, func(int, error) { attempts++ })
	require.NoError(t, err)
	defer c.Close()
	require.GreaterOrEqual(t, attempts, 1)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ConnectRetry(ctx, "nats://127.0.0.1:1", "t", time.Minute, nil)
	require.ErrorIs(t, err, context.Canceled)
}
