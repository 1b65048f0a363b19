package launch

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/plan"
)

// Programs are the users' own programs that play roles in place of dpsim's (dpsim run
// --role cloud.0='node my-cloud.js'), by sender name ("cloud.0"; an agent host under its first
// agent, "agent.0"). A program is started as `sh -c 'COMMAND "$@"' sh ARGS...`: ARGS are
// exactly the arguments dpsim's own role would get after its role name, and its environment is
// the same (NATS credentials, signing and sealing keys), so a program implements the role from
// docs/protocol.md alone. The launcher holds it to the same contract as its own processes and
// names it in every problem it causes.
type Programs map[string]string

// ParseProgram parses one --role value, "ENDPOINT=COMMAND", into p.
func (p Programs) ParseProgram(v string) error {
	key, cmd, ok := strings.Cut(v, "=")
	key, cmd = strings.TrimSpace(key), strings.TrimSpace(cmd)
	switch {
	case !ok || key == "":
		return fmt.Errorf("--role %q: want ENDPOINT=COMMAND, e.g. cloud.0='node my-cloud.js'", v)
	case cmd == "":
		return fmt.Errorf("--role %s: an empty command", key)
	case p[key] != "":
		return fmt.Errorf("--role %s: given twice", key)
	}
	p[key] = cmd
	return nil
}

// Check refuses a program for a process the plan does not have (with perProc agents per
// process), naming the processes it has.
func (p Programs) Check(pl *plan.Plan, perProc int) error {
	keys := ProcessKeys(pl, perProc)
	var unknown []string
	for k := range p {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		for k := range p {
			for _, c := range pl.Scenario.Faults.Crashes {
				if c.Proc == k {
					return fmt.Errorf("--role %s: scenario %s crashes it (faults.crashes) and restarts it from dpsim's checkpoint, which a program of yours does not write; drop the --role or the crash", k, pl.Scenario.Name)
				}
			}
		}
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("--role %s: no such process in scenario %s (its processes: %s)", strings.Join(unknown, ", "),
		pl.Scenario.Name, strings.Join(keys, ", "))
}

// command returns the command that starts process key with args (its role name first, as
// dpsim's own child gets them): the user's program when there is one, else exe.
func (p Programs) command(exe, key string, args []string) *exec.Cmd {
	if prog, ok := p[key]; ok {
		// "$@" hands the program the launcher's arguments as they are, whatever its quoting
		return exec.Command("/bin/sh", append([]string{"-c", prog + ` "$@"`, "sh"}, args[1:]...)...)
	}
	return exec.Command(exe, args...)
}
