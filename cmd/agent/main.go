// Command agent is `dpsim agent` as its own binary: see `agent --help`.
package main

import "github.com/dpsim/dpsim/internal/cmd/role"

func main() { role.Main(role.AgentCommand) }
