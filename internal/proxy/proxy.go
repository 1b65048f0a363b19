package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// Proxy is a running proxy in front of the server.
type Proxy struct {
	p   *toxiproxy.Proxy
	url string
}

// Start starts a proxy named name on a free loopback port that forwards to the NATS server at
// serverURL (nats://host:port) with the toxics of spec.
func Start(name, serverURL string, spec scenario.Proxy) (*Proxy, error) {
	upstream, err := hostPort(serverURL)
	if err != nil {
		return nil, err
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: start: %w", name, err)
	}
	for _, dir := range []string{"upstream", "downstream"} {
		if spec.Latency > 0 || spec.Jitter > 0 {
			if err := addToxic(p, "latency", dir, map[string]int64{"latency": spec.Latency.Milliseconds(), "jitter": spec.Jitter.Milliseconds()}); err != nil {
				p.Stop()
				return nil, fmt.Errorf("proxy %s: %w", name, err)
			}
		}
		if spec.Bandwidth > 0 {
			if err := addToxic(p, "bandwidth", dir, map[string]int64{"rate": spec.Bandwidth}); err != nil {
				p.Stop()
				return nil, fmt.Errorf("proxy %s: %w", name, err)
			}
		}
	}
	return &Proxy{p: p, url: "nats://" + p.Listen}, nil
}

// addToxic adds one toxic (toxiproxy's JSON form) on the stream dir (upstream: client to
// server; downstream: server to client).
func addToxic(p *toxiproxy.Proxy, kind, dir string, attrs map[string]int64) error {
	body, err := json.Marshal(map[string]any{"name": kind + "_" + dir, "type": kind, "stream": dir, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("toxic %s (%s): %w", kind, dir, err)
	}
	return nil
}

// URL is the proxy's client URL: a process connects here instead of to the server.
func (x *Proxy) URL() string { return x.url }

// Reset closes every connection through the proxy (the client sees its connection reset and
// reconnects) and listens again on the same address.
func (x *Proxy) Reset() error {
	x.p.Stop()
	if err := x.p.Start(); err != nil {
		return fmt.Errorf("proxy %s: restart after the reset: %w", x.p.Name, err)
	}
	return nil
}

// Close stops the proxy and closes its connections.
func (x *Proxy) Close() { x.p.Stop() }

// hostPort returns host:port of a nats:// URL (one server).
func hostPort(u string) (string, error) {
	s := strings.TrimPrefix(u, "nats://")
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("proxy: server URL %q: %w", u, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("proxy: server URL %q: port %q", u, port)
	}
	return net.JoinHostPort(host, port), nil
}
