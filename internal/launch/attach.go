package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// AttachDir is the directory, below a point's process directory, where attach mode writes
// each process's credentials file (<name>.env, mode 0600) and commands.sh.
const AttachDir = "attach"

// CommandsFile is the file of attach mode's commands, one line per role process.
const CommandsFile = "commands.sh"

// CheckAttachable refuses what attach mode cannot do: restart a crashed process (the
// launcher does not own it) or put a proxy in front of one (the process picks its server).
func CheckAttachable(s *scenario.Scenario) error {
	switch {
	case len(s.Faults.Crashes) > 0:
		return fmt.Errorf("scenario %s: faults.crashes: --attach cannot kill and restart processes it did not start; drop --attach or the crashes", s.Name)
	case len(s.Faults.Proxies) > 0:
		return fmt.Errorf("scenario %s: faults.proxies: --attach cannot put a proxy in front of processes it did not start; drop --attach or the proxies", s.Name)
	}
	return nil
}

// AttachCommand returns the command line that starts process p of an attach-mode session:
// the launcher's own child command without --parent-pid (the process is not its child),
// with absolute paths, and --credentials naming its credentials file when it has any. The
// line holds no secret.
func (s *Session) AttachCommand(p *Proc) ([]string, error) {
	exe := s.cfg.Exe
	if exe == "" {
		exe = "dpsim"
	}
	args := s.args(p)
	out := []string{exe}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--parent-pid":
			i++
			continue
		case "--plan", "--out", "--sign-keys", "--tls-ca", "--tls-cert", "--tls-key":
			if i+1 < len(args) {
				abs, err := filepath.Abs(args[i+1])
				if err != nil {
					return nil, err
				}
				out = append(out, args[i], abs)
				i++
				continue
			}
		}
		out = append(out, args[i])
	}
	if c := s.credentials(p); c != (bus.Credentials{}) {
		path, err := filepath.Abs(s.credentialsPath(p))
		if err != nil {
			return nil, err
		}
		out = append(out, "--credentials", path)
	}
	return out, nil
}

func (s *Session) credentialsPath(p *Proc) string {
	return filepath.Join(s.cfg.Dir, AttachDir, p.Name+".env")
}

// credentials are what p connects and signs with, and opens its x(0) with (zero: nothing).
func (s *Session) credentials(p *Proc) bus.Credentials {
	key := endpoint.Endpoint{Role: p.Role, ID: p.ID}.String()
	u := s.cfg.Users[key]
	c := bus.Credentials{User: u.Name, Password: u.Password, SignSeed: s.keys.seeds[key]}
	if k, ok := s.x0.seeds[key]; ok {
		c.X0Seed, c.X0Sender = k.Seed, s.x0.launcher.Public
	}
	return c
}

// announceAttach writes every process's credentials file (mode 0600) and commands.sh, and
// prints the commands: what a person or a scheduler runs to start the processes this
// session waits for.
func (s *Session) announceAttach() error {
	dir := filepath.Join(s.cfg.Dir, AttachDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# dpsim run --attach: the %d role processes of run %s (point %d).\n", len(s.procs), s.cfg.Run, s.cfg.Point)
	b.WriteString("# Start each once, in any order, on any host that reaches the NATS server and sees this\n")
	b.WriteString("# --out directory at the same path; the launcher waits for all of them, then runs the\n")
	b.WriteString("# episodes. Credentials are in the --credentials files (mode 0600), never on this line;\n")
	b.WriteString("# each process's plan - the resolved design and only its own private values - in its --plan file.\n")
	for _, p := range s.procs {
		if c := s.credentials(p); c != (bus.Credentials{}) {
			if err := bus.WriteCredentials(s.credentialsPath(p), c); err != nil {
				return fmt.Errorf("credentials of %s: %w", p.Name, err)
			}
		}
		cmd, err := s.AttachCommand(p)
		if err != nil {
			return err
		}
		b.WriteString(shellJoin(cmd) + " &\n")
	}
	b.WriteString("wait\n")
	path := filepath.Join(dir, CommandsFile)
	if err := atomicfile.WriteFile(path, []byte(b.String()), 0o700); err != nil {
		return err
	}
	if w := s.cfg.Announce; w != nil {
		fmt.Fprintf(w, "dpsim run --attach: waiting up to %v for %d processes of run %s; start each (in any order):\n",
			s.cfg.StartTimeout, len(s.procs), s.cfg.Run)
		for _, p := range s.procs {
			cmd, _ := s.AttachCommand(p)
			fmt.Fprintf(w, "  %s\n", shellJoin(cmd))
		}
		fmt.Fprintf(w, "(also in %s)\n", path)
	}
	s.cfg.Log.Info().Str("commands", path).Int("processes", len(s.procs)).Dur("timeout", s.cfg.StartTimeout).
		Msg("attach: waiting for the role processes")
	return nil
}

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// RemoveAttach removes what announceAttach wrote below dir (a point's process directory):
// the credentials files and, unless keepCommands, commands.sh, then the directory when it is
// empty. A session removes the credentials when it ends (they are of no use after the run,
// and a secret should not outlive its use) and keeps commands.sh, the record of how the roles
// were started (it holds no secret: the credentials are in the files it names);
// cleanOutputs removes both, and those a killed launcher left, before the next run.
func RemoveAttach(dir string, keepCommands bool) error {
	d := filepath.Join(dir, AttachDir)
	entries, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".env") || e.Name() == CommandsFile && !keepCommands) {
			if err := os.Remove(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	_ = os.Remove(d) // only when empty
	return errors.Join(errs...)
}
