// Package zkserver runs throwaway standalone ZooKeeper servers for tests,
// by the recipe in /work/shared/TESTING.md: Debian's zookeeper package
// (scripts/install-test-deps.sh installs it), a zoo.cfg in a temp dir with
// its own data dir and a free loopback port, QuorumPeerMain started by
// PID, ready when the four-letter word `ruok` answers `imok` (polled).
//
// Start gives one test its own server, which it may stop, kill, freeze
// and restart (on the same port and data, so sessions can survive a
// restart shorter than their timeout). Shared gives one server per test
// binary, started on first use and stopped by its Main:
//
//	var zks zkserver.Shared
//	func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }
//	func TestX(t *testing.T) { srv := zks.Require(t); … srv.Addr() … }
//
// When ZooKeeper cannot start, Start and Require fail the test if the CI
// environment variable is set and skip it otherwise
// (harness.RequireService).
package zkserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

const (
	jarPath  = "/usr/share/java/zookeeper.jar"
	confDir  = "/etc/zookeeper/conf" // log4j.properties for the console logger
	mainType = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	readyTimeout = 60 * time.Second
	stopTimeout  = 15 * time.Second
)

// Server is one standalone ZooKeeper process and its files.
type Server struct {
	t     testing.TB // set by Start: failures of Stop/Restart fail the test
	dir   string
	port  int
	place harness.Place // where it runs (LaunchAt); zero: loopback

	mu   sync.Mutex
	proc *process // nil when stopped
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
}

// Start launches a server owned by one test; the test's cleanup stops it
// and removes its files.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch()
	harness.RequireService(t, "ZooKeeper", err)
	s.t = t
	t.Cleanup(func() { s.Close() })
	return s
}

// Launch starts a server on a free loopback port in a new temp dir;
// Close stops it and removes the dir.
func Launch() (*Server, error) { return LaunchAt(harness.Place{}) }

// PlacePort is the client port of a server at a Place of its own.
const PlacePort = 2181

