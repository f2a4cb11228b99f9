// Package pgserver runs a throwaway PostgreSQL cluster for end-to-end
// tests that must stop and start it (readiness flipping when the schema
// store goes away): initdb in a temp dir (as the postgres user when the
// test runs as root, since PostgreSQL refuses root), pg_ctl start on a free
// loopback port with fsync off, Stop and Start by pg_ctl, and removal at
// test cleanup. Recipe: /work/shared/TESTING.md.
//
// When PostgreSQL cannot start, Start fails the test if the CI
// environment variable is set and skips it otherwise.
//
// (schemaregistry/internal/pgtest serves the registry's own tests with one
// shared cluster per test binary; it is internal and cannot stop and
// restart a cluster, hence this package.)
package pgserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

// Server is one cluster, owned by one test.
type Server struct {
	t    testing.TB
	dir  string
	bin  string
	port int
	asPG bool
}

// Start initializes and starts a cluster; the test's cleanup stops it
// and removes its files.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := start(t)
	harness.RequireService(t, "PostgreSQL", err)
	return s
}

func start(t testing.TB) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ferry-pgserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{t: t, dir: dir, bin: bin, asPG: os.Geteuid() == 0}
	t.Cleanup(s.remove)
	if s.asPG {
		if err := chownToPostgres(dir); err != nil {
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// DSN is the URL of the postgres database.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop stops the server (fast shutdown: clients are disconnected).
func (s *Server) Stop() {
	s.t.Helper()
	if out, err := s.run("pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		s.t.Fatalf("pg_ctl stop: %v: %s", err, out)
	}
}

// Restart starts a stopped server again, on the same port and data.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) start() error {
	out, err := s.run("pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off", s.port, s.dir),
		"start")
	if err != nil {
		logTail, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		if len(logTail) > 2000 {
			logTail = logTail[len(logTail)-2000:]
		}
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, out, logTail)
	}
	return nil
}

// remove stops the server if it runs and deletes its files.
func (s *Server) remove() {
	if _, err := os.Stat(filepath.Join(s.dataDir(), "postmaster.pid")); err == nil {
		s.run("pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "-t", "30", "stop")
	}
	os.RemoveAll(s.dir)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) run(tool string, args ...string) (string, error) {
	path := filepath.Join(s.bin, tool)
	cmd := exec.Command(path, args...)
	if s.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// binDir finds the newest installed PostgreSQL's bin directory.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) int { n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return n }
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no /usr/lib/postgresql/*/bin/pg_ctl (apt-get install postgresql)")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("no postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}
