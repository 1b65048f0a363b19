// Package role is the four role commands - `dpsim plant`, `dpsim cloud`, `dpsim agent` and
// `dpsim eavesdropper`, also built as the binaries cmd/plant, cmd/cloud, cmd/agent and
// cmd/eavesdropper (Main) - and nothing more: their flags, usage texts and exit codes. Each
// parses its flags into a roleproc.Config and calls roleproc.Serve; the role process itself
// (connection, episodes, transport, pacing, crashes, files) is package internal/roleproc.
//
// The same code runs as `dpsim <role>` and as the binaries cmd/plant, ... (Main): the usage
// text then names the binary. --help prints to stdout; a usage error exits 2, any other
// failure 1.
package role
