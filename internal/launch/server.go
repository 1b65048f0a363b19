package launch

import (
	"os"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/wire"
)

// ServerConfig says which NATS server the processes of a run connect to: the embedded server
// (or cluster) the launcher starts, or an external one.
type ServerConfig struct {
	// URL is an external server's URL (--nats-url, else $NATS_URL: bus.ResolveURL), or a
	// comma-separated list of a cluster's; "" starts the embedded server.
	URL string
	// Plans are the run's points and RunIDs their run ids: the embedded server admits their
	// processes and launchers only, each with its role's subject permissions (RunUsers).
	Plans            []*plan.Plan
	RunIDs           []string
	AgentsPerProcess int
	// Users are further accounts the embedded server admits, with their own permissions
	// (internal/farm: a coordinator and its workers); an external server is not changed.
	Users []bus.User
	// Host and Port are the embedded server's client address ("" and 0: loopback, a random
	// free port).
	Host string
	Port int
	// Cluster > 1 starts that many embedded servers joined by routes.
	Cluster int
	// AutoTLS makes the embedded server require TLS with the certificate of a throwaway CA
	// (every process trusts it); TLS are the files of an external server's TLS.
	AutoTLS bool
	TLS     bus.TLSFiles
	// ConnectRetry is how long an external server that cannot be reached is retried (the
	// embedded one is up: never).
	ConnectRetry time.Duration
	// Monitor, when set, is the address host:port of the embedded server's HTTP monitoring
	// endpoint (a cluster's first member; bus.EmbeddedOptions.Monitor).
	Monitor string
	// ObserverFile, when set, is where the embedded server's read-only observer account is
	// written as a NATS CLI context (bus.ObserverUser, bus.WriteObserverContext); Close
	// removes it with the server. An external server's accounts are its own: none is written.
	ObserverFile string
}

// Server is where the processes of every point of a run connect: the server(s) and their
// accounts. Close stops an embedded server and removes its TLS files.
type Server struct {
	URL      string        // what the processes connect to (without credentials)
	Embedded *bus.Embedded // the embedded server (a cluster's first); nil with an external one
	Cluster  *bus.Cluster  // the embedded cluster (ServerConfig.Cluster > 1); nil without
	// TLS is what every process connects with (zero: plain TCP) and TLSMode says how it came
	// about: "auto" (the embedded server's throwaway CA), "external" (ServerConfig.TLS) or "".
	TLS     bus.TLSFiles
	TLSMode string
	// ObserverFile is the observer's NATS CLI context (ServerConfig.ObserverFile; "": none).
	ObserverFile string
	// MonitorURL is the embedded server's monitoring endpoint (ServerConfig.Monitor; "": none).
	MonitorURL string

	users        []map[string]bus.User // users[k]: the accounts of point k's processes (nil: none)
	launchers    []*bus.User           // launchers[k]: point k's launcher account (nil: none)
	connectRetry time.Duration
	stop         func()
}

