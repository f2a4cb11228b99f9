// Package harness starts real ferry processes for end-to-end tests: it
// builds bin/ferry once per test binary, runs `ferry serve` on free loopback
// ports in a temp data dir, waits for /healthz, and kills or stops the
// process by PID. Tests use it instead of in-process brokers when what they
// prove involves the process: signals, kill -9, restarts, real clients.
package harness

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds ./cmd/ferry once and returns the path of the binary.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		removeOrphanBinaries()
		dir, err := os.MkdirTemp("", fmt.Sprintf("ferry-bin-%d-", os.Getpid()))
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ferry")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/ferry")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// removeOrphanBinaries removes the binaries built by test processes that
// have ended: a test binary has no exit hook to remove its own, and each
// is 50 MB, which hundreds of runs turn into a full disk.
func removeOrphanBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "ferry-bin-*-*"))
	for _, dir := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(dir), "ferry-bin-%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FreePort returns a loopback port that was free a moment ago, and that
// no earlier call in this process returned: the kernel hands a port just
// released out again, so two nodes started at once were given the same
// one, and the second's HTTP listener failed (one CI run).
func FreePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		handedOut.mu.Lock()
		fresh := !handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.mu.Unlock()
		if fresh {
			return port
		}
	}
	t.Fatal("the kernel offered only ports handed out before")
	return 0
}

// handedOut is every port FreePort returned in this process.
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Node is one running `ferry serve`.
type Node struct {
	t        testing.TB
	DataDir  string
	HTTPPort int
	Args     []string // extra serve flags
	URL      string   // http://127.0.0.1:port (https:// for StartHTTPS)
	// HTTPClient reaches URL: http.DefaultClient, or for StartHTTPS one
	// trusting the test's CA.
	HTTPClient *http.Client
	// KafkaAddr is the --kafka-addr, 127.0.0.1:port, for Kafka clients'
	// bootstrap; it is chosen once and kept across restarts. Args may
	// name it as {kafka-addr}, e.g. in --listeners
	// PLAINTEXT://{kafka-addr},SSL://127.0.0.1:9093.
	KafkaAddr string
	// FDLimit, when positive, is the open-file limit (soft and hard, so
	// the Go runtime cannot raise it) the process runs under.
	FDLimit int
	// StopTimeout and ReadyTimeout bound a stop and a start (default 30 s
	// each); nodes with very many partitions need longer.
	StopTimeout, ReadyTimeout time.Duration
	place                     Place
	cmd                       *exec.Cmd
	logs                      *syncBuffer
	launchedAt                int // the logs' length when this run was launched
	done                      chan struct{}
}

// Start runs a node with a fresh data dir; extra args go to `ferry serve`.
func Start(t testing.TB, args ...string) *Node {
	t.Helper()
	return StartWithFDLimit(t, 0, args...)
}

// StartWithFDLimit is Start under an open-file limit of fdLimit (0: the
// test's own), set by a shell that then execs ferry in its place.
func StartWithFDLimit(t testing.TB, fdLimit int, args ...string) *Node {
	t.Helper()
	return start(t, fdLimit, nil, nil, args...)
}

// StartPrepared is Start with prepare run on the fresh data dir before
// the node first starts (users created offline, files put in place).
func StartPrepared(t testing.TB, prepare func(dataDir string), args ...string) *Node {
	t.Helper()
	return start(t, 0, nil, prepare, args...)
}

// StartHTTPS is Start for a node serving HTTP over TLS (args turn it
// on): URL is https and HTTPClient trusts roots.
func StartHTTPS(t testing.TB, roots *x509.CertPool, args ...string) *Node {
	t.Helper()
	return start(t, 0, roots, nil, args...)
}

// Place is where a node runs: the address it binds and advertises, and
// the command prefix that puts its process there (test/netns's
// Host.Wrap(), `ip netns exec <ns>`). The zero Place is this machine's
// loopback, on free ports.
type Place struct {
	Host string
	Wrap []string
}

// Ports a node at a Place of its own listens on: its host's ports are
// its own.
const (
	PlaceHTTPPort  = 8080
	PlaceKafkaPort = 9092
)

