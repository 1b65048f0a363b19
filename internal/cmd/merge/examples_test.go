package merge

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// job is what the tests read of a Kubernetes Job manifest.
type job struct {
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Command []string `yaml:"command"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// readJob parses examples/kubernetes/NAME and returns it with its one container's command and
// environment (env: NAME=VALUE).
func readJob(t *testing.T, name string) (*job, []string, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dpsimtest.Root(), "examples", "kubernetes", name))
	require.NoError(t, err)
	var j job
	require.NoError(t, yaml.Unmarshal(data, &j), name)
	cs := j.Spec.Template.Spec.Containers
	require.Len(t, cs, 1, name)
	var env []string
	for _, e := range cs[0].Env {
		env = append(env, e.Name+"="+e.Value)
	}
	require.NotEmpty(t, cs[0].Command, name)
	return &j, cs[0].Command, env
}

// local is the environment the examples run in here: dpsim (and a stub srun that runs its
// arguments) first on PATH, the scenario and the shards' directory local, fewer trials.
func local(t *testing.T, dir string) []string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.Symlink(dpsimBin, filepath.Join(bin, "dpsim")))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "srun"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755))
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "NATS_URL=",
		"SCENARIO=" + dpsimtest.Scenario("audit-vehicle-structured"), "TRIALS=1500", "SHARDS=" + filepath.Join(dir, "shards"),
		"OUT=" + filepath.Join(dir, "shards", "audit")}
}

// run runs argv in dir with env (later entries win) added to the environment.
func run(t *testing.T, dir string, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%v: %s", argv, out)
}

// unsharded runs the audit the examples shard, in one process, into dir/full.
func unsharded(t *testing.T, dir, seed string) string {
	full := filepath.Join(dir, "full")
	mustDpsim(t, "audit", dpsimtest.Scenario("audit-vehicle-structured"), "--seed", seed, "--trials", "1500", "--out", full)
	return full
}

// The Indexed Job of examples/kubernetes is 7 completions, indexed; its command run here for
// every JOB_COMPLETION_INDEX, then the merge Job's command, give the unsharded audit's outputs.
func TestKubernetesIndexedJob(t *testing.T) {
	dir := t.TempDir()
	j, cmd, env := readJob(t, "audit-indexed-job.yaml")
	require.Equal(t, "Indexed", j.Spec.CompletionMode)
	require.Equal(t, 7, j.Spec.Completions)
	require.Positive(t, j.Spec.Parallelism)
	require.Contains(t, strings.Join(cmd, " "), "$JOB_COMPLETION_INDEX/7")
	lenv := local(t, dir)
	env = append(env, lenv...)
	for i := range j.Spec.Completions {
		run(t, dir, append(env, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)), cmd...)
	}
	_, mcmd, menv := readJob(t, "merge-job.yaml")
	run(t, dir, append(menv, lenv...), mcmd...)
	seed := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SEED="); ok {
			seed = v
		}
	}
	require.NotEmpty(t, seed, "the manifest fixes SEED")
	sameOutputs(t, unsharded(t, dir, seed), filepath.Join(dir, "shards", "audit"), zeroed)
}

// The Slurm array of examples/slurm is tasks 0-6; the script run with bash for every
// SLURM_ARRAY_TASK_ID (srun a stub that runs its arguments), then the merge script, give the
// unsharded audit's outputs.
func TestSlurmArray(t *testing.T) {
	dir := t.TempDir()
	ex := filepath.Join(dpsimtest.Root(), "examples", "slurm")
	script, err := os.ReadFile(filepath.Join(ex, "audit-array.sbatch"))
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^#SBATCH --array=0-6$`), string(script))
	require.Contains(t, string(script), `--shard "$SLURM_ARRAY_TASK_ID/7"`)
	seed := regexp.MustCompile(`SEED=\$\{SEED:-(\d+)\}`).FindStringSubmatch(string(script))
	require.Len(t, seed, 2, "the script fixes SEED")
	env := local(t, dir)
	for i := range 7 {
		run(t, dir, append(env, fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i)), "bash", filepath.Join(ex, "audit-array.sbatch"))
	}
	merge, err := os.ReadFile(filepath.Join(ex, "merge.sbatch"))
	require.NoError(t, err)
	require.Contains(t, string(merge), "dpsim merge")
	run(t, dir, env, "bash", filepath.Join(ex, "merge.sbatch"))
	sameOutputs(t, unsharded(t, dir, seed[1]), filepath.Join(dir, "shards", "audit"), zeroed)
	submit, err := os.ReadFile(filepath.Join(ex, "submit.sh"))
	require.NoError(t, err)
	require.Contains(t, string(submit), "--dependency=afterok:")
}
