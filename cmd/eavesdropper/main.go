// Command eavesdropper is `dpsim eavesdropper` as its own binary: see `eavesdropper --help`.
package main

import "github.com/dpsim/dpsim/internal/cmd/role"

func main() { role.Main(role.EveCommand) }