// StartAt is Start for a node at place: HTTP on place.Host:8080, Kafka on
// place.Host:9092 (advertised as such). The process is the program itself
// (the wrapper execs it), so signals and PID reach ferry, and it is killed
// if the test binary dies.
func StartAt(t testing.TB, place Place, args ...string) *Node {
	t.Helper()
	n := &Node{t: t, DataDir: t.TempDir(), Args: args, HTTPClient: http.DefaultClient, place: place}
	n.HTTPPort = PlaceHTTPPort
	n.KafkaAddr = net.JoinHostPort(place.Host, fmt.Sprint(PlaceKafkaPort))
	n.URL = "http://" + net.JoinHostPort(place.Host, fmt.Sprint(PlaceHTTPPort))
	t.Cleanup(func() {
		n.Kill()
		if t.Failed() {
			t.Logf("ferry logs (%s):\n%s", place.Host, n.Logs())
		}
	})
	n.start()
	return n
}

func start(t testing.TB, fdLimit int, roots *x509.CertPool, prepare func(string), args ...string) *Node {
	t.Helper()
	n := &Node{t: t, DataDir: t.TempDir(), Args: args, FDLimit: fdLimit, HTTPClient: http.DefaultClient}
	if prepare != nil {
		prepare(n.DataDir)
	}
	scheme := "http"
	if roots != nil {
		scheme = "https"
		n.HTTPClient = &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	}
	// FreePort's port is free only until someone else takes it: another
	// node of a parallel test can bind it between our probe and our start.
	// A fresh node has nothing to keep, so it tries new ports.
	for attempt := 1; ; attempt++ {
		n.HTTPPort = FreePort(t)
		n.KafkaAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		n.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, n.HTTPPort)
		n.launch()
		err := n.waitReady()
		if err == nil {
			break
		}
		if attempt < 3 && strings.Contains(n.logs.String(), "address already in use") {
			n.Kill()
			n.logs = nil
			continue
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Kill()
		if t.Failed() {
			t.Logf("ferry logs:\n%s", n.Logs())
			n.keepDataDir()
		}
	})
	return n
}

// keepDataDir copies a failed test's data directory under
// $FERRY_KEEP_DATA before t.TempDir's cleanup removes it, so the logs a
// failure leaves can be read afterwards (ferry dump-log).
func (n *Node) keepDataDir() {
	root := os.Getenv("FERRY_KEEP_DATA")
	if root == "" {
		return
	}
	dst, err := os.MkdirTemp(root, strings.ReplaceAll(n.t.Name(), "/", "_")+"-")
	if err == nil {
		err = os.CopyFS(dst, os.DirFS(n.DataDir))
	}
	if err != nil {
		n.t.Logf("keeping %s: %v", n.DataDir, err)
		return
	}
	n.t.Logf("data of the node at %s kept in %s", n.URL, dst)
}

func (n *Node) start() {
	n.t.Helper()
	n.launch()
	n.WaitReady()
}

func (n *Node) launch() {
	n.t.Helper()
	host := "127.0.0.1"
	if n.place.Host != "" {
		host = n.place.Host
	}
	args := []string{"serve",
		"--data-dir", n.DataDir,
		"--http-addr", net.JoinHostPort(host, fmt.Sprint(n.HTTPPort)),
		"--kafka-addr", n.KafkaAddr,
	}
	for _, a := range n.Args {
		args = append(args, strings.ReplaceAll(a, "{kafka-addr}", n.KafkaAddr))
	}
	n.cmd = exec.Command(Binary(n.t), args...)
	if n.FDLimit > 0 {
		script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, n.FDLimit)
		n.cmd = exec.Command("sh", append([]string{"-c", script, Binary(n.t)}, args...)...)
	}
	if w := n.place.Wrap; len(w) > 0 {
		n.cmd = exec.Command(w[0], append(append(w[1:len(w):len(w)], Binary(n.t)), args...)...)
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if n.logs == nil {
		n.logs = new(syncBuffer) // kept across restarts
	}
	n.launchedAt = n.logs.len()
	n.cmd.Stdout = n.logs
	n.cmd.Stderr = n.logs
	n.cmd.Env = append(os.Environ(), "FERRY_LOG_LEVEL=info")
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	// The waiter keeps its own process and channel: a later launch
	// replaces the node's.
	cmd, done := n.cmd, make(chan struct{})
	n.done = done
	go func() { cmd.Wait(); close(done) }()
}

