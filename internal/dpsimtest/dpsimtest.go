package dpsimtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
