// Package pgtest starts a throwaway PostgreSQL cluster for tests, as
// /work/shared/TESTING.md describes: initdb (as the postgres user when
// running as root) in a temp dir, pg_ctl start on a free loopback port
// with the socket in that dir and fsync off, pg_ctl stop at the end.
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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-mq/ferry/test/harness"
)

// Server is a running throwaway cluster.
type Server struct {
	dir  string
	bin  string
	port int
	asPG bool // run binaries as the postgres user (we are root)
}

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
		if err := shared.Stop(); err != nil {
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
	startOnce.Do(func() { shared, startErr = Start() })
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

// URL is the DSN of a database on this server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDatabase creates a database.
func (s *Server) CreateDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// findBin returns the newest /usr/lib/postgresql/*/bin holding initdb.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql; scripts/install-test-deps.sh does)")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Start initializes and starts a cluster.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	stopOrphans(bin)
	dir, err := os.MkdirTemp("", "ferry-pg-")
	if err != nil {
		return nil, err
	}
	// The owner file lets a later run stop this cluster if this test
	// binary dies (a panic, a kill) before Stop.
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, asPG: os.Geteuid() == 0}
	if s.asPG {
		if err := chownToPostgres(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for attempt := 0; attempt < 3; attempt++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		var out string
		out, err = s.run("pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(dir, "log"), "-w", "-t", "60",
			"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", s.port, dir),
			"start")
		if err == nil {
			return s, nil
		}
		logTail, _ := os.ReadFile(filepath.Join(dir, "log"))
		err = fmt.Errorf("pg_ctl start: %v: %s %s", err, out, tail(string(logTail)))
	}
	os.RemoveAll(dir)
	return nil, err
}

// stopOrphans stops clusters whose test binary is gone.
func stopOrphans(bin string) {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "ferry-pg-*", "owner.pid"))
	for _, owner := range owners {
		b, err := os.ReadFile(owner)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || processAlive(pid) {
			continue
		}
		dir := filepath.Dir(owner)
		orphan := &Server{dir: dir, bin: bin, asPG: os.Geteuid() == 0}
		if _, err := os.Stat(filepath.Join(orphan.dataDir(), "postmaster.pid")); err == nil {
			orphan.run("pg_ctl", "-D", orphan.dataDir(), "-m", "immediate", "-w", "-t", "30", "stop")
		}
		os.RemoveAll(dir)
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
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

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) run(tool string, args ...string) (string, error) {
	path := filepath.Join(s.bin, tool)
	var cmd *exec.Cmd
	if s.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Stop stops the cluster and removes its directory.
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return os.RemoveAll(s.dir)
}
