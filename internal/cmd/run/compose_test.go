package run_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
)

// composeFile is the repository's docker-compose.yml, decoded (merge keys resolved).
type composeFile struct {
	Services map[string]struct {
		Image       string                    `yaml:"image"`
		Build       any                       `yaml:"build"`
		Command     []string                  `yaml:"command"`
		Volumes     []string                  `yaml:"volumes"`
		DependsOn   map[string]map[string]any `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func readCompose(t *testing.T) (string, *composeFile) {
	t.Helper()
	path := filepath.Join(dpsimtest.Root(), "docker-compose.yml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(data, &c))
	return path, &c
}

// docker-compose.yml runs the launcher with --attach and every role as its own service with
// exactly the commands the launcher prints for those flags. This test runs the compose
// layout without docker: a real 3-server cluster stands in for n1..n3, the launcher runs the
// compose command, its commands.sh must equal the compose services' commands, and the
// processes started from the compose commands complete the run.
func TestComposeMatchesAttach(t *testing.T) {
	_, c := readCompose(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		s, ok := c.Services[n]
		require.True(t, ok, "NATS service %s", n)
		require.NotNil(t, s.Healthcheck, "%s has a healthcheck", n)
		require.Contains(t, strings.Join(s.Command, " "), "--routes", "%s is a cluster member", n)
	}
	require.Contains(t, c.Volumes, "results", "a named volume for the outputs")
	roles := []string{"plant", "cloud", "eavesdropper"}
	for _, name := range append([]string{"launcher"}, roles...) {
		s := c.Services[name]
		require.NotEmpty(t, s.Command, name)
		require.Contains(t, s.Volumes, "results:/out", name)
		for _, n := range []string{"n1", "n2", "n3"} {
			require.Equal(t, "service_healthy", s.DependsOn[n]["condition"], "%s waits for %s", name, n)
		}
	}
	for _, r := range roles {
		require.Equal(t, "service_healthy", c.Services[r].DependsOn["launcher"]["condition"], "%s starts once the launcher wrote the plan files", r)
	}
	require.Contains(t, strings.Join(c.Services["launcher"].Healthcheck.Test, " "), launch.CommandsFile)
	require.Equal(t, "run", c.Services["launcher"].Command[0])
	require.Contains(t, c.Services["launcher"].Command, "--attach")

	cl, err := bus.StartCluster(3, bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(cl.Shutdown)
	urls := strings.Split(cl.URLs(), ",")
	out := t.TempDir()
	scenarios := filepath.Join(dpsimtest.Root(), "scenarios")
	// What is a container's path or host name here.
	local := func(args []string) []string {
		r := make([]string, len(args))
		for i, a := range args {
			for k, n := range []string{"n1", "n2", "n3"} {
				a = strings.ReplaceAll(a, "nats://"+n+":4222", urls[k])
			}
			switch {
			case a == "/out" || strings.HasPrefix(a, "/out/"):
				a = out + strings.TrimPrefix(a, "/out")
			case strings.HasPrefix(a, "/scenarios/"):
				a = filepath.Join(scenarios, strings.TrimPrefix(a, "/scenarios/"))
			}
			r[i] = a
		}
		return r
	}
	// fewer episodes than the scenario's 500: the role commands do not depend on --runs
	l := start(t, append(local(c.Services["launcher"].Command), "--runs", "40")...)
	_, lines := awaitCommands(t, l, filepath.Join(out, "procs", launch.AttachDir, launch.CommandsFile))
	byRole := map[string][]string{}
	for _, line := range lines {
		f := strings.Fields(line)
		require.Equal(t, dpsimBin, f[0])
		byRole[f[1]] = f[1:]
	}
	require.Len(t, byRole, len(roles))
	var procs []*exec.Cmd
	for _, r := range roles {
		want := local(c.Services[r].Command)
		require.Equal(t, byRole[r], want, "docker-compose.yml's %s command is not what `dpsim run --attach` prints for the launcher's flags: update it", r)
		procs = append(procs, startAttached(t, dpsimBin, want...))
	}
	sum := awaitAttached(t, l, procs, out)
	require.Equal(t, 3, len(strings.Split(sum.NATSURL, ",")))
}

// `docker compose config` validates the file where the compose plugin (or the standalone
// docker-compose) is installed; elsewhere the test says why it skipped.
func TestComposeConfig(t *testing.T) {
	path, _ := readCompose(t)
	var cmd *exec.Cmd
	if exec.Command("docker", "compose", "version").Run() == nil {
		cmd = exec.Command("docker", "compose", "-f", path, "config", "--quiet")
	} else if _, err := exec.LookPath("docker-compose"); err == nil {
		cmd = exec.Command("docker-compose", "-f", path, "config", "--quiet")
	} else {
		t.Skip("neither `docker compose` nor docker-compose is installed")
	}
	cmd.Dir = filepath.Dir(path)
	outp, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outp)
}
