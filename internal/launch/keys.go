package launch

import (
	"encoding/json"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// signingKeys are the keys of a session with --sign.
type signingKeys struct {
	seeds    map[string]string // the processes' signing seeds, by sender (through their environment)
	file     string            // the public keys of every sender (--sign-keys)
	launcher string            // the launcher's own seed (ctl.episode, ctl.stop, the challenger's x0)
}

// makeKeys gives every process a signing key and writes the public keys beside their files.
func (s *Session) makeKeys() error {
	s.keys.seeds = map[string]string{}
	pub := map[string]string{}
	for _, p := range s.procs {
		k, err := bus.NewSigningKey()
		if err != nil {
			return err
		}
		key := endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()
		s.keys.seeds[key] = k.Seed
		if p.Role == endpoint.Agent { // a host signs for every agent it hosts, and for its block
			for i := p.ID; i <= p.LastAgent; i++ {
				pub[endpoint.Endpoint{Role: endpoint.Agent, ID: i}.String()] = k.Public
			}
			pub[endpoint.Endpoint{Role: endpoint.Block, ID: p.ID}.String()] = k.Public
		} else {
			pub[key] = k.Public
		}
	}
	l, err := bus.NewSigningKey()
	if err != nil {
		return err
	}
	s.keys.launcher, pub[wire.LauncherSender] = l.Seed, l.Public
	data, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return err
	}
	s.keys.file = filepath.Join(s.cfg.Dir, "public-keys.json")
	return atomicfile.WriteFile(s.keys.file, data, 0o644)
}

// x0Keys are the curve keys that seal the challenger's x(0) (bus.CurveKey.Seal): the launcher's, and
// one per process that owns a part of x(0) (the plant; each agent host), whose seed reaches it
// through its environment (or its attach credentials file), never argv.
type x0Keys struct {
	launcher bus.CurveKey
	seeds    map[string]bus.CurveKey // by sender ("plant.0", an agent host under its first agent)
	to       []contract.X0Recipient  // every box of an x0 message
}

// makeX0Keys gives the launcher and every process that receives x(0) a curve key.
func (s *Session) makeX0Keys() error {
	l, err := bus.NewCurveKey()
	if err != nil {
		return err
	}
	s.x0 = x0Keys{launcher: l, seeds: map[string]bus.CurveKey{}}
	for _, p := range s.procs {
		first, last := p.ID, p.LastAgent
		switch p.Role {
		case endpoint.Plant:
			first, last = 0, s.cfg.Plan.System.Nx()-1
		case endpoint.Agent:
		default:
			continue // the cloud and the eavesdropper never receive x(0)
		}
		k, err := bus.NewCurveKey()
		if err != nil {
			return err
		}
		ep := endpoint.Endpoint{Role: p.Role, ID: p.ID}
		s.x0.seeds[ep.String()] = k
		s.x0.to = append(s.x0.to, contract.X0Recipient{Endpoint: ep, First: first, Last: last, Public: k.Public})
	}
	return nil
}

// x0Env is the environment that hands process p its curve seed and the launcher's public
// curve key (nil: p receives no x(0)).
func (s *Session) x0Env(p *Proc) []string {
	k, ok := s.x0.seeds[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()]
	if !ok {
		return nil
	}
	return k.Env(s.x0.launcher.Public)
}
