// Package kafkascripts_test runs Kafka's script names (kafka-topics.sh, …),
// the links `ferry install-scripts` makes to the built binary, as an
// operator types them: the seed guides' 0.8-era command sequences and
// Kafka 3.9's flags, against a real three-broker ferry cluster on a real
// ZooKeeper.
package kafkascripts_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

var (
	linksOnce sync.Once
	linksDir  string
	linksErr  error
)

// scriptsDir is where the script links to the built binary are.
func scriptsDir(t testing.TB) string {
	t.Helper()
	bin := harness.Binary(t)
	linksOnce.Do(func() {
		linksDir = filepath.Dir(bin)
		out, err := exec.Command(bin, "install-scripts", linksDir).CombinedOutput()
		if err != nil {
			linksErr = errors.New(string(out) + err.Error())
		}
	})
	if linksErr != nil {
		t.Fatal(linksErr)
	}
	return linksDir
}

// result is what one script run printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the script name with args and stdin, bounded by two minutes.
func run(t testing.TB, stdin, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(scriptsDir(t), name), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return res
}

// ok runs a script that must exit 0 and returns its stdout.
func ok(t testing.TB, stdin, name string, args ...string) string {
	t.Helper()
	res := run(t, stdin, name, args...)
	if res.code != 0 {
		t.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

// scripts are the names make build links.
var scripts = []string{"kafka-topics.sh", "kafka-console-producer.sh", "kafka-console-consumer.sh",
	"kafka-consumer-groups.sh", "kafka-reassign-partitions.sh", "kafka-preferred-replica-election.sh",
	"kafka-leader-election.sh", "kafka-configs.sh", "kafka-acls.sh", "kafka-get-offsets.sh",
	"kafka-delete-records.sh", "kafka-log-dirs.sh", "kafka-dump-log.sh", "kafka-producer-perf-test.sh",
	"kafka-consumer-perf-test.sh", "kafka-transactions.sh", "kafka-features.sh"}

// TestScriptsHelpAndUsageErrors needs no broker: every script answers -h
// and --help with its options (exit 0), and a mistake with Kafka's words
// and exit 1; ferry's own command groups answer -h too.
func TestScriptsHelpAndUsageErrors(t *testing.T) {
	for _, name := range scripts {
		want := "--bootstrap-server"
		if name == "kafka-dump-log.sh" {
			want = "--files"
		}
		for _, h := range []string{"-h", "--help"} {
			res := run(t, "", name, h)
			if res.code != 0 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "Option") {
				t.Errorf("%s %s: exit %d, stdout %q; want 0 and the options", name, h, res.code, res.stdout)
			}
		}
		res := run(t, "", name, "--no-such-option")
		if res.code != 1 || !strings.Contains(res.stderr, "no-such-option is not a recognized option") {
			t.Errorf("%s --no-such-option: exit %d, stderr %q", name, res.code, res.stderr)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"kafka-topics.sh", []string{"--bootstrap-server", "127.0.0.1:1"}, "exactly one action: --list, --describe, --create, --alter or --delete"},
		{"kafka-topics.sh", []string{"--create", "--bootstrap-server", "127.0.0.1:1"}, `Missing required argument "[topic]"`},
		{"kafka-topics.sh", []string{"--list"}, `Missing required argument "[bootstrap-server]"`},
		{"kafka-console-consumer.sh", []string{"--bootstrap-server", "127.0.0.1:1"}, "Exactly one of include/topic is required."},
		{"kafka-console-producer.sh", []string{"--broker-list", "127.0.0.1:1"}, `Missing required argument "[topic]"`},
		{"kafka-consumer-groups.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--describe"}, "takes one of these options: [all-groups], [group]"},
		{"kafka-consumer-groups.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--reset-offsets", "--group", "g", "--topic", "t"}, "takes exactly one of these options"},
		{"kafka-reassign-partitions.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--execute"}, `Missing required argument "[reassignment-json-file]"`},
		{"kafka-leader-election.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--election-type", "preferred"}, "One and only one of the following options is required"},
		{"kafka-configs.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--describe"}, "At least one entity type must be specified"},
		{"kafka-get-offsets.sh", []string{"--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--topic-partitions", "t:0"}, "cannot be used with topic or partitions"},
		{"kafka-producer-perf-test.sh", []string{"--topic", "t", "--num-records", "1", "--record-size", "1"}, "--throughput is required"},
		{"kafka-transactions.sh", []string{"--bootstrap-server", "127.0.0.1:1"}, "Missing command"},
		{"kafka-features.sh", []string{"--bootstrap-server", "127.0.0.1:1"}, "Missing command"},
		{"kafka-features.sh", []string{"--bootstrap-server", "127.0.0.1:1", "upgrade", "--metadata", "3.9"}, "--metadata is not supported"},
	} {
		res := run(t, "", c.name, c.args...)
		if res.code != 1 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%s %s: exit %d, stderr %q; want 1 and %q", c.name, strings.Join(c.args, " "), res.code, res.stderr, c.want)
		}
	}
	closed := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	for _, name := range []string{"kafka-topics.sh", "kafka-consumer-groups.sh"} {
		res := run(t, "", name, "--list", "--bootstrap-server", closed)
		// TopicCommand prints its errors on stdout, the others on stderr.
		printed := res.stdout + res.stderr
		if res.code != 1 || !strings.Contains(printed, "no bootstrap broker is reachable at "+closed) || !strings.Contains(printed, "check --bootstrap-server") {
			t.Errorf("%s against a closed port: exit %d, stdout %q, stderr %q", name, res.code, res.stdout, res.stderr)
		}
	}
	if res := run(t, "", "kafka-run-class.sh", "--help"); res.code != 0 || !strings.Contains(res.stdout, "kafka.admin.DeleteTopicCommand") {
		t.Errorf("kafka-run-class.sh --help: exit %d, %q", res.code, res.stdout)
	}
	if res := run(t, "", "kafka-run-class.sh", "kafka.NoSuchClass"); res.code != 1 || !strings.Contains(res.stderr, "Could not find or load main class kafka.NoSuchClass") {
		t.Errorf("kafka-run-class.sh kafka.NoSuchClass: exit %d, %q", res.code, res.stderr)
	}
	if out := ok(t, "", "kafka-run-class.sh", "kafka.admin.TopicCommand", "--help"); !strings.Contains(out, "--replication-factor") {
		t.Errorf("kafka-run-class.sh kafka.admin.TopicCommand --help:\n%s", out)
	}
	bin := harness.Binary(t)
	for _, group := range []string{"topics", "groups", "acls", "quotas", "users", "tokens", "brokers", "bench"} {
		out, err := exec.Command(bin, group, "-h").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Commands:") {
			t.Errorf("ferry %s -h: %v\n%s", group, err, out)
		}
	}
}

// startCluster starts brokers 1..3 in parallel under a fresh chroot of
// the shared ZooKeeper, with ACLs on and the scripts' principal
// (ANONYMOUS over PLAINTEXT) a super user; it returns them and the
// connect string with its chroot.
func startCluster(t *testing.T) ([]*harness.Node, string) {
	t.Helper()
	connect := zks.Require(t).Addr() + "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	nodes := make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = harness.Start(t, "--broker-id", strconv.Itoa(i+1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", "6000", "--authorizer-class-name", "ferry", "--super-users", "User:ANONYMOUS")
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n == nil {
			t.FailNow()
		}
	}
	return nodes, connect
}
