package launch

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

func vehiclePlan(t *testing.T) *plan.Plan {
	t.Helper()
	s, err := scenario.Load("../../scenarios/cloud-vehicle.yaml")
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	return p
}

// An external server: the credentials of its URL become every process's and the launcher's
// account, and leave the URL the processes and outputs see.
func TestServerExternal(t *testing.T) {
	p := vehiclePlan(t)
	tls := bus.TLSFiles{CA: "ca.pem"}
	srv, err := StartServer(ServerConfig{URL: "nats://alice:secret@example.org:4222", Plans: []*plan.Plan{p, p}, RunIDs: []string{"r-p0", "r-p1"},
		AgentsPerProcess: 1, TLS: tls, ConnectRetry: 3 * time.Second})
	require.NoError(t, err)
	defer srv.Close()
	require.Nil(t, srv.Embedded)
	require.Nil(t, srv.Cluster)
	require.NotContains(t, srv.URL, "secret")
	require.Equal(t, "external", srv.TLSMode)
	for k := range 2 {
		var cfg SessionConfig
		srv.Configure(&cfg, k)
		require.Equal(t, srv.URL, cfg.URL)
		require.Equal(t, tls, cfg.TLS)
		require.Equal(t, 3*time.Second, cfg.ConnectRetry)
		require.NotNil(t, cfg.Launcher)
		require.Equal(t, "alice", cfg.Launcher.Name)
		require.Len(t, cfg.Users, len(ProcessKeys(p, 1)))
		for _, key := range ProcessKeys(p, 1) {
			require.Equal(t, bus.User{Name: "alice", Password: "secret"}, cfg.Users[key], key)
		}
	}
	plain, err := StartServer(ServerConfig{URL: "nats://example.org:4222", Plans: []*plan.Plan{p}, RunIDs: []string{"r"}})
	require.NoError(t, err)
	var cfg SessionConfig
	plain.Configure(&cfg, 0)
	require.Nil(t, cfg.Users)
	require.Nil(t, cfg.Launcher)
	require.Equal(t, "", plain.TLSMode)
}

// The embedded server admits each point's processes and launcher with their own accounts; it
// is never retried (it is up), and --tls auto's CA is gone once it is closed.
func TestServerEmbedded(t *testing.T) {
	p := vehiclePlan(t)
	srv, err := StartServer(ServerConfig{Plans: []*plan.Plan{p}, RunIDs: []string{"rt"}, AgentsPerProcess: 1, AutoTLS: true, ConnectRetry: time.Minute})
	require.NoError(t, err)
	require.NotNil(t, srv.Embedded)
	require.Nil(t, srv.Cluster)
	require.Equal(t, "auto", srv.TLSMode)
	require.FileExists(t, srv.TLS.CA)
	var cfg SessionConfig
	srv.Configure(&cfg, 0)
	require.Equal(t, srv.Embedded, cfg.Server)
	require.Zero(t, cfg.ConnectRetry)
	require.NotNil(t, cfg.Launcher)
	require.Len(t, cfg.Users, len(ProcessKeys(p, 1)))
	for key, u := range cfg.Users {
		require.True(t, strings.HasPrefix(u.Name, "rt"), "%s: %s", key, u.Name)
	}
	c, err := bus.Connect(srv.URL, "test", bus.WithTLS(srv.TLS))
	if err == nil {
		c.Close()
	}
	require.Error(t, err, "no account: refused")
	ca := srv.TLS.CA
	srv.Close()
	_, err = os.Stat(ca)
	require.True(t, os.IsNotExist(err), "the throwaway CA is removed")
}

func TestServerCluster(t *testing.T) {
	p := vehiclePlan(t)
	srv, err := StartServer(ServerConfig{Plans: []*plan.Plan{p}, RunIDs: []string{"rc"}, AgentsPerProcess: 1, Cluster: 2})
	require.NoError(t, err)
	defer srv.Close()
	require.NotNil(t, srv.Cluster)
	require.Len(t, srv.Cluster.Members, 2)
	require.Equal(t, srv.Cluster.Members[0], srv.Embedded)
	require.Equal(t, srv.Cluster.URLs(), srv.URL)
	var cfg SessionConfig
	srv.Configure(&cfg, 0)
	require.Equal(t, srv.Cluster, cfg.Cluster)
}
