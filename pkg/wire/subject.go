package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// Prefix is the first token of every dpsim subject.
const Prefix = "dpsim"

// MaxTokenLen bounds run ids and other subject tokens (bytes). The binary encoding stores
// string lengths in one byte, so every token fits comfortably.
const MaxTokenLen = 64

// The roles, senders and data streams are pkg/endpoint's: a subject's <role>.<id> is an
// endpoint.Endpoint's String, its stream the role's endpoint.Role.Stream. The process hosting
// a block of agents (endpoint.Block) publishes host.<i>'s data; its ctl subjects stay
// agent.<i>'s.

// Coordination tokens below dpsim.<run>.ctl.
const (
	CtlStart   = "start"
	CtlEpisode = "episode"
	CtlReady   = "ready"
	CtlDone    = "done"
	CtlStop    = "stop"
	CtlResult  = "result"
	// CtlRejoin: a process restarted after a crash is subscribed again (process -> peers and
	// launcher): its peers hold what is due to it from its restart step until they hear it.
	CtlRejoin = "rejoin"
)

// ErrToken is wrapped by every token validation error.
var ErrToken = errors.New("wire: invalid subject token")

// ValidToken checks that s can be used as one NATS subject token (a run id, a role, a
// coordination word): non-empty, at most MaxTokenLen bytes, valid UTF-8, and free of the
// NATS separators and wildcards ('.', '*', '>'), white space and control characters.
func ValidToken(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrToken)
	}
	if len(s) > MaxTokenLen {
		return fmt.Errorf("%w: %q is %d bytes, at most %d allowed", ErrToken, s, len(s), MaxTokenLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrToken, s)
	}
	for i, r := range s {
		switch {
		case r == '.':
			return fmt.Errorf("%w: %q contains '.' at byte %d (the NATS token separator)", ErrToken, s, i)
		case r == '*' || r == '>':
			return fmt.Errorf("%w: %q contains wildcard %q at byte %d", ErrToken, s, r, i)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("%w: %q contains white space or a control character at byte %d", ErrToken, s, i)
		}
	}
	return nil
}

// Subjects builds the subjects of one run. The zero value is unusable; use NewSubjects.
// Builders allocate a string: compute the subjects once per process, not per step.
type Subjects struct {
	run  string
	base string // "dpsim.<run>."
}

// NewSubjects validates the run id (see ValidToken) and returns its subject builder.
func NewSubjects(run string) (Subjects, error) {
	if err := ValidToken(run); err != nil {
		return Subjects{}, fmt.Errorf("run id: %w", err)
	}
	return Subjects{run: run, base: Prefix + "." + run + "."}, nil
}

// Run returns the run id.
func (s Subjects) Run() string { return s.run }

// AllRuns is the subject filter matching every dpsim message of every run: "dpsim.>".
func AllRuns() string { return Prefix + ".>" }

// All matches every message of the run: "dpsim.<run>.>" (what the eavesdropper watches).
func (s Subjects) All() string { return s.base + ">" }

// Data is "dpsim.<run>.<role>.<id>.<stream>": the data subject of publisher from, its stream
// the one its role publishes (endpoint.Role.Stream).
func (s Subjects) Data(from endpoint.Endpoint) string {
	return s.base + from.String() + "." + from.Role.Stream()
}

func (s Subjects) dataAll(role endpoint.Role) string {
	return s.base + role.String() + ".*." + role.Stream()
}

// PlantYhat is "dpsim.<run>.plant.<id>.yhat": the noisy output published by plant id.
func (s Subjects) PlantYhat(id int) string {
	return s.Data(endpoint.Endpoint{Role: endpoint.Plant, ID: id})
}

// AllPlantYhat is "dpsim.<run>.plant.*.yhat".
func (s Subjects) AllPlantYhat() string { return s.dataAll(endpoint.Plant) }

// CloudU is "dpsim.<run>.cloud.<id>.u": the control input published by cloud controller id.
func (s Subjects) CloudU(id int) string {
	return s.Data(endpoint.Endpoint{Role: endpoint.Cloud, ID: id})
}

