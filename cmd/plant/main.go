// Command plant is `dpsim plant` as its own binary: see `plant --help`.
package main

import "github.com/dpsim/dpsim/internal/cmd/role"

func main() { role.Main(role.PlantCommand) }
