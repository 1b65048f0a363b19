package bus

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestURLLists(t *testing.T) {
	cases := []struct{ in, clean, user, pass, redacted string }{
		{"nats://u:p@a:1", "nats://a:1", "u", "p", "nats://REDACTED@a:1"},
		{"nats://a:1,nats://b:2", "nats://a:1,nats://b:2", "", "", "nats://a:1,nats://b:2"},
		{"nats://a:1,nats://u:p@b:2,nats://u:p@c:3", "nats://a:1,nats://b:2,nats://c:3", "u", "p", "nats://a:1,nats://REDACTED@b:2,nats://REDACTED@c:3"},
		{"tok@a:1, nats://b:2", "a:1,nats://b:2", "tok", "", "REDACTED@a:1,nats://b:2"},
	}
	for _, c := range cases {
		clean, user, pass := SplitURL(c.in)
		require.Equal(t, c.clean, clean, c.in)
		require.Equal(t, c.user, user, c.in)
		require.Equal(t, c.pass, pass, c.in)
		require.Equal(t, c.redacted, RedactURL(c.in), c.in)
		require.NotContains(t, RedactURL(c.in), ":p@")
	}
	require.Equal(t, "b,c,a", RotateURLs("a,b,c", 1))
	require.Equal(t, "c,a,b", RotateURLs("a,b,c", 5))
	require.Equal(t, "a,b,c", RotateURLs("a,b,c", 0))
	require.Equal(t, "x", RotateURLs("x", 3))
}

// A three-member cluster carries messages between clients of different members; when the
// member of one client dies, the client reconnects to the next in its list, its
// subscription follows, and traffic resumes.
func TestClusterCarriesTrafficAndSurvivesAMember(t *testing.T) {
	c, err := StartCluster(3, EmbeddedOptions{})
	require.NoError(t, err)
	defer c.Shutdown()
	require.Len(t, strings.Split(c.URLs(), ","), 3)
	for _, m := range c.Members {
		require.NotEmpty(t, m.RouteURL())
	}
	// the subscriber prefers member 1, the publisher member 2
	sub, err := Connect(RotateURLs(c.URLs(), 1), "sub", WithReconnect(100, 50*time.Millisecond))
	require.NoError(t, err)
	defer sub.Close()
	pub, err := Connect(RotateURLs(c.URLs(), 2), "pub")
	require.NoError(t, err)
	defer pub.Close()
	require.Equal(t, c.Members[1].URL(), sub.nc.ConnectedUrl())
	require.Equal(t, c.Members[2].URL(), pub.nc.ConnectedUrl())

	var got atomic.Int64
	_, err = sub.SubscribeDocuments("t.x", nil, func(string, []byte) { got.Add(1) })
	require.NoError(t, err)
	require.NoError(t, sub.Flush(time.Second))
	send := func() {
		require.Eventually(t, func() bool {
			before := got.Load()
			require.NoError(t, pub.PublishRaw("t.x", []byte("{}")))
			require.NoError(t, pub.Flush(time.Second))
			time.Sleep(20 * time.Millisecond)
			return got.Load() > before
		}, 10*time.Second, 50*time.Millisecond)
	}
	send()
	c.Members[1].Shutdown() // the subscriber's member dies for good
	require.Eventually(t, func() bool { return sub.nc.IsConnected() && sub.nc.ConnectedUrl() != c.Members[1].URL() },
		10*time.Second, 20*time.Millisecond)
	send()
	require.Equal(t, c.Members[2].URL(), sub.nc.ConnectedUrl(), "the next member in its list")
}

func TestClusterSize(t *testing.T) {
	_, err := StartCluster(1, EmbeddedOptions{})
	require.Error(t, err)
}