// AllCloudU is "dpsim.<run>.cloud.*.u".
func (s Subjects) AllCloudU() string { return s.dataAll(endpoint.Cloud) }

// AgentY is "dpsim.<run>.agent.<i>.y": the noisy state published by consensus agent i.
func (s Subjects) AgentY(i int) string { return s.Data(endpoint.Endpoint{Role: endpoint.Agent, ID: i}) }

// HostY is the data subject of the block of agents starting at agent i: y(t) of all of them.
func (s Subjects) HostY(i int) string { return s.Data(endpoint.Endpoint{Role: endpoint.Block, ID: i}) }

// AllHostY matches every block's data subject.
func (s Subjects) AllHostY() string { return s.dataAll(endpoint.Block) }

// AllAgentY is "dpsim.<run>.agent.*.y".
func (s Subjects) AllAgentY() string { return s.dataAll(endpoint.Agent) }

// AllCtl is "dpsim.<run>.ctl.>": every coordination message of the run.
func (s Subjects) AllCtl() string { return s.base + "ctl.>" }

// Ctl builds "dpsim.<run>.ctl.<tokens...>" after validating every token. Use "*" or ">"
// only through the dedicated filter helpers.
func (s Subjects) Ctl(tokens ...string) (string, error) {
	if len(tokens) == 0 {
		return "", fmt.Errorf("%w: ctl subject needs at least one token", ErrToken)
	}
	var b strings.Builder
	b.WriteString(s.base)
	b.WriteString("ctl")
	for _, t := range tokens {
		if err := ValidToken(t); err != nil {
			return "", fmt.Errorf("ctl subject: %w", err)
		}
		b.WriteByte('.')
		b.WriteString(t)
	}
	return b.String(), nil
}

// CtlStart is "dpsim.<run>.ctl.start" (launcher -> all: the run begins).
func (s Subjects) CtlStart() string { return s.base + "ctl." + CtlStart }

// CtlEpisode is "dpsim.<run>.ctl.episode" (launcher -> all: episode e begins; Message.Episode = e).
func (s Subjects) CtlEpisode() string { return s.base + "ctl." + CtlEpisode }

// CtlStop is "dpsim.<run>.ctl.stop" (launcher -> all: flush and exit).
func (s Subjects) CtlStop() string { return s.base + "ctl." + CtlStop }

func (s Subjects) ctlRole(word string, role endpoint.Role, id int) string {
	return s.base + "ctl." + word + "." + endpoint.Endpoint{Role: role, ID: id}.String()
}

// CtlReady is "dpsim.<run>.ctl.ready.<role>.<id>" (process -> launcher: subscribed, ready).
func (s Subjects) CtlReady(role endpoint.Role, id int) string { return s.ctlRole(CtlReady, role, id) }

// CtlDone is "dpsim.<run>.ctl.done.<role>.<id>" (process -> launcher: episode finished).
func (s Subjects) CtlDone(role endpoint.Role, id int) string { return s.ctlRole(CtlDone, role, id) }

// CtlRejoin is "dpsim.<run>.ctl.rejoin.<role>.<id>" (a restarted process -> its peers).
func (s Subjects) CtlRejoin(role endpoint.Role, id int) string { return s.ctlRole(CtlRejoin, role, id) }

// CtlResult is "dpsim.<run>.ctl.result.<role>.<id>" (process -> launcher: results).
func (s Subjects) CtlResult(role endpoint.Role, id int) string { return s.ctlRole(CtlResult, role, id) }

// ChallengerX0 is the private line on which an auditor's challenger hands the plant or the
// agents the secret initial state of an episode. It lies deliberately OUTSIDE dpsim.>: the
// eavesdropper sniffs dpsim.<run>.> (everything on the wire between plant, cloud and agents),
// and x(0) is the very secret it must not see. Its payload is sealed to the processes that
// own it (seal.go; pkg/contract's X0Message): a server without permissions lets anyone
// subscribe here, and they read ciphertext only.
func (s Subjects) ChallengerX0() string { return ChallengerPrefix + s.run + ".x0" }

