// Package pgserver runs throwaway PostgreSQL clusters for tests, by the
// recipe in /work/shared/TESTING.md: initdb in a temp dir (as the postgres
// user when the test runs as root, since PostgreSQL refuses root), pg_ctl
// start on a free loopback port with the socket in that dir and fsync off,
// pg_ctl stop at the end. It is the one implementation: Start gives a test
// its own cluster (which it may stop and restart, e.g. to flip readiness);
// Launch gives a cluster to share, such as schemaregistry/internal/pgtest's
// one per test binary.
//
// When PostgreSQL cannot start, Start fails the test if the CI environment
// variable is set and skips it otherwise (harness.RequireService).
package pgserver

import (
	"context"
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
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-mq/ferry/test/harness"
)

// Server is one running cluster.
type Server struct {
	t    testing.TB // set by Start: Stop and Restart fail the test
	dir  string
	bin  string
	port int
	asPG bool // run binaries as the postgres user (we are root)
	// durable keeps PostgreSQL's default durability (fsync, synchronous
	// commit, full page writes) for benchmarks that must pay what a user
	// pays; tests run without it for speed.
	durable bool
}

// Start launches a cluster owned by one test; the test's cleanup stops it
// and removes its files.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch()
	harness.RequireService(t, "PostgreSQL", err)
	s.t = t
	t.Cleanup(func() { s.Close() })
	return s
}

// StartDurable is Start with PostgreSQL's default durability settings:
// every commit is flushed to disk, as on a user's server.
func StartDurable(t testing.TB) *Server {
	t.Helper()
	s, err := launch(true)
	harness.RequireService(t, "PostgreSQL", err)
	s.t = t
	t.Cleanup(func() { s.Close() })
	return s
}

// Launch initializes and starts a cluster; Close stops and removes it.
func Launch() (*Server, error) { return launch(false) }

func launch(durable bool) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	stopOrphans(bin)
	dir, err := os.MkdirTemp("", "ferry-pg-")
	if err != nil {
		return nil, err
	}
	// The owner file lets a later run stop this cluster if this process
	// dies (a panic, a kill) before Close.
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, asPG: os.Geteuid() == 0, durable: durable}
	if err := s.initAndStart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) initAndStart() (err error) {
	if s.asPG {
		if err := chownToPostgres(s.dir); err != nil {
			return err
		}
	}
	if out, err := s.run("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before pg_ctl binds it
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

// DSN is the URL of the postgres database.
func (s *Server) DSN() string { return s.URL("postgres") }

// URL is the DSN of a database on this server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDatabase creates a database.
func (s *Server) CreateDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// Stop stops the server (fast shutdown: clients are disconnected); for a
// server from Start, a failure fails the test.
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		err = fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return s.check(err)
}

// Restart starts a stopped server again, on the same port and data.
func (s *Server) Restart() error { return s.check(s.start()) }

func (s *Server) check(err error) error {
	if err != nil && s.t != nil {
		s.t.Helper()
		s.t.Fatal(err)
	}
	return err
}

// Close stops the server if it runs and deletes its files.
func (s *Server) Close() error {
	if _, err := os.Stat(filepath.Join(s.dataDir(), "postmaster.pid")); err == nil {
		s.run("pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "-t", "60", "stop")
	}
	return os.RemoveAll(s.dir)
}

func (s *Server) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", s.port, s.dir)
	if !s.durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	out, err := s.run("pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "-o", opts, "start")
	if err != nil {
		logTail, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		if len(logTail) > 2000 {
			logTail = logTail[len(logTail)-2000:]
		}
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, out, logTail)
	}
	return nil
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

// stopOrphans stops clusters whose owning process is gone.
func stopOrphans(bin string) {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "ferry-pg-*", "owner.pid"))
	for _, owner := range owners {
		b, err := os.ReadFile(owner)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || processAlive(pid) {
			continue
		}
		orphan := &Server{dir: filepath.Dir(owner), bin: bin, asPG: os.Geteuid() == 0}
		orphan.Close()
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// binDir finds the newest installed PostgreSQL's bin directory.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) int { n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return n }
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql; scripts/install-test-deps.sh does)")
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
