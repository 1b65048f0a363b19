package launch

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/wire"
)

// planFiles are the plan files a session wrote for its processes.
type planFiles struct {
	digests map[string]uint64 // the digest of each process's plan file (plan.FileDigest), by sender
}

// planPath is process p's plan file.
func (s *Session) planPath(p *Proc) string {
	return filepath.Join(s.cfg.Dir, contract.PlanFile(p.Name))
}

// writePlans ships each process its slice of the plan, computed once here: a plan file with
// the resolved design (no process repeats the sensitivity enumeration, the Sigma design or the
// graph's spectrum) and only the private values that process owns - the plant its x(0), an
// agent host its agents' x_i(0), the cloud and the eavesdropper none (nor the seed). Owner-only
// permissions: the file holds private initial states.
//
// The files state this run, not the scenario file: its number of episodes (SessionConfig.Runs)
// and its resolved seed (the plant's and agents' noise streams; no process gets it on its
// command line, and the others' files leave it out).
func (s *Session) writePlans() error {
	run := s.runPlan()
	for _, p := range s.procs {
		var buf bytes.Buffer
		if err := run.WriteFile(&buf, plan.KeepFor(p.Role, p.ID, p.LastAgent)); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if err := atomicfile.WriteFile(s.planPath(p), buf.Bytes(), 0o600); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if s.plans.digests == nil {
			s.plans.digests = map[string]uint64{}
		}
		s.plans.digests[endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()] = plan.FileDigest(buf.Bytes())
	}
	return nil
}

// PlanDigest is the digest of the plan file the session wrote for sender ("eavesdropper.0";
// plan.FileDigest, what its ctl.ready says; 0: none written).
func (s *Session) PlanDigest(sender string) uint64 { return s.plans.digests[sender] }

// runPlan is the session's plan with this run's episodes and seed in its scenario.
func (s *Session) runPlan() *plan.Plan {
	p := *s.cfg.Plan
	p.Scenario = s.cfg.Plan.Scenario.Clone()
	if s.cfg.Runs > 0 {
		p.Scenario.Runs = s.cfg.Runs
	}
	p.Scenario.Seed = s.cfg.Seeds.Run
	return &p
}

// checkPlan records a conflict when a process's ctl.ready names a plan file other than the one
// written for it (a stale file of an earlier run, read by a process started before this
// launcher wrote its own) and returns false; a process that resolved the scenario itself
// (digest 0) is accepted.
func (s *Session) checkPlan(m *wire.Message) bool {
	ready, _ := contract.ParseReady(m) // its pid was checked on arrival
	got, want := ready.Plan, s.plans.digests[m.Sender]
	if got == 0 || got == want {
		return true
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	if s.ctl.conflict == nil {
		p := s.byKey[m.Sender]
		if s.cfg.Attach { // a process started by hand may have read the file of an earlier run
			s.ctl.conflict = fmt.Errorf("run %s: %s runs another plan file than the one this launcher wrote (%s; digest %012x, want %012x): "+
				"it read a stale file of an earlier run; start it again now that the file is written", s.cfg.Run, m.Sender,
				s.planPath(p), got, want)
		} else { // this launcher wrote the file before it started the process: no stale file
			s.ctl.conflict = fmt.Errorf("%s: its ctl.ready says plan digest %012x, but the plan file it was given (%s) has digest %012x: "+
				"it computes the digest wrong or reads another file (docs/protocol.md 3: the first 48 bits of the SHA-256 of the file's bytes as read)",
				p.who(), got, s.planPath(p), want)
		}
	}
	return false
}