// StartServer starts the embedded server (or cluster) of c, admitting the run's processes and
// launchers only, or prepares the connection to the external server c.URL.
func StartServer(c ServerConfig) (*Server, error) {
	s := &Server{URL: c.URL, users: make([]map[string]bus.User, len(c.Plans)), launchers: make([]*bus.User, len(c.Plans)), stop: func() {}}
	if c.URL != "" {
		s.useExternal(c)
		return s, nil
	}
	if err := s.startEmbedded(c); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the embedded server(s) and removes the TLS files of AutoTLS (nothing for an
// external server).
func (s *Server) Close() { s.stop() }

// Configure sets the fields of cfg that say how the processes of point k connect: the URL,
// the embedded server and cluster (a scenario's server restarts need them), the accounts, the
// TLS files and the connect retry.
func (s *Server) Configure(cfg *SessionConfig, k int) {
	cfg.URL, cfg.Server, cfg.Cluster = s.URL, s.Embedded, s.Cluster
	cfg.Users, cfg.Launcher = s.users[k], s.launchers[k]
	cfg.TLS, cfg.ConnectRetry = s.TLS, s.connectRetry
}

// startEmbedded starts the embedded server, or the cluster of c.Cluster, that accepts only the
// accounts of the run's processes and launchers, on c's address and with AutoTLS.
func (s *Server) startEmbedded(c ServerConfig) error {
	var all []bus.User
	for k, p := range c.Plans {
		u, lu, err := RunUsers(p, c.RunIDs[k], c.AgentsPerProcess)
		if err != nil {
			return err
		}
		s.users[k], s.launchers[k] = u, &lu
		all = append(all, lu)
		for _, x := range u {
			all = append(all, x)
		}
	}
	all = append(all, c.Users...)
	var observer bus.User
	if c.ObserverFile != "" {
		var err error
		if observer, err = bus.ObserverUser(); err != nil {
			return err
		}
		all = append(all, observer)
	}
	opts := bus.EmbeddedOptions{Users: all, Host: c.Host, Port: c.Port, Monitor: c.Monitor}
	removeTLS := func() {}
	if c.AutoTLS {
		var err error
		if removeTLS, err = s.autoTLS(&opts); err != nil {
			return err
		}
	}
	if c.ObserverFile != "" {
		defer func() { s.writeObserver(c.ObserverFile, observer) }()
	}
	if c.Cluster > 1 {
		cl, err := bus.StartCluster(c.Cluster, opts)
		if err != nil {
			removeTLS()
			return err
		}
		s.Cluster, s.Embedded, s.URL, s.MonitorURL = cl, cl.Members[0], cl.URLs(), cl.Members[0].MonitorURL()
		s.stop = func() { cl.Shutdown(); removeTLS() }
		return nil
	}
	srv, err := bus.StartEmbedded(opts)
	if err != nil {
		removeTLS()
		return err
	}
	s.Embedded, s.URL, s.MonitorURL = srv, srv.URL(), srv.MonitorURL()
	s.stop = func() { srv.Shutdown(); removeTLS() }
	return nil
}

// writeObserver writes the observer's context for the started server (nothing when it did not
// start) and makes Close remove it: the account dies with the server.
func (s *Server) writeObserver(path string, u bus.User) {
	if s.Embedded == nil {
		return
	}
	c := bus.ObserverContext{Description: "dpsim: read-only observer of the runs on this server (subscribe dpsim.>)",
		URL: s.URL, User: u.Name, Password: u.Password, CA: s.TLS.CA}
	if err := bus.WriteObserverContext(path, c); err != nil {
		return // watching is a convenience: the run goes on, and ObserverFile stays ""
	}
	s.ObserverFile = path
	stop := s.stop
	s.stop = func() { stop(); _ = os.Remove(path) }
}

// autoTLS makes the throwaway CA and server key of AutoTLS for opts and returns the function
// that removes them. They live in a temporary directory outside the run's outputs: nothing
// secret is left behind.
func (s *Server) autoTLS(opts *bus.EmbeddedOptions) (remove func(), err error) {
	tmp, err := os.MkdirTemp("", "dpsim-tls-")
	if err != nil {
		return nil, err
	}
	remove = func() { _ = os.RemoveAll(tmp) }
	if opts.TLS, err = bus.AutoTLS(tmp); err != nil {
		remove()
		return nil, err
	}
	s.TLS, s.TLSMode = bus.TLSFiles{CA: opts.TLS.CA}, "auto"
	return remove, nil
}

// useExternal prepares the connection to the external server c.URL: its TLS files, the
// connect retry, and the credentials of its URL as every process's and launcher's account.
func (s *Server) useExternal(c ServerConfig) {
	// Credentials in an external server's URL never reach an output, a log or a child's
	// argv: the launcher and every child connect with them through options and the
	// environment, and the address alone is printed.
	clean, user, pass := bus.SplitURL(c.URL)
	s.URL, s.connectRetry = clean, c.ConnectRetry
	if c.TLS.Enabled() {
		s.TLS, s.TLSMode = c.TLS, "external"
	}
	if user == "" {
		return
	}
	ext := bus.User{Name: user, Password: pass}
	for k, p := range c.Plans {
		s.users[k], s.launchers[k] = map[string]bus.User{}, &ext
		for _, key := range ProcessKeys(p, c.AgentsPerProcess) {
			s.users[k][key] = ext
		}
	}
}

// RunUsers returns the users of a run's processes (by sender name) and of its launcher, each
// with its role's subject permissions (wire.Subjects.RolePermissions).
func RunUsers(p *plan.Plan, run string, perProc int) (map[string]bus.User, bus.User, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, bus.User{}, err
	}
	users := map[string]bus.User{}
	for _, pr := range plannedProcs(p, perProc) {
		pub, sub := subj.RolePermissions(pr.Role, pr.ID, pr.LastAgent)
		u, err := bus.NewUser(bus.UserName(run, pr.Role, pr.ID), pub, sub)
		if err != nil {
			return nil, bus.User{}, err
		}
		users[endpoint.Endpoint{Role: pr.Role, ID: pr.ID}.String()] = u
	}
	pub, sub := subj.LauncherPermissions()
	l, err := bus.NewUser(run+"-launcher", pub, sub)
	return users, l, err
}
