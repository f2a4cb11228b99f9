package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// README.md's shell examples are run as a newcomer would run them. Each
// ```sh block carries a marker on the line before it:
//
//	<!-- readme-test: node -->        run against a single node the test
//	                                  starts (one node for all such blocks,
//	                                  in README order, so a block may use
//	                                  what an earlier one made)
//	<!-- readme-test: standalone -->  starts what it needs itself (a node
//	                                  with other flags, ZooKeeper and three
//	                                  brokers); everything it started is
//	                                  killed when it ends
//
// Every port the README names (2181, 8080–8089, 9090–9099) is replaced by a
// free loopback port, the same one wherever it recurs in a block; `bin/ferry`
// is the binary built from this tree, and the CLI's default bootstrap is the
// node's Kafka port. curl fails on an HTTP error (as with --fail-with-body)
// unless it prints the status with -w, and every line `# => text` in a
// block is output that must appear, in order, in what the block printed.

// readmeBlock is one marked ```sh block of README.md.
type readmeBlock struct {
	line   int    // of the opening fence, 1-based
	mode   string // node | standalone
	script string
	expect []string
}

var (
	readmeMarker = regexp.MustCompile(`^<!-- readme-test: (node|standalone) -->$`)
	readmeExpect = regexp.MustCompile(`^\s*# => (.*)$`)
	readmePort   = regexp.MustCompile(`\b(2181|808[0-9]|909[0-9])\b`)
)

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks  []readmeBlock
		cur     *readmeBlock
		marker  string
		prev    string
		scanner = bufio.NewScanner(bytes.NewReader(data))
	)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
			if m := readmeExpect.FindStringSubmatch(line); m != nil {
				cur.expect = append(cur.expect, m[1])
			}
		case line == "```sh" || line == "```bash" || line == "```shell":
			if m := readmeMarker.FindStringSubmatch(prev); m != nil {
				marker = m[1]
			} else {
				t.Errorf("README.md:%d: a shell block without <!-- readme-test: node|standalone --> before it; every shell example is run", n)
				marker = ""
			}
			cur = &readmeBlock{line: n, mode: marker}
		}
		if strings.TrimSpace(line) != "" {
			prev = strings.TrimSpace(line)
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: the shell block is never closed", cur.line)
	}
	return blocks
}

// withPorts replaces each README port in text by its free port, choosing
// new ones as they first appear unless fixed says otherwise.
func withPorts(t *testing.T, text string, ports map[string]int, fixed bool) string {
	return readmePort.ReplaceAllStringFunc(text, func(p string) string {
		if _, ok := ports[p]; !ok {
			if fixed {
				t.Fatalf("port %s in a node block: node blocks use 8080 (HTTP) and 9092 (Kafka) only", p)
			}
			ports[p] = harness.FreePort(t)
		}
		return strconv.Itoa(ports[p])
	})
}

// runReadmeBlock runs one block with bash in dir, kills whatever it left
// running, and checks its expected output.
func runReadmeBlock(t *testing.T, b readmeBlock, dir string, ports map[string]int, fixed bool, timeout time.Duration) {
	t.Helper()
	script := withPorts(t, b.script, ports, fixed)
	prelude := "set -euo pipefail\n" +
		// A curl that prints the status (-w) shows a refusal on purpose
		// and checks it with `# =>`; every other one must succeed.
		"curl() { case \" $* \" in *\" -w \"*) command curl -sS --max-time 60 \"$@\";; " +
		"*) command curl --fail-with-body -sS --max-time 60 \"$@\";; esac; }\n"
	if fixed {
		// The CLI's default bootstrap, localhost:9092, is the node's port.
		prelude += fmt.Sprintf("export FERRY_BOOTSTRAP=127.0.0.1:%d\n", ports["9092"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On timeout, end the whole group, not just bash.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Background processes the block started (brokers, ZooKeeper) hold
	// the output pipes open; Wait must not wait for them.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		// Brokers flush and close on SIGTERM; then nothing may survive.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && syscall.Kill(-cmd.Process.Pid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("README.md:%d (%s block) failed: %v\n--- script\n%s--- output\n%s%s", b.line, b.mode, err, script, out.String(), logTails(dir))
	}
	rest := out.String()
	for _, want := range b.expect {
		want = withPorts(t, want, ports, fixed)
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("README.md:%d: the output lacks %q (in order)\n--- output\n%s", b.line, want, out.String())
		}
		rest = rest[i+len(want):]
	}
}

// logTails is the end of each log file a block wrote (brokers' and
// ZooKeeper's), to tell why it failed.
func logTails(dir string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "log"))
	for _, f := range append(logs, more...) {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// readmeNeeds fails or skips (harness.RequireService) when a block uses a
// tool this machine lacks.
func readmeNeeds(t *testing.T, script string) {
	t.Helper()
	for _, tool := range []string{"kcat", "java"} {
		if strings.Contains(script, tool+" ") {
			_, err := exec.LookPath(tool)
			harness.RequireService(t, tool, err)
		}
	}
	if strings.Contains(script, "zookeeper.jar") {
		_, err := os.Stat("/usr/share/java/zookeeper.jar")
		harness.RequireService(t, "ZooKeeper (Debian's zookeeper package)", err)
	}
}

// workDir makes a directory where bin/ferry is the binary under test.
func readmeWorkDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(harness.Binary(t), filepath.Join(dir, "bin", "ferry")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadmeExamples runs every shell example of README.md.
func TestReadmeExamples(t *testing.T) {
	blocks := readmeBlocks(t)
	if t.Failed() {
		return
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no shell block to run")
	}
	// One node for the node blocks, living as long as the whole test.
	node := harness.Start(t)
	_, kport, _ := strings.Cut(node.KafkaAddr, ":")
	kafka, _ := strconv.Atoi(kport)
	nodePorts := map[string]int{"8080": node.HTTPPort, "9092": kafka}
	nodeDir := readmeWorkDir(t)
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			readmeNeeds(t, b.script)
			switch b.mode {
			case "node":
				runReadmeBlock(t, b, nodeDir, nodePorts, true, 2*time.Minute)
			case "standalone":
				runReadmeBlock(t, b, readmeWorkDir(t), map[string]int{}, false, 4*time.Minute)
			}
		})
	}
}

// The extraction itself: a block without a marker is an error, expected
// output is collected, and ports map consistently within a block.
func TestReadmeBlockParsing(t *testing.T) {
	ports := map[string]int{}
	got := withPorts(t, "a 127.0.0.1:8081 b :8081 clientPort=2181 c 9091 d 18080", ports, false)
	want := fmt.Sprintf("a 127.0.0.1:%d b :%d clientPort=%d c %d d 18080", ports["8081"], ports["8081"], ports["2181"], ports["9091"])
	if got != want || len(ports) != 3 {
		t.Fatalf("got %q, want %q (%v)", got, want, ports)
	}
	if m := readmeExpect.FindStringSubmatch(`# => {"offsets":[]}`); m == nil || m[1] != `{"offsets":[]}` {
		t.Fatalf("expect line: %v", m)
	}
	if !readmeMarker.MatchString("<!-- readme-test: node -->") || readmeMarker.MatchString("<!-- readme-test: other -->") {
		t.Fatal("marker regexp")
	}
}
