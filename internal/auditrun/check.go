package auditrun

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The checks of the settings that combine: each refuses, as a usage error naming the flags,
// settings the audit cannot play.

// CheckWire checks the wire engine's flags: --role (which needs it), --timeout, --encoding (by
// default binary, json with --role) and --inflight.
func (o *Options) CheckWire() error {
	if len(o.Roles) > 0 && o.Engine != audit.EngineWire {
		return cli.UsageError("--role starts a program in place of a role process: it needs --engine wire (the fast engine plays in-process, with no role processes)")
	}
	if o.Timeout <= 0 {
		return cli.UsageError("--timeout must be > 0")
	}
	if o.Encoding == "" {
		o.Encoding = "binary"
		if len(o.Roles) > 0 {
			o.Encoding = "json" // what dpsim run gives a program: one may decode json only (docs/protocol.md 2.1)
		}
	}
	if _, err := wire.ParseEncoding(o.Encoding); err != nil {
		return cli.UsageError("--encoding: %v", err)
	}
	if o.Inflight < 1 || o.Inflight > contract.MaxInflight {
		return cli.UsageError("--inflight %d: want 1..%d trials in flight", o.Inflight, contract.MaxInflight)
	}
	return nil
}

// CheckOneRun refuses the flags --one-run does not combine with (it plays one episode
// in-process); set holds the flags given.
func (o *Options) CheckOneRun(set map[string]bool) error {
	if !o.OneRun {
		if set["guesses"] {
			return cli.UsageError("--guesses needs --one-run")
		}
		return nil
	}
	for _, f := range []string{"trials", "episodes-per-trial", "episodes-per-trial-sweep", "selection"} {
		if set[f] {
			return cli.UsageError("--one-run plays ONE episode (one canary per agent): --%s does not apply", f)
		}
	}
	if o.Engine != audit.EngineFast || o.Farm.Enabled() {
		return cli.UsageError("--one-run plays in-process with the fast engine (no --engine wire, no --dispatch)")
	}
	if o.Guesses < 0 {
		return cli.UsageError("--guesses %d: want >= 1 per side (0: the rule fixed from the claim)", o.Guesses)
	}
	return nil
}

// CheckUI checks the live view's flags.
func (o *Options) CheckUI() error {
	switch {
	case o.UIHold < 0:
		return cli.UsageError("--ui-hold %v: must be >= 0", o.UIHold)
	case o.UIHold > 0 && o.UI == "":
		return cli.UsageError("--ui-hold keeps the live view up after the audit: give --ui")
	case o.UI != "" && o.OneRun:
		return cli.UsageError("--ui shows an audit of many trials: --one-run plays one episode")
	case o.UIPublic && o.UI == "":
		return cli.UsageError("--ui-public allows a live view on the network: give --ui=HOST:PORT")
	}
	if o.UI != "" {
		if _, err := live.PublicAddr(o.UI, "--ui-public", o.UIPublic); err != nil {
			return cli.UsageError("--ui %s: %v", o.UI, err)
		}
	}
	return nil
}
