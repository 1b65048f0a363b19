package bus

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/nats-io/nats.go"
)

// The bus is not an open door. An embedded server of a run knows one user per process
// (and one for the launcher), each with a random password and the subject permissions of
// its role - NATS's own per-user permissions (server.Options.Users), not a check of dpsim's:
//
//	role          publish                                     subscribe
//	plant.<id>    plant.<id>.yhat, its ctl ready/done/result/rejoin   cloud.<id>.u, ctl.episode, ctl.stop, ctl.rejoin.>, the challenger's x0
//	cloud.<id>    cloud.<id>.u, its ctl words                 plant.<id>.yhat, ctl.episode, ctl.stop, ctl.rejoin.>
//	agent.<i>..j  agent.<i..j>.y, its ctl words               agent.*.y, ctl.episode, ctl.stop, ctl.rejoin.>, the challenger's x0
//	eavesdropper  its ctl ready/done/result only              dpsim.<run>.>  (not the challenger's line)
//	launcher      ctl.episode, ctl.stop, the challenger's x0  dpsim.<run>.>
//
// (subjects below dpsim.<run>.). A client without credentials is refused. The credentials
// reach a child process through its environment (EnvUser, EnvPassword), never its argv.

// Environment variables that carry a process's NATS credentials.
const (
	EnvUser     = "DPSIM_NATS_USER"
	EnvPassword = "DPSIM_NATS_PASSWORD"
)

// User is one account of an embedded server: its credentials and permissions.
type User struct {
	Name, Password string
	Publish        []string
	Subscribe      []string
	// DenyPublish and DenySubscribe refuse these subjects even where the allow lists would
	// admit them (the server filters a wildcard subscription's deliveries too); an empty
	// Publish allows every subject unless DenyPublish says otherwise (">" for none).
	DenyPublish, DenySubscribe []string
}

// NewUser returns a user with a random 128-bit password.
func NewUser(name string, pub, sub []string) (User, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return User{}, fmt.Errorf("bus: password for %s: %w", name, err)
	}
	return User{Name: name, Password: base64.RawURLEncoding.EncodeToString(b), Publish: pub, Subscribe: sub}, nil
}

// Env returns the environment entries that hand u's credentials to a child process.
func (u User) Env() []string { return []string{EnvUser + "=" + u.Name, EnvPassword + "=" + u.Password} }

// serverUser is u in the server's options.
func (u User) serverUser() *server.User {
	return &server.User{Username: u.Name, Password: u.Password, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: u.Publish, Deny: u.DenyPublish},
		Subscribe: &server.SubjectPermission{Allow: u.Subscribe, Deny: u.DenySubscribe},
	}}
}

// UserName is the account name of a process of a run: "<run>-<role>-<id>".
func UserName(run string, role endpoint.Role, id int) string {
	return run + "-" + role.String() + "-" + strconv.Itoa(id)
}

// ctlWords are the coordination words a process publishes under its own name.
var ctlWords = []string{CtlReady, CtlDone, CtlResult, CtlRejoin}

// RolePermissions returns what a process of role publishes and subscribes: id is its id (the
// first agent it hosts), last its last agent (= id for one).
func (s Subjects) RolePermissions(role endpoint.Role, id, last int) (pub, sub []string) {
	for _, w := range ctlWords {
		if role == endpoint.Eavesdropper && w == CtlRejoin {
			continue
		}
		pub = append(pub, s.ctlRole(w, role, id))
	}
	common := []string{s.CtlEpisode(), s.CtlStop(), s.AllCtlWord(CtlRejoin)}
	switch role {
	case endpoint.Plant:
		pub = append(pub, s.PlantYhat(id))
		sub = append(append(sub, s.CloudU(id), s.ChallengerX0()), common...)
	case endpoint.Cloud:
		pub = append(pub, s.CloudU(id))
		sub = append(sub, s.PlantYhat(id))
		sub = append(sub, common...)
	case endpoint.Agent: // its agents one by one, or as the block starting at its first (HostY)
		for i := id; i <= last; i++ {
			pub = append(pub, s.AgentY(i))
		}
		pub = append(pub, s.HostY(id)) // a block may hold one agent (the last of a run)
		sub = append(append(sub, s.AllAgentY(), s.AllHostY(), s.ChallengerX0()), common...)
	case endpoint.Eavesdropper:
		sub = []string{s.All()}
	}
	return pub, sub
}

// ObserverUser returns the read-only account of someone who watches the runs of an embedded
// server: it subscribes to every run's subjects (dpsim.>, where the eavesdropper listens too:
// what is on the bus is what an eavesdropper sees) but neither the challenger's line nor the
// farm's jobs (they hold secrets), and publishes nothing.
func ObserverUser() (User, error) {
	u, err := NewUser("observer", nil, []string{Prefix + ".>"})
	u.DenyPublish = []string{">"}
	u.DenySubscribe = []string{ChallengerPrefix + ">", Prefix + ".farm.>"}
	return u, err
}

// LauncherPermissions returns what the launcher of a run publishes and subscribes.
func (s Subjects) LauncherPermissions() (pub, sub []string) {
	return []string{s.CtlEpisode(), s.CtlStop(), s.CtlStart(), s.ChallengerX0()}, []string{s.All()}
}

// WithUser connects with a user name and password (an embedded server with permissions), or
// with a token (password "").
func WithUser(name, password string) Option {
	return func(c *connConfig) {
		if name != "" {
			c.natsOpts = append(c.natsOpts, credentials(name, password))
		}
	}
}

// WithEnvUser connects with the credentials of the environment (EnvUser, EnvPassword), when
// set: what a launcher hands its children.
func WithEnvUser() Option {
	return func(c *connConfig) {
		if u := os.Getenv(EnvUser); u != "" {
			c.natsOpts = append(c.natsOpts, credentials(u, os.Getenv(EnvPassword)))
		}
	}
}

// SplitURL separates the credentials of a NATS URL ("nats://user:password@host:port", or a
// token as "nats://token@host:port") from the address: clean is the URL without them, safe to
// print, log and pass in argv; the credentials go through the environment or an option. A
// comma-separated list of URLs (a cluster) is split entry by entry; the credentials are the
// first entry's that has any.
func SplitURL(u string) (clean, user, password string) {
	if strings.Contains(u, ",") {
		var parts []string
		for _, e := range strings.Split(u, ",") {
			c, us, pw := SplitURL(strings.TrimSpace(e))
			if user == "" && us != "" {
				user, password = us, pw
			}
			parts = append(parts, c)
		}
		return strings.Join(parts, ","), user, password
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		scheme, rest = "", u
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return u, "", ""
	}
	info, host := rest[:at], rest[at+1:]
	user, password, _ = strings.Cut(info, ":")
	if scheme != "" {
		return scheme + "://" + host, user, password
	}
	return host, user, password
}

// RedactURL returns u (one URL or a comma-separated list) with any credentials replaced by
// "REDACTED".
func RedactURL(u string) string {
	if strings.Contains(u, ",") {
		parts := strings.Split(u, ",")
		for i := range parts {
			parts[i] = RedactURL(strings.TrimSpace(parts[i]))
		}
		return strings.Join(parts, ",")
	}
	clean, user, _ := SplitURL(u)
	if user == "" {
		return u
	}
	scheme, host, ok := strings.Cut(clean, "://")
	if !ok {
		return "REDACTED@" + clean
	}
	return scheme + "://REDACTED@" + host
}

// credentials is the nats option of a user/password pair or of a token (no password).
func credentials(user, password string) nats.Option {
	if password == "" {
		return nats.Token(user)
	}
	return nats.UserInfo(user, password)
}
