package role

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/pkg/endpoint"
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
func RunPlant(args []string, stdout, stderr io.Writer) error {
	return serve(endpoint.Plant, args, stdout, stderr)
}

// RunCloud is `dpsim cloud`.
func RunCloud(args []string, stdout, stderr io.Writer) error {
	return serve(endpoint.Cloud, args, stdout, stderr)
}

// RunAgent is `dpsim agent`.
func RunAgent(args []string, stdout, stderr io.Writer) error {
	return serve(endpoint.Agent, args, stdout, stderr)
}

// RunEavesdropper is `dpsim eavesdropper`.
func RunEavesdropper(args []string, stdout, stderr io.Writer) error {
	return serve(endpoint.Eavesdropper, args, stdout, stderr)
}

// serve is the main of every role command: parse the flags, then run the process
// (roleproc.Serve).
func serve(role endpoint.Role, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(role, args, stdout, stderr)
	if err != nil {
		return err
	}
	return roleproc.Serve(cfg, stderr)
}

// program is the name the usage texts give the command: "dpsim plant" etc., or the
// program's own name when a role runs as its own binary (Main).
var program = map[endpoint.Role]string{}

// Main runs c as a program (cmd/plant, cmd/cloud, ...): the same code as `dpsim <role>`, with
// the binary's own name in its usage text; exit 0 on success or --help, 2 on a usage error, 1
// on any other failure - the same codes as dpsim.
func Main(c cli.Command) {
	if r, err := endpoint.ParseRole(c.Name); err == nil {
		program[r] = filepath.Base(os.Args[0])
	}
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
