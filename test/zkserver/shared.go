package zkserver

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

// Shared is one server per test binary: the first Require starts it (so
// binaries and fuzz workers that need none never pay for it) and Main
// stops it after the tests. Its zero value is ready to use.
type Shared struct {
	mainCalled bool
	once       sync.Once
	srv        *Server
	err        error
}

// Main runs the tests, then stops the server if one was started; call it
// from TestMain: os.Exit(zks.Main(m)).
func (s *Shared) Main(m *testing.M) int {
	s.mainCalled = true
	code := m.Run()
	if s.srv != nil {
		if err := s.srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "zkserver: close:", err)
		}
	}
	return code
}

// Require returns the shared server, starting it on first use; it fails
// the test under CI and skips it elsewhere when none could be started.
// Tests sharing it isolate themselves by chroot, and must not stop,
// freeze or restart it (use Start for that).
func (s *Shared) Require(t testing.TB) *Server {
	t.Helper()
	if !s.mainCalled {
		t.Fatal("zkserver: call Shared.Main from TestMain, so the server is stopped at the end")
	}
	s.once.Do(func() { s.srv, s.err = Launch() })
	if s.srv == nil {
		harness.RequireService(t, "ZooKeeper", s.err)
	}
	return s.srv
}
