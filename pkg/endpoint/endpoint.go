package endpoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Role is the kind of a participant of a run.
type Role uint8

// The roles of a run.
const (
	Plant Role = iota // the plant of cloud control (eq. (23)): publishes yhat(t)
	Cloud             // the cloud controller (eq. (24)): publishes u(t)
	Agent             // a consensus agent (eq. (25)): publishes y_i(t)
	// Eavesdropper listens to everything on the wire and publishes no data.
	Eavesdropper
	// Block is a block of consensus agents publishing together (its wire name is "host", the
	// protocol's word, kept for the programs that speak it): host.<i> carries y(t) of
	// agents i..i+K-1 in one message (dpsim run --agents-per-process K).
	Block
	// Launcher starts a run's processes and coordinates them; it publishes no data.
	Launcher
)

// NumRoles is the number of roles: arrays indexed by Role have this length.
const NumRoles = int(Launcher) + 1

// RoleInfo is what the code needs to know about a role as data: one row of Roles. A new
// role adds its constant above and its row here; TestRoleTable checks every role has one.
type RoleInfo struct {
	Role Role
	// Name is the <role> token of the bus subjects and sender names, and the role's name in
	// flags, files and scenario link endpoints.
	Name string
	// Stream is the data stream the role publishes ("": it publishes no data).
	Stream string
	// Process: the role runs as a role process of its own (dpsim plant, cloud, agent,
	// eavesdropper), which reports a result; a host is a process of role agent.
	Process bool
	// Many: a run has several of the role (ids 0, 1, ...); the others have one, id 0.
	Many bool
	// Private: the role holds a secret - its private initial state and the seed of its
	// noise - which the other roles must never receive.
	Private bool
}

// Roles lists every role, indexed by Role.
var Roles = [NumRoles]RoleInfo{
	{Role: Plant, Name: "plant", Stream: StreamYhat, Process: true, Private: true},
	{Role: Cloud, Name: "cloud", Stream: StreamU, Process: true},
	{Role: Agent, Name: "agent", Stream: StreamY, Process: true, Many: true, Private: true},
	{Role: Eavesdropper, Name: "eavesdropper", Process: true},
	{Role: Block, Name: "host", Stream: StreamY, Many: true},
	{Role: Launcher, Name: "launcher"},
}

// Info returns r's row of Roles (the zero RoleInfo for an invalid role).
func (r Role) Info() RoleInfo {
	if r.Valid() {
		return Roles[r]
	}
	return RoleInfo{}
}

// ProcessRoles lists the names of the roles that run as role processes (RoleInfo.Process),
// in the order of Roles.
func ProcessRoles() []string {
	var out []string
	for _, ri := range Roles {
		if ri.Process {
			out = append(out, ri.Name)
		}
	}
	return out
}

// String returns the role's name, the <role> token of the bus subjects and sender names.
func (r Role) String() string {
	if r.Valid() {
		return Roles[r].Name
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// Many reports whether a run has several of role r (RoleInfo.Many).
func (r Role) Many() bool { return r.Info().Many }

// Private reports whether role r holds a secret: its private initial state and its noise
// seed (RoleInfo.Private).
func (r Role) Private() bool { return r.Info().Private }

// Valid reports whether r is one of the roles above.
func (r Role) Valid() bool { return int(r) < NumRoles }

// The data streams: the last token of a data subject and the kind of a data message.
const (
	StreamYhat = "yhat" // plant -> cloud: noisy output yhat(t) = C x(t) + gamma(t)
	StreamU    = "u"    // cloud -> plant: control input u(t)
	StreamY    = "y"    // agent (or host) -> neighbours: y_i(t) = x_i(t) + gamma_i(t)
)

// Stream is the data stream role r publishes (RoleInfo.Stream): yhat for the plant, u for
// the cloud, y for an agent or a host; "" for the eavesdropper and the launcher, which publish
// no data.
func (r Role) Stream() string { return r.Info().Stream }

// ErrSyntax is wrapped by every ParseRole and Parse error.
var ErrSyntax = errors.New("endpoint: invalid")

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, ri := range Roles {
		if s == ri.Name {
			return ri.Role, nil
		}
	}
	return 0, fmt.Errorf("%w role %q", ErrSyntax, s)
}

// Endpoint is one instance of a role: plant.0, cloud.0, agent.i, host.i, eavesdropper.0,
// launcher.0.
type Endpoint struct {
	Role Role
	ID   int
}

// String is the endpoint's sender name "<role>.<id>" (e.g. "plant.0"): the "from" of its
// messages and the <role>.<id> part of its subjects.
func (e Endpoint) String() string { return e.Role.String() + "." + strconv.Itoa(e.ID) }

// Parse reads a sender name "<role>.<id>": a known role and a canonical non-negative decimal
// id (no sign, no leading zero).
func Parse(s string) (Endpoint, error) {
	role, id, ok := strings.Cut(s, ".")
	if !ok {
		return Endpoint{}, fmt.Errorf("%w endpoint %q: not <role>.<id>", ErrSyntax, s)
	}
	r, err := ParseRole(role)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w endpoint %q: unknown role", ErrSyntax, s)
	}
	k, ok := parseID(id)
	if !ok {
		return Endpoint{}, fmt.Errorf("%w endpoint %q: id %q is not a canonical non-negative integer", ErrSyntax, s, id)
	}
	return Endpoint{Role: r, ID: k}, nil
}

// parseID reads a canonical non-negative decimal int without allocating (Parse runs per
// message received).
func parseID(s string) (int, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	k, err := strconv.Atoi(s) // digits only: fails only on overflow
	return k, err == nil
}
