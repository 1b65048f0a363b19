package bus

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// authServer starts an embedded server with the users of a cloud-control and a consensus
// run's roles, and an all-seeing observer (the test's own eyes, not a dpsim role).
func authServer(t *testing.T, run string) (*Embedded, map[string]User) {
	t.Helper()
	s, err := wire.NewSubjects(run)
	require.NoError(t, err)
	users := map[string]User{}
	add := func(key string, role endpoint.Role, id, last int) {
		pub, sub := s.RolePermissions(role, id, last)
		u, err := NewUser(UserName(run, role, id), pub, sub)
		require.NoError(t, err)
		users[key] = u
	}
	add("plant", endpoint.Plant, 0, 0)
	add("cloud", endpoint.Cloud, 0, 0)
	add("agent", endpoint.Agent, 2, 3)
	add("eve", endpoint.Eavesdropper, 0, 0)
	pub, sub := s.LauncherPermissions()
	l, err := NewUser(run+"-launcher", pub, sub)
	require.NoError(t, err)
	users["launcher"] = l
	obs, err := NewUser("observer", []string{">"}, []string{">"})
	require.NoError(t, err)
	users["observer"] = obs
	var all []User
	for _, u := range users {
		all = append(all, u)
	}
	srv, err := StartEmbedded(EmbeddedOptions{Users: all})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv, users
}

// client connects as u and records the permission violations the server reports.
type client struct {
	nc   *nats.Conn
	mu   sync.Mutex
	errs []string
}

func connectAs(t *testing.T, url string, u User) *client {
	t.Helper()
	c := &client{}
	nc, err := nats.Connect(url, nats.UserInfo(u.Name, u.Password), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		c.errs = append(c.errs, err.Error())
		c.mu.Unlock()
	}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c.nc = nc
	return c
}

func (c *client) violations() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.errs, "\n")
}

