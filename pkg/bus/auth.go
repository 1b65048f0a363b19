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
	"github.com/dpsim/dpsim/pkg/wire"
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

// ObserverUser returns the read-only account of someone who watches the runs of an embedded
// server: it subscribes to every run's subjects (dpsim.>, where the eavesdropper listens too:
// what is on the bus is what an eavesdropper sees) but neither the challenger's line nor the
// farm's jobs (they hold secrets), and publishes nothing.
func ObserverUser() (User, error) {
	u, err := NewUser("observer", nil, []string{wire.Prefix + ".>"})
	u.DenyPublish = []string{">"}
	u.DenySubscribe = []string{wire.ChallengerPrefix + ">", wire.Prefix + ".farm.>"}
	return u, err
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
