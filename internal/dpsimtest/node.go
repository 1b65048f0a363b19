package dpsimtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodeExample returns the directory of examples/<name>, a role written in JavaScript, once node
// can run it: its dependencies are installed from its lockfile (npm ci) when one is missing from
// node_modules. Without node (or npm, when it must install) the test is skipped, saying how to
// install it - but in CI (CI=true), where .ci/run installs them, it fails. Tests of several
// packages (go test runs them at once) may ask for the same example: the check and the install
// hold a lock file, so only one of them installs and none sees a half-installed node_modules.
func NodeExample(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(Root(), "examples", name)
	need(t, "node", name)
	unlock, err := lockFile(filepath.Join(os.TempDir(), fmt.Sprintf("dpsim-npm-ci-%d-%s.lock", os.Getuid(), shortHash(dir))))
	if err != nil {
		t.Fatalf("locking the install of %s: %v", dir, err)
	}
	defer unlock()
	missing, err := missingDependency(dir)
	if err != nil {
		t.Fatal(err)
	}
	if missing == "" {
		return dir
	}
	need(t, "npm", name)
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s (%s is not installed): %v\n%s", dir, missing, err, out)
	}
	if missing, err = missingDependency(dir); err != nil || missing != "" {
		t.Fatalf("npm ci in %s did not install %s (%v)", dir, missing, err)
	}
	return dir
}

// need skips the test (fails it in CI) when tool is not on PATH.
func need(t testing.TB, tool, name string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		msg := tool + " is not on PATH: examples/" + name + " needs Node.js (Debian: apt-get install nodejs npm)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; CI must have it (.ci/run installs it)")
		}
		t.Skip(msg)
	}
}

// missingDependency returns a dependency of dir's package.json that node_modules lacks ("": none).
func missingDependency(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", err
	}
	for dep := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", dep, "package.json")); err != nil {
			return dep, nil
		}
	}
	return "", nil
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}
