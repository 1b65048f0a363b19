package bus

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EnvURL is the environment variable naming an external NATS server.
const EnvURL = "NATS_URL"

// ResolveURL picks the NATS server: the flag value if set, else $NATS_URL, else "" which
// means "start an embedded server".
func ResolveURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(EnvURL)
}

// EmbeddedOptions configures an in-process nats-server.
type EmbeddedOptions struct {
	Host         string        // listen address; default "127.0.0.1" (loopback only)
	Port         int           // 0: a random free port; > 0: that port (e.g. to restart a server where clients reconnect)
	JetStream    bool          // off by default: dpsim needs core NATS only
	StoreDir     string        // JetStream storage; default a temporary directory chosen by the server
	ServerName   string        // default "dpsim-embedded"
	ReadyTimeout time.Duration // how long to wait for the server to accept clients; default 5 s
	MaxPayload   int32         // default the server's (1 MB)
	// Users, when set, are the only clients the server accepts, each with its subject
	// permissions (see User); a client without credentials is refused.
	Users []User
	// TLS, when its Cert and Key are set, makes the server require TLS (see AutoTLS).
	TLS TLSFiles
	// Cluster, when set, makes the server a cluster member (see StartCluster).
	Cluster *ClusterOptions
	// Monitor, when set, is the address host:port (port 0: a free one) of the server's own
	// HTTP monitoring endpoint (/varz, /connz, /healthz, ...: nats-server's monitoring).
	Monitor string

	violations *violationLog // kept across Restart
}

// Embedded is a running in-process NATS server.
type Embedded struct {
	mu        sync.Mutex
	srv       *server.Server
	opts      EmbeddedOptions
	url       string
	port      int
	routePort int    // 0: not clustered
	monitor   string // the monitoring endpoint's host:port ("": none)
}

// StartEmbedded starts a nats-server in this process and waits until it accepts clients.
// The server does not log (it keeps the permission violations it reports: Violations) and
// does not install signal handlers.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("bus: embedded server port %d outside 0..65535", opts.Port)
	}
	sopts, err := opts.serverOptions(opts.Port)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("bus: configure embedded NATS server on %s:%d: %w", opts.Host, opts.Port, err)
	}
	if opts.violations == nil {
		opts.violations = &violationLog{}
	}
	srv.SetLoggerV2(opts.violations, false, false, false) // permission violations only: Violations
	srv.Start()
	if !srv.ReadyForConnections(opts.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		what := "port in use?"
		if opts.Monitor != "" {
			what = "port or monitoring port " + opts.Monitor + " in use?"
		}
		return nil, fmt.Errorf("bus: embedded NATS server on %s:%d not ready within %v (%s)",
			opts.Host, opts.Port, opts.ReadyTimeout, what)
	}
	e := &Embedded{srv: srv, opts: opts, url: srv.ClientURL()}
	if opts.Monitor != "" {
		if a := srv.MonitorAddr(); a != nil {
			e.monitor = a.String()
			e.opts.Monitor = e.monitor // a restart serves it where it was
		}
	}
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		e.port = addr.Port
	}
	if e.port == 0 {
		srv.Shutdown()
		return nil, errors.New("bus: embedded NATS server has no TCP listen address")
	}
	if opts.Cluster != nil {
		if addr := srv.ClusterAddr(); addr != nil {
			e.routePort = addr.Port
		}
		if e.routePort == 0 {
			srv.Shutdown()
			return nil, errors.New("bus: embedded NATS cluster member has no route listen address")
		}
	}
	return e, nil
}

