package launch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
)

// SecretFiles says what became of the files holding secrets that a run's processes left in
// their directories (summary.json "secrets"): the plan files of the plant and the agents (their
// x(0) and the run seed), the checkpoints of crashed processes (their noise draw) and the attach
// credentials files (passwords, signing and curve seeds). They are removed when the run ends,
// however it ends, unless the user keeps them (--keep-secrets); a launcher that is killed
// cannot remove them.
type SecretFiles struct {
	// Kept: --keep-secrets; Files are then the files kept, else those removed.
	Kept    bool     `json:"kept"`
	Removed int      `json:"removed"`
	Files   []string `json:"files,omitempty"` // relative to the output directory, sorted
}

// IsSecretFile reports whether a file named name, in a process directory, holds a secret:
// the plan file of a plant or agent process, a checkpoint, an attach credentials file.
func IsSecretFile(name string) bool {
	switch {
	case strings.HasSuffix(name, contract.CheckpointFile("")), strings.HasSuffix(name, ".env"):
		return true
	case strings.HasSuffix(name, contract.PlanFile("")):
		for _, r := range []endpoint.Role{endpoint.Plant, endpoint.Agent} {
			if strings.HasPrefix(name, r.String()) { // plant-0, agent-3, agents-0-4
				return true
			}
		}
	}
	return false
}

// RemoveSecrets removes the secret files (IsSecretFile) below dir, a process directory (its
// point directories and attach/ included), or with keep only lists them; paths relative to
// base go into s. It adds to s and returns the errors of the files it could not remove.
func RemoveSecrets(s *SecretFiles, base, dir string, keep bool) error {
	s.Kept = keep
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !IsSecretFile(d.Name()) {
			return nil
		}
		rel, rerr := filepath.Rel(base, path)
		if rerr != nil {
			rel = path
		}
		if !keep {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				return nil
			}
			s.Removed++
		}
		s.Files = append(s.Files, rel)
		return nil
	})
	sort.Strings(s.Files)
	if !keep {
		_ = os.Remove(filepath.Join(dir, AttachDir)) // only when empty
	}
	return errors.Join(append(errs, err)...)
}