// ChallengerPrefix is the first token of the challenger's private subjects.
const ChallengerPrefix = "dpsim-challenger."

// AllCtlWord matches one coordination word from every process, e.g.
// AllCtlWord(CtlDone) = "dpsim.<run>.ctl.done.>".
func (s Subjects) AllCtlWord(word string) string { return s.base + "ctl." + word + ".>" }

// Subject is a parsed dpsim subject.
type Subject struct {
	Run    string
	Role   endpoint.Role // plant, cloud, agent, host for data subjects; the zero Role for ctl subjects
	ID     int           // process / agent index for data subjects
	Stream string        // yhat, u, y for data subjects
	Ctl    []string      // tokens after "ctl" for coordination subjects (nil for data subjects)
}

// IsCtl reports whether the subject is a coordination subject.
func (s Subject) IsCtl() bool { return s.Ctl != nil }

// Endpoint returns the publisher of a data subject.
func (s Subject) Endpoint() endpoint.Endpoint { return endpoint.Endpoint{Role: s.Role, ID: s.ID} }

// Sender returns "<role>.<id>" for data subjects and "" for ctl subjects.
func (s Subject) Sender() string {
	if s.IsCtl() {
		return ""
	}
	return s.Endpoint().String()
}

// ParseSubject parses a concrete (wildcard-free) dpsim subject. Data subjects must be
// "dpsim.<run>.<role>.<id>.<stream>" with a known role (endpoint.ParseRole) and a canonical
// non-negative decimal id; coordination subjects
// "dpsim.<run>.ctl.<token>...".
func ParseSubject(subject string) (Subject, error) {
	toks := strings.Split(subject, ".")
	if len(toks) < 3 || toks[0] != Prefix {
		return Subject{}, fmt.Errorf("wire: subject %q is not dpsim.<run>.<...>", subject)
	}
	for _, t := range toks[1:] {
		if err := ValidToken(t); err != nil {
			return Subject{}, fmt.Errorf("wire: subject %q: %w", subject, err)
		}
	}
	out := Subject{Run: toks[1]}
	if toks[2] == "ctl" {
		if len(toks) < 4 {
			return Subject{}, fmt.Errorf("wire: ctl subject %q has no command token", subject)
		}
		out.Ctl = toks[3:]
		return out, nil
	}
	if len(toks) != 5 {
		return Subject{}, fmt.Errorf("wire: data subject %q must have 5 tokens dpsim.<run>.<role>.<id>.<stream>, has %d", subject, len(toks))
	}
	id, err := strconv.Atoi(toks[3])
	if err != nil || id < 0 || strconv.Itoa(id) != toks[3] {
		return Subject{}, fmt.Errorf("wire: subject %q: id %q is not a canonical non-negative integer", subject, toks[3])
	}
	role, err := endpoint.ParseRole(toks[2])
	if err != nil {
		return Subject{}, fmt.Errorf("wire: subject %q: %w", subject, err)
	}
	out.Role, out.ID, out.Stream = role, id, toks[4]
	return out, nil
}

// SenderOfSubject returns the "<role>.<id>" part of a data subject
// "dpsim.<run>.<role>.<id>.<stream>" without allocating, or "" if the subject has another
// shape. It does not validate the tokens.
func SenderOfSubject(subject string) string {
	// skip "dpsim." and "<run>."
	i := strings.IndexByte(subject, '.')
	if i < 0 {
		return ""
	}
	rest := subject[i+1:]
	j := strings.IndexByte(rest, '.')
	if j < 0 {
		return ""
	}
	rest = rest[j+1:] // "<role>.<id>.<stream>"
	k := strings.LastIndexByte(rest, '.')
	if k < 0 {
		return ""
	}
	sender := rest[:k]
	if strings.Count(sender, ".") != 1 {
		return ""
	}
	return sender
}
