package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// cliResult is what one run of the ferry binary printed and returned.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs `ferry args…` with stdin and extra environment, bounded by a
// minute.
func runCLI(t *testing.T, stdin string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("ferry %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// cli runs a client command against node and fails the test unless it
// exits 0; it returns stdout.
func cli(t *testing.T, node *harness.Node, stdin string, args ...string) string {
	t.Helper()
	res := runCLI(t, stdin, nil, append(args, "--bootstrap", node.KafkaAddr)...)
	if res.code != 0 {
		t.Fatalf("ferry %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

// squeeze collapses the runs of blanks that align columns.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// TestCLIUsageAndUnreachable needs no broker: usage mistakes exit 2, and an
// unreachable bootstrap fails fast with exit 1 and a message naming it.
func TestCLIUsageAndUnreachable(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	for _, c := range []struct {
		args []string
		env  []string
		code int
		want string
	}{
		{[]string{"topics"}, nil, 2, "want one of alter, create, delete, describe, list"},
		{[]string{"topics", "create"}, nil, 2, "want one topic NAME"},
		{[]string{"topics", "alter", "t"}, nil, 2, "give --partitions, --config or --delete-config"},
		{[]string{"topics", "create", "t", "--config", "novalue"}, nil, 2, "want key=value"},
		{[]string{"consume", "t", "--group", "g", "--partition", "0"}, nil, 2, "cannot be used with --group"},
		{[]string{"consume", "t", "--offset", "soon"}, nil, 2, "want earliest, latest or a non-negative number"},
		{[]string{"produce", "t", "--acks", "2"}, nil, 2, "want 0, 1 or all"},
		{[]string{"produce", "t", "--compression", "brotli"}, nil, 2, "want none, gzip"},
		{[]string{"groups", "reset-offsets", "g", "--topic", "t"}, nil, 2, "exactly one of --to-earliest"},
		{[]string{"bench", "produce", "--records", "0", "--duration", "0"}, nil, 2, "must be bounded"},
		{[]string{"nope"}, nil, 2, "unknown command"},
		{[]string{"topics", "list", "--bootstrap", closed}, nil, 1, "no bootstrap broker is reachable at " + closed},
		{[]string{"topics", "list"}, []string{"FERRY_BOOTSTRAP=" + closed}, 1, "reachable at " + closed},
		{[]string{"produce", "t", "--bootstrap", closed}, nil, 1, "connection refused"},
		{[]string{"consume", "t", "--bootstrap", closed}, nil, 1, "is `ferry serve` running?"},
		{[]string{"groups", "list", "--bootstrap", closed}, nil, 1, "reachable at " + closed},
		{[]string{"bench", "produce", "--bootstrap", closed}, nil, 1, "reachable at " + closed},
	} {
		start := time.Now()
		res := runCLI(t, "x\n", c.env, c.args...)
		if res.code != c.code || !strings.Contains(res.stderr, c.want) {
			t.Errorf("ferry %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), res.code, res.stderr, c.code, c.want)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("ferry %s took %v", strings.Join(c.args, " "), took)
		}
	}
	if res := runCLI(t, "", nil, "consume", "-h"); res.code != 0 || !strings.Contains(res.stderr, "-from-beginning") {
		t.Errorf("consume -h: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCLITopics(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "topics", "create", "orders", "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=86400000")
	if out := cli(t, node, "", "topics", "list"); !strings.Contains("\n"+out, "\norders\n") {
		t.Fatalf("topics list lacks orders:\n%s", out)
	}
	out := cli(t, node, "", "topics", "describe", "orders")
	for _, want := range []string{"Topic: orders\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=86400000\n",
		"\tTopic: orders\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0\tStartOffset: 0\tEndOffset: 0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	res := runCLI(t, "", nil, "topics", "create", "orders", "--bootstrap", node.KafkaAddr)
	if res.code != 1 || !strings.Contains(res.stderr, "TOPIC_ALREADY_EXISTS") {
		t.Errorf("second create: exit %d, stderr %q; want 1 and TOPIC_ALREADY_EXISTS", res.code, res.stderr)
	}

	cli(t, node, "", "topics", "alter", "orders", "--partitions", "4",
		"--config", "segment.bytes=1048576", "--delete-config", "retention.ms")
	out = cli(t, node, "", "topics", "describe", "orders")
	if want := "PartitionCount: 4\tReplicationFactor: 1\tConfigs: segment.bytes=1048576\n"; !strings.Contains(out, want) {
		t.Errorf("describe after alter lacks %q:\n%s", want, out)
	}
	if out := cli(t, node, "", "topics", "describe", "--all-configs", "orders"); !strings.Contains(out, "cleanup.policy=delete") {
		t.Errorf("describe --all-configs lacks cleanup.policy=delete:\n%s", out)
	}

	cli(t, node, "", "topics", "delete", "orders")
	if out := cli(t, node, "", "topics", "list"); strings.Contains("\n"+out, "\norders\n") {
		t.Errorf("topics list after delete still has orders:\n%s", out)
	}
	res = runCLI(t, "", nil, "topics", "describe", "orders", "--bootstrap", node.KafkaAddr)
	if res.code != 1 || !strings.Contains(res.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("describe deleted topic: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCLIProduceConsume(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "topics", "create", "t", "--partitions", "2")
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "key-%d:value %d\n", i%5, i)
	}
	if out := cli(t, node, in.String(), "produce", "t", "--key-separator", ":"); out != "" {
		t.Errorf("produce printed %q, want nothing", out)
	}
	out := cli(t, node, "", "consume", "t", "--from-beginning", "--max-messages", "20", "--timeout", "20s",
		"--print-key", "--key-separator", "=")
	want := sortedLines(strings.ReplaceAll(in.String(), ":", "="))
	if got := sortedLines(out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed:\n%s\nwant (any order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkKeysStayTogether(t, node)
}

// checkKeysStayTogether reads each partition alone, as many records as
// describe says it holds: every key must be in one partition only (the
// default partitioner hashes the key).
func checkKeysStayTogether(t *testing.T, node *harness.Node) {
	t.Helper()
	seen := map[string]string{}
	total := 0
	for _, p := range []string{"0", "1"} {
		n := endOffset(t, node, "t", p)
		if n == "0" {
			continue
		}
		out := cli(t, node, "", "consume", "t", "--partition", p, "--offset", "earliest", "--max-messages", n, "--timeout", "20s", "--print-key")
		for _, line := range sortedLines(out) {
			total++
			key, _, _ := strings.Cut(line, "\t")
			if prev, ok := seen[key]; ok && prev != p {
				t.Errorf("key %s in partitions %s and %s", key, prev, p)
			}
			seen[key] = p
		}
	}
	if total != 20 {
		t.Errorf("partitions 0 and 1 hold %d records, want 20", total)
	}
}

// endOffset reads a partition's end offset from `ferry topics describe`.
func endOffset(t *testing.T, node *harness.Node, topic, partition string) string {
	t.Helper()
	out := cli(t, node, "", "topics", "describe", topic)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "\tPartition: "+partition+"\t") {
			_, end, _ := strings.Cut(line, "EndOffset: ")
			return end
		}
	}
	t.Fatalf("describe %s has no partition %s:\n%s", topic, partition, out)
	return ""
}

// TestCLIProduceOptions covers acks and every codec, a fixed partition, and
// a record POSTed over HTTP read back with `ferry consume`.
func TestCLIProduceOptions(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "topics", "create", "opts", "--partitions", "3")
	var want []string
	for _, acks := range []string{"0", "1", "all"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			line := "acks " + acks + " " + codec
			want = append(want, line)
			cli(t, node, line+"\n", "produce", "opts", "--partition", "1", "--acks", acks, "--compression", codec)
		}
	}
	mustPost(t, node.URL+"/kafka/opts", "application/json", `{"records":[{"partition":1,"value":{"via":"http"}}]}`, 200)
	out := cli(t, node, "", "consume", "opts", "--partition", "1", "--offset", "earliest", "--max-messages", "16", "--timeout", "20s")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != 16 || got[15] != `{"via":"http"}` {
		t.Fatalf("partition 1 holds:\n%s\nwant the 15 CLI lines in order, then the HTTP record", out)
	}
	if fmt.Sprint(got[:15]) != fmt.Sprint(want) {
		t.Errorf("partition 1 holds %q, want %q", got[:15], want)
	}
	cli(t, node, "auto\n", "produce", "autocreated") // auto.create.topics.enable is on by default
	if out := cli(t, node, "", "consume", "autocreated", "--from-beginning", "--max-messages", "1", "--timeout", "20s"); out != "auto\n" {
		t.Errorf("auto-created topic holds %q", out)
	}
	res := runCLI(t, "x\n", nil, "produce", "opts", "--partition", "7", "--bootstrap", node.KafkaAddr)
	if res.code != 1 {
		t.Errorf("produce to missing partition 7: exit %d, stderr %q; want 1", res.code, res.stderr)
	}
}

func TestCLIGroups(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "topics", "create", "gt", "--partitions", "1")
	cli(t, node, "1\n2\n3\n4\n5\n", "produce", "gt")
	if out := cli(t, node, "", "consume", "gt", "--group", "g1", "--from-beginning", "--max-messages", "3", "--timeout", "30s"); out != "1\n2\n3\n" {
		t.Fatalf("group consume printed %q, want 1 2 3", out)
	}
	if out := cli(t, node, "", "groups", "list"); !strings.Contains("\n"+out, "\ng1\n") {
		t.Fatalf("groups list lacks g1:\n%s", out)
	}
	describeHas(t, node, "g1", "GROUP g1 STATE Empty MEMBERS 0", "g1 gt 0 3 5 2 - - -")
	if out := cli(t, node, "", "topics", "list"); out != "gt\n" {
		t.Errorf("topics list = %q; want gt alone (internal topics hidden)", out)
	}

	out := cli(t, node, "", "groups", "reset-offsets", "g1", "--topic", "gt", "--to-earliest")
	if !strings.Contains(squeeze(out), "GROUP TOPIC PARTITION NEW-OFFSET\ng1 gt 0 0\n") {
		t.Fatalf("dry run printed:\n%s", out)
	}
	describeHas(t, node, "g1", "g1 gt 0 3 5 2") // a dry run commits nothing
	cli(t, node, "", "topics", "create", "gt2", "--partitions", "2")
	out = cli(t, node, "", "groups", "reset-offsets", "g1", "--topic", "gt", "--topic", "gt2", "--to-latest")
	if !strings.Contains(squeeze(out), "g1 gt 0 5\ng1 gt2 0 0\ng1 gt2 1 0\n") {
		t.Fatalf("two-topic dry run printed:\n%s", out)
	}
	cli(t, node, "", "groups", "reset-offsets", "g1", "--topic", "gt", "--to-offset", "1", "--execute")
	describeHas(t, node, "g1", "g1 gt 0 1 5 4")
	// --timeout counts idle time after the group's first assignment, which
	// alone takes group.initial.rebalance.delay.ms (3s).
	if out := cli(t, node, "", "consume", "gt", "--group", "g1", "--timeout", "2s"); out != "2\n3\n4\n5\n" {
		t.Fatalf("consume after reset to 1 printed %q, want 2 3 4 5", out)
	}
	describeHas(t, node, "g1", "g1 gt 0 5 5 0")

	cli(t, node, "", "groups", "delete", "g1")
	if out := cli(t, node, "", "groups", "list"); strings.Contains("\n"+out, "\ng1\n") {
		t.Errorf("groups list after delete still has g1:\n%s", out)
	}
	res := runCLI(t, "", nil, "groups", "describe", "g1", "--bootstrap", node.KafkaAddr)
	if res.code != 1 || !strings.Contains(res.stderr, `no such consumer group: "g1"`) {
		t.Errorf("describe deleted group: exit %d, stderr %q", res.code, res.stderr)
	}
}

func describeHas(t *testing.T, node *harness.Node, group string, wants ...string) {
	t.Helper()
	out := squeeze(cli(t, node, "", "groups", "describe", group))
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("groups describe %s lacks %q:\n%s", group, want, out)
		}
	}
}

// lockedBuffer is a bytes.Buffer written by exec's copying goroutine and
// read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond every 50ms until it holds or timeout passes.
// TestCLIGroupActiveMember runs a group consumer in the background: describe
// shows it with its assignment, reset-offsets --execute is refused while it
// is a member, and on SIGINT it commits what it printed, leaves, exits 0.
func TestCLIGroupActiveMember(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "topics", "create", "live", "--partitions", "2")
	cli(t, node, "a\nb\nc\n", "produce", "live", "--partition", "0")
	cli(t, node, "d\ne\n", "produce", "live", "--partition", "1")

	consumer := exec.Command(harness.Binary(t), "consume", "live", "--group", "g2", "--from-beginning", "--bootstrap", node.KafkaAddr)
	var stdout, stderr lockedBuffer
	consumer.Stdout, consumer.Stderr = &stdout, &stderr
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { consumer.Process.Kill(); consumer.Wait() })
	harness.WaitFor(t, "5 records consumed", 30*time.Second, func() bool { return len(sortedLines(stdout.String())) == 5 })
	harness.WaitFor(t, "describe to show the member", 30*time.Second, func() bool {
		out := squeeze(runCLI(t, "", nil, "groups", "describe", "g2", "--bootstrap", node.KafkaAddr).stdout)
		return strings.Contains(out, "STATE Stable MEMBERS 1") && strings.Contains(out, " live:0,1\n")
	})
	res := runCLI(t, "", nil, "groups", "reset-offsets", "g2", "--topic", "live", "--to-earliest", "--execute", "--bootstrap", node.KafkaAddr)
	if res.code != 1 || !strings.Contains(res.stderr, "while it has no members") {
		t.Errorf("reset of an active group: exit %d, stderr %q; want 1 and a refusal", res.code, res.stderr)
	}

	consumer.Process.Signal(os.Interrupt)
	if err := consumer.Wait(); err != nil {
		t.Fatalf("consumer after SIGINT: %v\nstderr:\n%s", err, stderr.String())
	}
	if got := sortedLines(stdout.String()); fmt.Sprint(got) != "[a b c d e]" {
		t.Errorf("consumer printed %q", got)
	}
	describeHas(t, node, "g2", "STATE Empty MEMBERS 0", "g2 live 0 3 3 0", "g2 live 1 2 2 0")
}
