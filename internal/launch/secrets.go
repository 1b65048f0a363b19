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
	"github.com/dpsim/dpsim/pkg/record"
)

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
func RemoveSecrets(s *record.SecretFiles, base, dir string, keep bool) error {
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