// received subscribes subject as c and reports whether msg arrives after publish ran.
func received(t *testing.T, c *client, subject string, publish func()) bool {
	t.Helper()
	got := make(chan struct{}, 1)
	sub, err := c.nc.Subscribe(subject, func(*nats.Msg) {
		select {
		case got <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	defer sub.Unsubscribe()
	require.NoError(t, c.nc.Flush())
	publish()
	select {
	case <-got:
		return true
	case <-time.After(300 * time.Millisecond):
		return false
	}
}

// A client without credentials (or with a wrong password) is refused.
func TestUnauthenticatedRefused(t *testing.T) {
	srv, users := authServer(t, "sec1")
	_, err := nats.Connect(srv.URL())
	require.Error(t, err)
	require.Contains(t, strings.ToLower(err.Error()), "authorization")
	_, err = nats.Connect(srv.URL(), nats.UserInfo(users["plant"].Name, "wrong"))
	require.Error(t, err)
	_, err = Connect(srv.URL(), "anon", WithReconnect(0, time.Millisecond))
	require.Error(t, err)
}

// Each role may publish its own subjects only, and subscribe only what it needs; what is
// forbidden is refused by the server (a permissions violation) and never delivered.
func TestRolePermissions(t *testing.T) {
	const run = "sec2"
	srv, users := authServer(t, run)
	s, _ := wire.NewSubjects(run)
	obs := connectAs(t, srv.URL(), users["observer"])
	cases := []struct {
		user           string
		allowed        []string // publish: must arrive
		forbiddenPub   []string // publish: refused
		forbiddenSub   []string // subscribe: refused
		allowedSubject string   // subscribe: allowed
	}{
		{"plant", []string{s.PlantYhat(0), s.CtlReady(endpoint.Plant, 0)},
			[]string{s.CloudU(0), s.CtlStop(), s.CtlEpisode(), s.AgentY(1), s.CtlReady(endpoint.Cloud, 0), s.ChallengerX0()},
			[]string{s.All(), s.AgentY(0)}, s.CloudU(0)},
		{"cloud", []string{s.CloudU(0), s.CtlDone(endpoint.Cloud, 0)},
			[]string{s.PlantYhat(0), s.CtlStop(), s.CtlDone(endpoint.Plant, 0)},
			[]string{s.ChallengerX0(), s.All()}, s.PlantYhat(0)},
		{"agent", []string{s.AgentY(2), s.AgentY(3), s.HostY(2), s.CtlResult(endpoint.Agent, 2)},
			[]string{s.AgentY(1), s.AgentY(4), s.HostY(0), s.HostY(3), s.CtlEpisode(), s.CtlDone(endpoint.Agent, 3)},
			[]string{s.All(), s.CloudU(0)}, s.AllAgentY()},
		{"eve", []string{s.CtlReady(endpoint.Eavesdropper, 0)},
			[]string{s.PlantYhat(0), s.AgentY(0), s.CtlStop(), s.CtlEpisode(), s.CtlRejoin(endpoint.Eavesdropper, 0)},
			[]string{s.ChallengerX0(), wire.ChallengerPrefix + ">", ">"}, s.All()},
		{"launcher", []string{s.CtlEpisode(), s.CtlStop(), s.ChallengerX0()},
			[]string{s.PlantYhat(0), s.CtlDone(endpoint.Plant, 0)},
			[]string{wire.ChallengerPrefix + ">"}, s.All()},
	}
	for _, c := range cases {
		t.Run(c.user, func(t *testing.T) {
			cl := connectAs(t, srv.URL(), users[c.user])
			for _, subj := range c.allowed {
				require.True(t, received(t, obs, subj, func() { require.NoError(t, cl.nc.Publish(subj, []byte("ok"))); require.NoError(t, cl.nc.Flush()) }),
					"%s may publish %s", c.user, subj)
			}
			for _, subj := range c.forbiddenPub {
				require.False(t, received(t, obs, subj, func() { _ = cl.nc.Publish(subj, []byte("forged")); _ = cl.nc.Flush() }),
					"%s must not publish %s", c.user, subj)
				require.Eventually(t, func() bool { return strings.Contains(cl.violations(), `Publish to "`+subj+`"`) },
					2*time.Second, 10*time.Millisecond, "%s: no violation reported for %s: %s", c.user, subj, cl.violations())
			}
			for _, subj := range c.forbiddenSub {
				pub := obs
				require.False(t, received(t, cl, subj, func() {
					_ = pub.nc.Publish(strings.ReplaceAll(strings.ReplaceAll(subj, ">", "x"), "*", "x"), []byte("secret"))
					_ = pub.nc.Flush()
				}),
					"%s must not receive on %s", c.user, subj)
				require.Eventually(t, func() bool { return strings.Contains(cl.violations(), `Subscription to "`+subj+`"`) },
					2*time.Second, 10*time.Millisecond, "%s: no violation reported for subscribing %s: %s", c.user, subj, cl.violations())
			}
			probe := strings.ReplaceAll(c.allowedSubject, "*", "7")
			probe = strings.ReplaceAll(probe, ">", "plant.0.yhat")
			require.True(t, received(t, cl, c.allowedSubject, func() { require.NoError(t, obs.nc.Publish(probe, []byte("x"))); require.NoError(t, obs.nc.Flush()) }),
				"%s may subscribe %s", c.user, c.allowedSubject)
		})
	}
}

// The audit's secret never reaches the eavesdropper, even when it subscribes to everything:
// the challenger's line is outside dpsim.>, and the server refuses it '>'.
func TestChallengerSecretNotForEavesdropper(t *testing.T) {
	const run = "sec3"
	srv, users := authServer(t, run)
	s, _ := wire.NewSubjects(run)
	eve := connectAs(t, srv.URL(), users["eve"])
	plant := connectAs(t, srv.URL(), users["plant"])
	launcher := connectAs(t, srv.URL(), users["launcher"])
	var mu sync.Mutex
	var seen []string
	for _, f := range []string{">", s.All(), wire.ChallengerPrefix + ">"} {
		_, _ = eve.nc.Subscribe(f, func(m *nats.Msg) { mu.Lock(); seen = append(seen, m.Subject); mu.Unlock() })
	}
	_ = eve.nc.Flush()
	require.True(t, received(t, plant, s.ChallengerX0(), func() {
		require.NoError(t, launcher.nc.Publish(s.ChallengerX0(), []byte(`{"vals":[42]}`)))
		require.NoError(t, launcher.nc.Flush())
	}), "the plant gets the challenger's x0")
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, subj := range seen {
		require.False(t, strings.HasPrefix(subj, wire.ChallengerPrefix), "the eavesdropper saw %s", subj)
	}
}

// --tls auto: a server with a throwaway CA accepts a client that trusts the CA, and refuses
// one that does not (and a plaintext one).
func TestAutoTLS(t *testing.T) {
	files, err := AutoTLS(t.TempDir())
	require.NoError(t, err)
	srv, err := StartEmbedded(EmbeddedOptions{TLS: files})
	require.NoError(t, err)
	defer srv.Shutdown()
	c, err := Connect(srv.URL(), "tls-client", WithTLS(TLSFiles{CA: files.CA}))
	require.NoError(t, err)
	require.True(t, c.nc.TLSRequired())
	require.NoError(t, c.Flush(2*time.Second))
	c.Close()
	_, err = nats.Connect(srv.URL(), nats.Secure()) // the system's roots do not know the CA
	require.Error(t, err)
	_, err = nats.Connect(srv.URL(), nats.Timeout(time.Second))
	require.Error(t, err)
}

// Signed messages: a receiver that knows the senders' public keys accepts the signed
// messages of a sender and drops an unsigned one, one signed by another key, and one whose
// payload was altered - all counted as signature drops.
func TestSignedMessages(t *testing.T) {
	srv, err := StartEmbedded(EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	plant, err := NewSigningKey()
	require.NoError(t, err)
	other, err := NewSigningKey()
	require.NoError(t, err)
	v, err := NewVerifier(map[string]string{"plant.0": plant.Public})
	require.NoError(t, err)
	s, _ := wire.NewSubjects("sig1")
	rx, err := Connect(srv.URL(), "rx")
	require.NoError(t, err)
	defer rx.Close()
	var counters wire.Counters
	in := rx.NewInbox(InboxOptions{Counters: &counters, Verify: v})
	in.Expect(s.PlantYhat(0), wire.Expect{Run: "sig1", Steps: 10, Sender: "plant.0", Kind: endpoint.StreamYhat, Dim: 1})
	require.NoError(t, in.Subscribe())
	require.NoError(t, rx.Flush(time.Second))
	in.SetEpisode(0)

	good, err := Connect(srv.URL(), "good", WithSigner(plant.Seed))
	require.NoError(t, err)
	defer good.Close()
	forger, err := Connect(srv.URL(), "forger", WithSigner(other.Seed))
	require.NoError(t, err)
	defer forger.Close()
	plain, err := Connect(srv.URL(), "plain")
	require.NoError(t, err)
	defer plain.Close()
	msg := func(step int, v float64) *wire.Message {
		return &wire.Message{V: wire.Version, Run: "sig1", Episode: 0, Step: step, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: []float64{v}}
	}
	require.NoError(t, forger.Publish(s.PlantYhat(0), msg(1, 666)))
	require.NoError(t, forger.Flush(time.Second)) // one after the other: they come on different connections
	require.NoError(t, plain.Publish(s.PlantYhat(0), msg(2, 666)))
	// altered: a valid signature over other bytes
	data, _ := wire.Encode(nil, msg(3, 3), wire.JSON)
	sig, err := sign(good.signer, data)
	require.NoError(t, err)
	altered, _ := wire.Encode(nil, msg(3, 666), wire.JSON)
	require.NoError(t, plain.nc.PublishMsg(&nats.Msg{Subject: s.PlantYhat(0), Data: altered, Header: nats.Header{wire.HeaderSig: []string{sig}}}))
	require.NoError(t, plain.Flush(time.Second))
	require.NoError(t, good.Publish(s.PlantYhat(0), msg(4, 4)))
	for _, c := range []*Conn{forger, plain, good} {
		require.NoError(t, c.Flush(time.Second))
	}
	m, err := in.Next(time.Now().Add(2 * time.Second))
	require.NoError(t, err)
	require.Equal(t, 4, m.Step, "only the genuine, signed message gets through")
	snap := counters.Snapshot()
	require.Equal(t, uint64(3), snap.ByReason["signature"], "%+v", snap)
}

// BenchmarkSignVerify is the cost signing adds to one data message: the publisher's ed25519
// signature and the receiver's verification of a vehicle yhat message.
func BenchmarkSignVerify(b *testing.B) {
	k, err := NewSigningKey()
	require.NoError(b, err)
	kp, err := newSigner(k.Seed)
	require.NoError(b, err)
	v, err := NewVerifier(map[string]string{"plant.0": k.Public})
	require.NoError(b, err)
	data, _ := wire.Encode(nil, &wire.Message{V: wire.Version, Run: "r", Episode: 1, Step: 42, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: []float64{0.5}}, wire.JSON)
	b.Run("sign", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := sign(kp, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	sig, _ := sign(kp, data)
	b.Run("verify", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := v.Verify("plant.0", data, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A removed user's connection is closed and it cannot connect again; the others stay.
func TestRemoveUser(t *testing.T) {
	a, err := NewUser("a", []string{">"}, []string{">"})
	require.NoError(t, err)
	b, err := NewUser("b", []string{">"}, []string{">"})
	require.NoError(t, err)
	srv, err := StartEmbedded(EmbeddedOptions{Users: []User{a, b}})
	require.NoError(t, err)
	defer srv.Shutdown()
	closed := make(chan struct{})
	na, err := nats.Connect(srv.URL(), nats.UserInfo(a.Name, a.Password), nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	require.NoError(t, err)
	defer na.Close()
	nb, err := nats.Connect(srv.URL(), nats.UserInfo(b.Name, b.Password))
	require.NoError(t, err)
	defer nb.Close()
	require.NoError(t, srv.RemoveUser("a"))
	require.NoError(t, srv.RemoveUser("no-such-user"))
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the removed user's connection stayed open")
	}
	_, err = nats.Connect(srv.URL(), nats.UserInfo(a.Name, a.Password), nats.NoReconnect())
	require.Error(t, err)
	require.NoError(t, nb.Flush())
	require.True(t, nb.IsConnected())
}
