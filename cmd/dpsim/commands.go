package main

import (
	"github.com/dpsim/dpsim/internal/cli"
	auditcmd "github.com/dpsim/dpsim/internal/cmd/audit"
	"github.com/dpsim/dpsim/internal/cmd/calibrate"
	johncmd "github.com/dpsim/dpsim/internal/cmd/john"
	mergecmd "github.com/dpsim/dpsim/internal/cmd/merge"
	replaycmd "github.com/dpsim/dpsim/internal/cmd/replay"
	"github.com/dpsim/dpsim/internal/cmd/role"
	runcmd "github.com/dpsim/dpsim/internal/cmd/run"
	vecsumcmd "github.com/dpsim/dpsim/internal/cmd/vecsum"
	viewcmd "github.com/dpsim/dpsim/internal/cmd/view"
	workercmd "github.com/dpsim/dpsim/internal/cmd/worker"
)

// commands is the table of subcommands; each lives in its own internal/cmd package.
func commands() map[string]cli.Command {
	list := []cli.Command{
		calibrate.Command,
		auditcmd.Command,
		johncmd.Command,
		vecsumcmd.Command,
		runcmd.Command,
		viewcmd.Command,
		replaycmd.Command,
		role.PlantCommand,
		role.CloudCommand,
		role.AgentCommand,
		role.EveCommand,
		workercmd.Command,
		mergecmd.New(runcmd.ParseArgs),
	}
	m := make(map[string]cli.Command, len(list))
	for _, c := range list {
		m[c.Name] = c
	}
	return m
}
