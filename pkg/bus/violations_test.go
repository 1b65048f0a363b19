package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// The embedded server's own word on a refused publish or subscription is kept, by user,
// operation and subject, and survives a restart; the observer account is refused both.
func TestEmbeddedKeepsViolations(t *testing.T) {
	u, err := NewUser("run1-cloud-0", []string{"dpsim.run1.cloud.0.u"}, []string{"dpsim.run1.plant.0.yhat"})
	require.NoError(t, err)
	obs, err := ObserverUser()
	require.NoError(t, err)
	srv, err := StartEmbedded(EmbeddedOptions{Users: []User{u, obs}})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	refuse := func(user User, do func(nc *nats.Conn)) {
		nc, err := nats.Connect(srv.URL(), nats.UserInfo(user.Name, user.Password), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		require.NoError(t, err)
		defer nc.Close()
		do(nc)
		require.NoError(t, nc.Flush())
	}
	refuse(u, func(nc *nats.Conn) {
		_ = nc.Publish("dpsim.run1.plant.0.yhat", []byte("x"))
		_ = nc.Publish("dpsim.run1.plant.0.yhat", []byte("x"))
		_ = nc.Publish("dpsim.run1.cloud.0.u", []byte("x")) // its own: allowed
	})
	require.NoError(t, srv.Restart(10*time.Millisecond))
	refuse(obs, func(nc *nats.Conn) {
		_, _ = nc.Subscribe("dpsim-challenger.>", func(*nats.Msg) {})
		_ = nc.Publish("dpsim.run1.cloud.0.u", []byte("x"))
	})
	require.Eventually(t, func() bool { return len(srv.Violations()) == 3 }, 5*time.Second, 10*time.Millisecond, "%+v", srv.Violations())
	require.Equal(t, []Violation{
		{User: "observer", Op: "publish", Subject: "dpsim.run1.cloud.0.u", Count: 1},
		{User: "observer", Op: "subscribe", Subject: "dpsim-challenger.>", Count: 1},
		{User: "run1-cloud-0", Op: "publish", Subject: "dpsim.run1.plant.0.yhat", Count: 2},
	}, srv.Violations())
}
