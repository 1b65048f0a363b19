package main

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/cmd/calibrate"
	johncmd "github.com/dpsim/dpsim/internal/cmd/john"
	vecsumcmd "github.com/dpsim/dpsim/internal/cmd/vecsum"
)

// commands is the table of subcommands; each lives in its own internal/cmd package.
func commands() map[string]cli.Command {
	list := []cli.Command{
		calibrate.Command,
		johncmd.Command,
		vecsumcmd.Command,
	}
	m := make(map[string]cli.Command, len(list))
	for _, c := range list {
		m[c.Name] = c
	}
	return m
}
