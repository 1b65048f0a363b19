package audit

import (
	"fmt"
	"strings"
)

// RoleProcess is one role process of a game played over the wire (dpsim audit --engine wire):
// who played the role - dpsim's own process, or a user's program given with --role - and what
// it counted.
type RoleProcess struct {
	Process string `json:"process"`           // its name (plant-0)
	Sender  string `json:"sender"`            // its sender name (plant.0; an agent host's first agent)
	Program string `json:"program,omitempty"` // the user's command that played it (--role); absent: dpsim's own
	PID     int    `json:"pid,omitempty"`
	Steps   int    `json:"steps"`   // steps it completed, over every episode
	Missed  int    `json:"missed"`  // of those, steps that went on without all their messages at the deadline
	Invalid uint64 `json:"invalid"` // messages it received and dropped as invalid
}

// RoleProblem is something a role process did wrong, attributed to it by the launcher (the
// problems of dpsim run's summary.json, docs/protocol.md section 9). A fatal one fails the audit.
type RoleProblem struct {
	Process string `json:"process"`
	Sender  string `json:"sender"`
	Program string `json:"program,omitempty"`
	Kind    string `json:"kind"`
	Count   uint64 `json:"count,omitempty"`
	Detail  string `json:"detail"`
	Fatal   bool   `json:"fatal"`
}

func (p RoleProblem) String() string {
	who := p.Process
	if p.Program != "" {
		who += fmt.Sprintf(" (--role %s=%q)", p.Sender, p.Program)
	}
	return fmt.Sprintf("%s: %s: %s", who, p.Kind, p.Detail)
}

// Programs are the processes of r played by a user's program (--role).
func (r *GameReport) Programs() []RoleProcess {
	var ps []RoleProcess
	for _, p := range r.Processes {
		if p.Program != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// ProgramsLine says whose programs played which roles and what the verdict is then about (""
// when dpsim's own processes played every role).
func (r *GameReport) ProgramsLine() string {
	progs := r.Programs()
	if len(progs) == 0 {
		return ""
	}
	var mech, eve []string
	for _, p := range progs {
		s := fmt.Sprintf("%s = %q", p.Sender, p.Program)
		if strings.HasPrefix(p.Sender, "eavesdropper.") {
			eve = append(eve, s)
		} else {
			mech = append(mech, s)
		}
	}
	var parts []string
	if len(mech) > 0 {
		parts = append(parts, fmt.Sprintf("the verdict is about the system as your program(s) %s played it, not dpsim's own processes (a plant's or agent's release and noise are the mechanism audited)", strings.Join(mech, ", ")))
	}
	if len(eve) > 0 {
		parts = append(parts, fmt.Sprintf("the verdict is about the attack of your eavesdropper %s: its final estimates were scored, so the bounds are what that attack achieved (a weaker attack gives lower ones; consistent means it found no evidence against the claim)", strings.Join(eve, ", ")))
	}
	return strings.Join(parts, "; ")
}

// mdRoles writes who played the roles of a wire game, whose program the verdict is about, and
// what went wrong in the game (problems, degradation): nothing for a fast-engine game.
func (r *GameReport) mdRoles(b *strings.Builder) {
	if len(r.Processes) == 0 {
		return
	}
	if line := r.ProgramsLine(); line != "" {
		fmt.Fprintf(b, "**Your programs.** Programs of yours played roles in place of dpsim's own (`--role`): %s.\n\n", line)
	}
	if len(r.Problems) > 0 || len(r.Degraded) > 0 {
		b.WriteString("**The game did not run clean.** What went wrong is counted and attributed below; the bounds are those of the game as it was played " +
			"(a step that timed out went on under the missing-input rules), so the verdict holds for that game only:\n\n")
		for _, p := range r.Problems {
			fmt.Fprintf(b, "- problem: %s\n", p)
		}
		for _, d := range r.Degraded {
			fmt.Fprintf(b, "- degraded: %s\n", d)
		}
		b.WriteString("\n")
	}
	b.WriteString("| process | played by | steps | missed | invalid received |\n|---|---|---|---|---|\n")
	for _, p := range r.Processes {
		by := "dpsim " + strings.SplitN(p.Sender, ".", 2)[0]
		if p.Program != "" {
			by = fmt.Sprintf("`%s` (--role)", strings.ReplaceAll(p.Program, "|", `\|`))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d |\n", p.Process, by, p.Steps, p.Missed, p.Invalid)
	}
	b.WriteString("\n")
}
