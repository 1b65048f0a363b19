package dpsimtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Main builds cmd/dpsim into a temporary directory, stores its path in *bin, runs the tests
// and removes the directory. Use it as: func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &bin)) }.
func Main(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "dpsim-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "dpsim")
	build := exec.Command("go", "build", "-o", *bin, "github.com/dpsim/dpsim/cmd/dpsim")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dpsim:", err)
		return 1
	}
	return m.Run()
}

// Scenario returns the path of scenarios/<name>.yaml in this repository.
func Scenario(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scenarios", name+".yaml")
}

// Root returns the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// outsideCloud is the stand-in cloud built once per test binary.
var outsideCloud struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// OutsideCloud builds internal/cmd/run/testdata/outsidecloud - a cloud written from the
// protocol with nats.go only, breakable on purpose (its -break modes) - once per test binary
// into dir (the dpsim binary's directory, which Main removes at the end) and returns its path.
func OutsideCloud(t testing.TB, dir string) string {
	t.Helper()
	outsideCloud.once.Do(func() {
		outsideCloud.path = filepath.Join(dir, "outsidecloud")
		build := exec.Command("go", "build", "-o", outsideCloud.path, "./internal/cmd/run/testdata/outsidecloud")
		build.Dir = Root()
		outsideCloud.out, outsideCloud.err = build.CombinedOutput()
	})
	if outsideCloud.err != nil {
		t.Fatalf("building internal/cmd/run/testdata/outsidecloud: %v\n%s", outsideCloud.err, outsideCloud.out)
	}
	return outsideCloud.path
}
