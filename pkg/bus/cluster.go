package bus

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterOptions makes an embedded server a member of a NATS cluster: it listens for routes
// from the other members on Host:Port and connects to Routes. NATS forwards every message to
// the members whose clients have interest, so processes connected to different members talk
// as if they shared one server, and a client whose member dies reconnects to another.
type ClusterOptions struct {
	Name   string   // the cluster's name, the same on every member
	Port   int      // route port; 0: a random free one
	Routes []string // route URLs of other members, e.g. "nats-route://127.0.0.1:6222"
}

// Cluster is a set of embedded servers joined by routes on loopback (StartCluster).
type Cluster struct {
	Members []*Embedded
}

// StartCluster starts n embedded servers (n >= 2) with the options of base (users, TLS),
// each on a random client port and a random route port; members 1..n-1 route to member 0,
// which tells them of each other (a full mesh). It returns once every member has a route to
// every other.
func StartCluster(n int, base EmbeddedOptions) (*Cluster, error) {
	if n < 2 || n > 16 {
		return nil, fmt.Errorf("bus: a cluster of %d servers: want 2..16", n)
	}
	name := base.ServerName
	if name == "" {
		name = "dpsim"
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		o := base
		o.Port = 0
		o.ServerName = fmt.Sprintf("%s-%d", name, i)
		o.Cluster = &ClusterOptions{Name: name + "-cluster"}
		if i > 0 {
			o.Monitor = "" // the first member's monitoring only: one address
		}
		if i > 0 {
			o.Cluster.Routes = []string{c.Members[0].RouteURL()}
		}
		m, err := StartEmbedded(o)
		if err != nil {
			c.Shutdown()
			return nil, fmt.Errorf("bus: cluster member %d: %w", i, err)
		}
		c.Members = append(c.Members, m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := true
		for _, m := range c.Members {
			if m.server().NumRoutes() < n-1 {
				ready = false
			}
		}
		if ready {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.Shutdown()
			return nil, errors.New("bus: cluster members not all routed to each other within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URLs lists the members' client URLs, comma-separated (what nats.go and --nats-url take).
func (c *Cluster) URLs() string {
	var u []string
	for _, m := range c.Members {
		u = append(u, m.URL())
	}
	return strings.Join(u, ",")
}

// Shutdown stops every member.
func (c *Cluster) Shutdown() {
	for _, m := range c.Members {
		m.Shutdown()
	}
}

// RouteURL is the URL other members route to (empty when the server is not clustered).
func (e *Embedded) RouteURL() string {
	if e.routePort == 0 {
		return ""
	}
	return fmt.Sprintf("nats-route://%s", net.JoinHostPort(e.opts.Host, fmt.Sprint(e.routePort)))
}

// RotateURLs returns the comma-separated server list urls starting at its (i mod n)-th entry:
// process i of a run gets rotate(urls, i), connects to its own server first (Connect does not
// shuffle the list) and to the others, in order, when that one fails. A single URL is
// returned as it is.
func RotateURLs(urls string, i int) string {
	l := strings.Split(urls, ",")
	if len(l) < 2 {
		return urls
	}
	k := ((i % len(l)) + len(l)) % len(l)
	return strings.Join(append(append([]string{}, l[k:]...), l[:k]...), ",")
}

// ClientNames lists the names of the clients connected to the server now (Connect's name
// argument), e.g. to know which processes a member's restart disconnects.
func (e *Embedded) ClientNames() map[string]bool {
	out := map[string]bool{}
	cz, err := e.server().Connz(&server.ConnzOptions{Limit: 1 << 16})
	if err != nil {
		return out
	}
	for _, c := range cz.Conns {
		out[c.Name] = true
	}
	return out
}

// ClientPending returns, by client name, the bytes the server holds for each connected client
// that it has not written to it yet (a client that stopped reading - stalled, stopped, slow -
// has them pile up until the server drops it as a slow consumer); clients with none are left out.
func (e *Embedded) ClientPending() map[string]int {
	out := map[string]int{}
	cz, err := e.server().Connz(&server.ConnzOptions{Limit: 1 << 16})
	if err != nil {
		return out
	}
	for _, c := range cz.Conns {
		if c.Pending > 0 {
			out[c.Name] += c.Pending
		}
	}
	return out
}

// SlowConsumers returns how many times the server dropped messages for a client that did not
// read them fast enough (its slow consumer count since it started).
func (e *Embedded) SlowConsumers() int64 {
	v, err := e.server().Varz(nil)
	if err != nil {
		return 0
	}
	return v.SlowConsumers
}
