// Command cloud is `dpsim cloud` as its own binary: see `cloud --help`.
package main

import "github.com/dpsim/dpsim/internal/cmd/role"

func main() { role.Main(role.CloudCommand) }
