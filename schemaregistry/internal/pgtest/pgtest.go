// Package pgtest shares one throwaway PostgreSQL cluster (test/pgserver)
// per test binary, started on first use and stopped by Main.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and in a test, pgtest.DSN(t) returns a fresh database (the cluster
// starts on first use, once per test binary). When the server
// could not start, the test fails if the CI environment variable is set
// and is skipped otherwise.
package pgtest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/pgserver"
)

// Server is the shared cluster (see test/pgserver, which runs it).
type Server = pgserver.Server

var (
	mainCalled bool
	startOnce  sync.Once
	shared     *Server
	startErr   error
	dbSeq      atomic.Int64
)

// Main runs the tests and stops the cluster if one was started. The
// cluster starts on the first Require, so test binaries (and fuzz
// workers) that need no database never start one.
func Main(m *testing.M) int {
	mainCalled = true
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	return code
}

// Require returns the shared server, starting it on first use; it fails
// the test under CI and skips it elsewhere when none could be started.
func Require(t testing.TB) *Server {
	t.Helper()
	if !mainCalled {
		t.Fatal("pgtest: call pgtest.Main from TestMain, so the cluster is stopped at the end")
	}
	startOnce.Do(func() { shared, startErr = pgserver.Launch() })
	if shared != nil {
		return shared
	}
	harness.RequireService(t, "PostgreSQL", startErr)
	return nil
}

// DSN creates a fresh database on the shared server and returns its URL.
func DSN(t testing.TB) string {
	t.Helper()
	s := Require(t)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.CreateDatabase(name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return s.URL(name)
}