// serverOptions are nats-server's options for opts, listening on port (0: a random free one).
func (opts *EmbeddedOptions) serverOptions(port int) (*server.Options, error) {
	if port == 0 {
		port = server.RANDOM_PORT // nats-server treats 0 as its default port 4222
	}
	if opts.ServerName == "" {
		opts.ServerName = "dpsim-embedded"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 5 * time.Second
	}
	sopts := &server.Options{
		ServerName: opts.ServerName,
		Host:       opts.Host,
		Port:       port,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  opts.JetStream,
		StoreDir:   opts.StoreDir,
		MaxPayload: opts.MaxPayload,
	}
	for _, u := range opts.Users {
		sopts.Users = append(sopts.Users, u.serverUser())
	}
	if opts.Monitor != "" {
		host, port, err := monitorAddr(opts.Monitor)
		if err != nil {
			return nil, err
		}
		sopts.HTTPHost, sopts.HTTPPort = host, port
	}
	if opts.TLS.Cert != "" {
		tc, err := serverTLS(opts.TLS)
		if err != nil {
			return nil, err
		}
		sopts.TLSConfig, sopts.TLS = tc, true
		sopts.TLSTimeout = 2
	}
	if cl := opts.Cluster; cl != nil {
		rp := cl.Port
		if rp == 0 {
			rp = server.RANDOM_PORT
		}
		sopts.Cluster = server.ClusterOpts{Name: cl.Name, Host: opts.Host, Port: rp}
		if len(cl.Routes) > 0 {
			sopts.Routes = server.RoutesFromStr(strings.Join(cl.Routes, ","))
		}
	}
	return sopts, nil
}

// URL is the client URL, e.g. "nats://127.0.0.1:41234".
func (e *Embedded) URL() string { return e.url }

// Port is the TCP port the server listens on.
func (e *Embedded) Port() int { return e.port }

// MonitorURL is the base URL of the server's HTTP monitoring endpoint, e.g.
// "http://127.0.0.1:8222" ("" without EmbeddedOptions.Monitor): /varz, /connz, /healthz.
func (e *Embedded) MonitorURL() string {
	if e.monitor == "" {
		return ""
	}
	return "http://" + e.monitor
}

// monitorAddr parses EmbeddedOptions.Monitor into nats-server's HTTPHost and HTTPPort (a free
// port for 0, which nats-server would read as "off").
func monitorAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bus: monitoring address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bus: monitoring address %q: port %q: want 0..65535", addr, p)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// server returns the underlying server (this package's cluster checks and tests; the NATS
// types stay inside pkg/bus).
func (e *Embedded) server() *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

// Shutdown stops the server, disconnecting every client, and waits until it is down.
// Calling it more than once is harmless.
func (e *Embedded) Shutdown() {
	srv := e.server()
	srv.Shutdown()
	srv.WaitForShutdown()
}

// Restart stops the server (every client is disconnected and what it had in flight is lost),
// keeps it down for down, and starts a new one on the same port: clients that reconnect (the
// default of Connect) resume with their subscriptions. The port may be taken meanwhile by
// another program; Restart then fails and the server stays down.
func (e *Embedded) Restart(down time.Duration) error {
	e.Shutdown()
	time.Sleep(down)
	opts := e.opts
	opts.Port = e.port
	if opts.Cluster != nil { // the same route port: the other members dial it again
		cl := *opts.Cluster
		cl.Port = e.routePort
		opts.Cluster = &cl
	}
	var last error
	for try := 0; try < 20; try++ { // the old listener may linger a moment
		n, err := StartEmbedded(opts)
		if err == nil {
			e.mu.Lock()
			e.srv = n.srv
			e.mu.Unlock()
			return nil
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("bus: restart the embedded server on port %d: %w", e.port, last)
}

// RemoveUser revokes the account name at the running server: the server reloads its
// configuration without it and closes every connection that used it, and refuses it from then
// on (a farm's coordinator revokes a worker it caught lying). Removing an unknown name is not an
// error. Not for a cluster member (its routes would have to be reloaded with it).
func (e *Embedded) RemoveUser(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.Cluster != nil {
		return fmt.Errorf("bus: remove user %s: the server is a cluster member", name)
	}
	keep := e.opts.Users[:0:0]
	for _, u := range e.opts.Users {
		if u.Name != name {
			keep = append(keep, u)
		}
	}
	if len(keep) == len(e.opts.Users) {
		return nil
	}
	opts := e.opts
	opts.Users = keep
	sopts, err := opts.serverOptions(e.port)
	if err != nil {
		return err
	}
	if err := e.srv.ReloadOptions(sopts); err != nil {
		return fmt.Errorf("bus: remove user %s: reload the server: %w", name, err)
	}
	e.opts = opts // a Restart comes back without it too
	return nil
}
