package launch

import (
	"encoding/json"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
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
			pub[endpoint.Endpoint{Role: endpoint.Host, ID: p.ID}.String()] = k.Public
		} else {
			pub[key] = k.Public
		}
	}
	l, err := bus.NewSigningKey()
	if err != nil {
		return err
	}
	s.keys.launcher, pub[bus.LauncherSender] = l.Seed, l.Public
	data, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return err
	}
	s.keys.file = filepath.Join(s.cfg.Dir, "public-keys.json")
	return atomicfile.WriteFile(s.keys.file, data, 0o644)
}