// LaunchAt is Launch for a server at place (e.g. a host of test/netns):
// it listens on place.Host:2181 and runs under place.Wrap.
func LaunchAt(place harness.Place) (*Server, error) {
	if _, err := os.Stat(jarPath); err != nil {
		return nil, fmt.Errorf("no %s (apt-get install zookeeper; scripts/install-test-deps.sh does): %w", jarPath, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("no java on PATH: %w", err)
	}
	stopOrphans()
	dir, err := os.MkdirTemp("", "ferry-zk-")
	if err != nil {
		return nil, err
	}
	// The owner file lets a later run kill this server if this process
	// dies (a panic, a kill) before Close.
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir, place: place}
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before ZooKeeper binds it
		if place.Host != "" {
			s.port = PlacePort
		} else if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.writeConfig(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// Addr is the client address, 127.0.0.1:port (place.Host:2181 for
// LaunchAt).
func (s *Server) Addr() string { return net.JoinHostPort(s.host(), strconv.Itoa(s.port)) }

func (s *Server) host() string {
	if s.place.Host != "" {
		return s.place.Host
	}
	return "127.0.0.1"
}

// Port is the client port.
func (s *Server) Port() int { return s.port }

// Dir is the server's temp dir (zoo.cfg, data/, zk.log).
func (s *Server) Dir() string { return s.dir }

// PID is the server's process id, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

func (s *Server) writeConfig() error {
	// minSessionTimeout lets tests use short sessions (ZooKeeper's default
	// floor is 2 ticks = 4 s); the 4lw whitelist enables the readiness probe.
	cfg := fmt.Sprintf(`tickTime=2000
minSessionTimeout=500
maxSessionTimeout=60000
dataDir=%s
clientPort=%d
clientPortAddress=%s
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,srvr,mntr,cons
forceSync=no
`, filepath.Join(s.dir, "data"), s.port, s.host())
	if err := os.MkdirAll(filepath.Join(s.dir, "data"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644)
}

// start runs the process and waits until it answers ruok.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("zkserver: already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "zk.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	argv := append(s.place.Wrap[:len(s.place.Wrap):len(s.place.Wrap)],
		"java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", confDir+":"+jarPath,
		"-Dzookeeper.log.dir="+s.dir, "-Dzookeeper.root.logger=INFO,CONSOLE",
		mainType, filepath.Join(s.dir, "zoo.cfg"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: the server dies with the test binary even on a panic.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start zookeeper: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	os.WriteFile(filepath.Join(s.dir, "zk.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	if err := waitReady(s.Addr(), p.done, readyTimeout); err != nil {
		cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%w; log tail: %s", err, s.logTail())
	}
	s.proc = p
	return nil
}

// waitReady polls until the server serves sessions (Serving), the
// process exits or the timeout.
func waitReady(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if Serving(addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("zookeeper exited before it was ready")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zookeeper not ready on %s after %v", addr, timeout)
		}
	}
}

// Ruok sends the four-letter word ruok and reports whether the server
// answered imok. ZooKeeper answers it as soon as its listener runs,
// before it serves sessions: Serving is the readiness check.
func Ruok(addr string) error {
	b, err := fourLetterWord(addr, "ruok", 64)
	if err != nil {
		return err
	}
	if string(b) != "imok" {
		return fmt.Errorf("ruok answered %q", b)
	}
	return nil
}

// Serving reports whether the server serves sessions: srvr names its
// mode (standalone, leader, follower) only then, and answers "This
// ZooKeeper instance is not currently serving requests" before. A
// client connecting earlier waits for its session, which on a loaded
// machine outlasted a test's 10 s connect (CI, replication/cluster).
func Serving(addr string) error {
	b, err := fourLetterWord(addr, "srvr", 4096)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "Mode: ") {
		return fmt.Errorf("srvr answered %q", b)
	}
	return nil
}

// fourLetterWord sends word and reads the answer, up to limit bytes.
func fourLetterWord(addr, word string, limit int64) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(c, limit))
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "zk.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop ends the server with SIGTERM, then SIGKILL if it has not exited
// within 15 s, and waits for it.
func (s *Server) Stop() error { return s.check(s.signalAndWait(syscall.SIGTERM)) }

// Kill ends the server with SIGKILL and waits for it.
func (s *Server) Kill() error { return s.check(s.signalAndWait(syscall.SIGKILL)) }

func (s *Server) signalAndWait(sig syscall.Signal) error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return errors.New("zkserver: not running")
	}
	p.cmd.Process.Signal(syscall.SIGCONT) // a frozen process cannot handle SIGTERM
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// Freeze stops the process with SIGSTOP: connections stay open, nothing
// answers, sessions are not expired by it until Thaw.
func (s *Server) Freeze() error { return s.check(s.signal(syscall.SIGSTOP)) }

// Thaw resumes a frozen process with SIGCONT.
func (s *Server) Thaw() error { return s.check(s.signal(syscall.SIGCONT)) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return errors.New("zkserver: not running")
	}
	return s.proc.cmd.Process.Signal(sig)
}

// Restart starts a stopped or killed server again, on the same port and
// data dir; a running one is stopped first.
func (s *Server) Restart() error {
	if s.PID() != 0 {
		if err := s.signalAndWait(syscall.SIGTERM); err != nil {
			return s.check(err)
		}
	}
	return s.check(s.start())
}

func (s *Server) check(err error) error {
	if err != nil && s.t != nil {
		s.t.Helper()
		s.t.Fatal(err)
	}
	return err
}

// Close kills the server if it runs and removes its files.
func (s *Server) Close() error {
	if s.PID() != 0 {
		s.signalAndWait(syscall.SIGKILL)
	}
	return os.RemoveAll(s.dir)
}

// stopOrphans kills servers whose owning test process is gone.
func stopOrphans() {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), "ferry-zk-*", "owner.pid"))
	for _, owner := range owners {
		dir := filepath.Dir(owner)
		if pid, ok := readPID(owner); !ok || processAlive(pid) {
			continue
		}
		if pid, ok := readPID(filepath.Join(dir, "zk.pid")); ok && isZooKeeper(pid, dir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	}
}

func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// isZooKeeper checks the command line, so a recycled PID is never killed.
func isZooKeeper(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), mainType) && strings.Contains(string(b), dir)
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, syscall.Signal(0)) == nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
