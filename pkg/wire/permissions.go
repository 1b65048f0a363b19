package wire

import "github.com/dpsim/dpsim/pkg/endpoint"

// Subject permissions: which subjects each party of a run publishes and subscribes. They are
// plain subject lists; pkg/bus turns them into the server's accounts (NewUser).

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

// LauncherPermissions returns what the launcher of a run publishes and subscribes.
func (s Subjects) LauncherPermissions() (pub, sub []string) {
	return []string{s.CtlEpisode(), s.CtlStop(), s.CtlStart(), s.ChallengerX0()}, []string{s.All()}
}
