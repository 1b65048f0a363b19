package role

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/bus"
)

// The table entries of the four role commands (dpsim plant | cloud | agent | eavesdropper).
var (
	PlantCommand = cli.Command{Name: "plant", Summary: "run the plant of a cloud-control run as a process (holds the true state)", Run: RunPlant}
	CloudCommand = cli.Command{Name: "cloud", Summary: "run the cloud controller of a cloud-control run as a process", Run: RunCloud}
	AgentCommand = cli.Command{Name: "agent", Summary: "run consensus agent(s) as a process (--agents i..j hosts several)", Run: RunAgent}
	EveCommand   = cli.Command{Name: "eavesdropper", Summary: "run the eavesdropper as a process: sniffs dpsim.<run>.> and estimates x(0)", Run: RunEavesdropper}
)

// Commands lists the role commands.
var Commands = []cli.Command{PlantCommand, CloudCommand, AgentCommand, EveCommand}

// RunPlant is `dpsim plant`.
func RunPlant(args []string, _, stderr io.Writer) error {
	return serve(bus.RolePlant, func() runner { return &plantRunner{} }, args, stderr)
}

// RunCloud is `dpsim cloud`.
func RunCloud(args []string, _, stderr io.Writer) error {
	return serve(bus.RoleCloud, func() runner { return &cloudRunner{} }, args, stderr)
}

// RunAgent is `dpsim agent`.
func RunAgent(args []string, _, stderr io.Writer) error {
	return serve(bus.RoleAgent, func() runner { return &agentRunner{} }, args, stderr)
}

// RunEavesdropper is `dpsim eavesdropper`.
func RunEavesdropper(args []string, _, stderr io.Writer) error {
	return serve(bus.RoleEavesdropper, func() runner { return &eveRunner{} }, args, stderr)
}

// Main runs c as a program (cmd/plant, cmd/cloud, ...): exit 0 on success or --help, 2 on a
// usage error, 1 on any other failure - the same codes as dpsim.
func Main(c cli.Command) {
	err := c.Run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, cli.ErrUsage):
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}
