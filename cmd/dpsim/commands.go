package main

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/cmd/calibrate"
)

// commands is the table of subcommands; each lives in its own internal/cmd package.
func commands() map[string]cli.Command {
	list := []cli.Command{
		calibrate.Command,
	}
	m := make(map[string]cli.Command, len(list))
	for _, c := range list {
		m[c.Name] = c
	}
	return m
}