// WaitReady polls /healthz until it answers 200.
func (n *Node) WaitReady() {
	n.t.Helper()
	if err := n.waitReady(); err != nil {
		n.t.Fatal(err)
	}
}

func (n *Node) waitReady() error {
	deadline := time.Now().Add(orDefault(n.ReadyTimeout))
	for time.Now().Before(deadline) {
		select {
		case <-n.done:
			return fmt.Errorf("ferry exited before it was ready:\n%s", n.Logs())
		default:
		}
		res, err := n.HTTPClient.Get(n.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			// Another process may answer on the port (one that took it
			// before this node could): only this node's own log says it
			// bound its listeners.
			if res.StatusCode == 200 && n.logs.containsFrom(n.launchedAt, "ferry serving") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("ferry not ready within %v:\n%s", orDefault(n.ReadyTimeout), n.Logs())
}

// Kill sends SIGKILL and waits for the process to end.
func (n *Node) Kill() { n.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for a clean exit; it fails the test on a
// non-zero exit status.
func (n *Node) Stop() {
	n.t.Helper()
	n.signal(syscall.SIGTERM)
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		n.t.Fatalf("ferry exited with %d after SIGTERM:\n%s", code, n.Logs())
	}
}

func (n *Node) signal(sig syscall.Signal) {
	select {
	case <-n.done:
		return
	default:
	}
	n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(orDefault(n.StopTimeout)):
		// A process that does not end when asked is a bug to find: Go's
		// SIGQUIT prints every goroutine's stack into the logs first.
		n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			n.cmd.Process.Kill()
			<-n.done
		}
	}
}

// Freeze stops the process (SIGSTOP) without ending it: it keeps its
// sockets and believes what it believed, as a broker partitioned away or
// stalled in GC does; Thaw (SIGCONT) lets it go on.
// It returns once every thread of the process is stopped: SIGSTOP takes
// effect as each thread next enters the kernel, and a request sent right
// after the signal could otherwise still be answered.
func (n *Node) Freeze() {
	n.cmd.Process.Signal(syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(n.cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// stopped reports whether every thread of pid is in the stopped state
// (Linux's /proc; elsewhere it reports true at once).
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		// pid (comm) state …: comm may hold spaces, so the state follows the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false
		}
		if state := stat[i+2]; state != 'T' && state != 't' {
			return false
		}
	}
	return true
}

// Thaw resumes a frozen process.
func (n *Node) Thaw() { n.cmd.Process.Signal(syscall.SIGCONT) }

// Running reports whether the process has not ended (a frozen one runs).
func (n *Node) Running() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Exited waits up to d for the process to end by itself and returns its
// exit code; false when it still runs then.
func (n *Node) Exited(d time.Duration) (code int, exited bool) {
	select {
	case <-n.done:
		return n.cmd.ProcessState.ExitCode(), true
	case <-time.After(d):
		return 0, false
	}
}

// PID is the process id of the running ferry.
func (n *Node) PID() int { return n.cmd.Process.Pid }

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return 30 * time.Second
	}
	return d
}

// Restart starts the process again on the same data dir and port.
// A running node is refused: the new process could not bind the ports,
// and the old one would answer for it.
func (n *Node) Restart() {
	n.t.Helper()
	if n.Running() {
		n.t.Fatal("harness: Restart of a running node; Stop or Kill it first")
	}
	n.start()
}

// Logs returns what the process printed so far.
func (n *Node) Logs() string { return n.logs.String() }

// syncBuffer is written by exec's copying goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// containsFrom reports whether s was written at or after offset from.
func (b *syncBuffer) containsFrom(from int, s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes()[from:], []byte(s))
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitKafka polls until the node accepts TCP connections on KafkaAddr.
func (n *Node) WaitKafka() {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", n.KafkaAddr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.t.Fatalf("ferry does not accept Kafka connections on %s within 30s:\n%s", n.KafkaAddr, n.Logs())
}
