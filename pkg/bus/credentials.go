package bus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
)

// Credentials are what a process started by someone else (dpsim run --attach: by hand,
// docker-compose, a job scheduler) needs to join a run: its NATS user and password and, with
// signing, its signing seed; a process that receives the challenger's x(0) (the plant, an agent
// host), its curve seed and the launcher's public curve key (seal.go). They travel in a file
// readable by its owner only, never in argv.
type Credentials struct {
	User, Password string
	SignSeed       string
	X0Seed         string
	X0Sender       string
}

// The file is an env file: KEY=VALUE lines with the names of the environment a launcher
// hands its children (EnvUser, EnvPassword, EnvSignSeed, EnvX0Seed, EnvX0Sender), so the same file also works as a
// docker compose env_file or with `set -a; . FILE`.
var credentialKeys = []string{EnvUser, EnvPassword, EnvSignSeed, EnvX0Seed, EnvX0Sender}

// WriteCredentials writes c to path with mode 0600, atomically (internal/atomicfile). A
// missing directory is created with mode 0700.
func WriteCredentials(path string, c Credentials) error {
	var b bytes.Buffer
	b.WriteString("# dpsim credentials: keep private (mode 0600); read with --credentials\n")
	for _, kv := range [][2]string{{EnvUser, c.User}, {EnvPassword, c.Password}, {EnvSignSeed, c.SignSeed}, {EnvX0Seed, c.X0Seed}, {EnvX0Sender, c.X0Sender}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// a temporary file is created with mode 0600: the secret is never readable by others
	return atomicfile.WriteFile(path, b.Bytes(), 0o600)
}

// ReadCredentials reads a file of WriteCredentials. It refuses a file that others than its
// owner may read (on Unix), unknown keys and malformed lines, naming the line.
func ReadCredentials(path string) (Credentials, error) {
	var c Credentials
	st, err := os.Stat(path)
	if err != nil {
		return c, err
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return c, fmt.Errorf("credentials file %s: mode %04o lets others read it; chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return c, fmt.Errorf("credentials file %s: line %d: want KEY=VALUE", path, n)
		}
		switch strings.TrimSpace(k) {
		case EnvUser:
			c.User = v
		case EnvPassword:
			c.Password = v
		case EnvSignSeed:
			c.SignSeed = v
		case EnvX0Seed:
			c.X0Seed = v
		case EnvX0Sender:
			c.X0Sender = v
		default: // the value is not echoed: it may be a secret
			return c, fmt.Errorf("credentials file %s: line %d: unknown key %q (want one of %s)", path, n, k, strings.Join(credentialKeys, ", "))
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("credentials file %s: %w", path, err)
	}
	if c.Password != "" && c.User == "" {
		return c, fmt.Errorf("credentials file %s: %s without %s", path, EnvPassword, EnvUser)
	}
	return c, nil
}

// ConnectRetry connects like Connect, retrying every 0.5 s for up to retry while the server
// cannot be reached (a server that is still starting: docker-compose, a job scheduler; start
// order then does not matter). onRetry, if set, hears each failed attempt. Ending ctx ends
// the retries with an error wrapping context.Cause.
func ConnectRetry(ctx context.Context, url, name string, retry time.Duration, onRetry func(attempt int, err error), opts ...Option) (*Conn, error) {
	deadline := time.Now().Add(retry)
	for attempt := 1; ; attempt++ {
		c, err := Connect(url, name, opts...)
		if err == nil {
			return c, nil
		}
		if !time.Now().Before(deadline) {
			if attempt > 1 {
				return nil, fmt.Errorf("%w (gave up after %d attempts in %v)", err, attempt, retry)
			}
			return nil, err
		}
		if onRetry != nil {
			onRetry(attempt, err)
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("while connecting to the NATS server: %w", err), context.Cause(ctx))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ObserverContext is a NATS CLI context (the JSON of `nats context save`, which `nats
// --context FILE` reads from a path): the server and an observer's credentials, so that `nats
// --context FILE sub 'dpsim.>'` watches a run. Description says what it is for.
type ObserverContext struct {
	Description string `json:"description"`
	URL         string `json:"url"`
	User        string `json:"user"`
	Password    string `json:"password"`
	CA          string `json:"ca,omitempty"` // the CA file of a TLS server
}

// WriteObserverContext writes c to path (mode 0600: it holds a password), atomically.
func WriteObserverContext(path string, c ObserverContext) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "dpsim.>" as a reader expects it
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes(), 0o600)
}

// ReadObserverContext reads a file of WriteObserverContext.
func ReadObserverContext(path string) (ObserverContext, error) {
	var c ObserverContext
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("observer context %s: %w", path, err)
	}
	return c, nil
}
