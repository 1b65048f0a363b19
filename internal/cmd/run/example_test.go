package run_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/internal/cmd/run"
)

// `dpsim run --engine fast` runs the scenario in-process and writes the same files as a NATS
// run: summary.json, trace.jsonl, report.md and the figures.
func Example() {
	dir, _ := os.MkdirTemp("", "dpsim-run-example")
	defer os.RemoveAll(dir)
	err := run.Run([]string{"../../../scenarios/cloud-vehicle.yaml", "--engine", "fast", "--runs", "20",
		"--out", dir, "--log-level", "warn"}, io.Discard, os.Stderr)
	fmt.Println("error:", err)
	var sum struct {
		Scenario string `json:"scenario"`
		Seed     uint64 `json:"seed"`
		Runs     int    `json:"runs"`
		Steps    int    `json:"steps"`
		Files    struct {
			Traces []string `json:"traces"`
			Report string   `json:"report"`
		} `json:"files"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	_ = json.Unmarshal(data, &sum)
	fmt.Println(sum.Scenario, sum.Seed, sum.Runs, sum.Steps, sum.Files.Traces, sum.Files.Report)
	// Output:
	// error: <nil>
	// cloud-vehicle 53 20 100 [trace.jsonl] report.md
}
