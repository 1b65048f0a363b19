package dpsimtest

import (
	"bytes"
	"os/exec"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// SyncBuffer is a bytes.Buffer a test may read while a process's output is copied into it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Bytes returns a copy of what was written so far.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Background starts cmd and returns a channel closed when it has exited; when the test ends
// the process is killed if it still runs (and waited for), so no test leaves one behind.
func Background(t testing.TB, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return done
}
