// Package cli holds what every dpsim subcommand shares: the command table entry, flag-set
// construction with a usage text that explains every flag, JSON output and logging set-up.
package cli
