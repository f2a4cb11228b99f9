package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// ACLs end to end: a real node with authorizer.class.name=ferry, every
// Kafka client as User:ANONYMOUS (a PLAINTEXT listener), bindings made
// with `ferry acls` and /admin/acls, enforced on franz-go and kcat.

func aclHTTP(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// produceOne sends one record with a fresh franz-go client (no retries of
// an authorization failure: they are not retriable) and returns its error.
func produceOne(t *testing.T, node *harness.Node, topic, value string, opts ...kgo.Opt) error {
	t.Helper()
	cl := franz(t, node, append([]kgo.Opt{kgo.RecordRetries(3), kgo.RequestRetries(3)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func wantAuthFailed(t *testing.T, err error, want *kerr.Error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %s", what, err, want.Message)
	}
}

// endOffsetOf stands for what partition 0 of topic holds: the bytes of its
// segment files on disk. Every surface (HTTP too) asks the same ACLs, so
// the test reads what was stored from the data dir, as nothing refused
// may reach it.
func endOffsetOf(t *testing.T, node *harness.Node, topic string) int64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(node.DataDir, topic+"-0", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("segments of %s-0: %v %v", topic, logs, err)
	}
	var n int64
	for _, l := range logs {
		st, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// kcatProduce runs kcat -P and returns its exit error and stderr.
func kcatProduce(t *testing.T, node *harness.Node, topic, line string) (error, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), "-b", node.KafkaAddr, "-P", "-t", topic, "-X", "message.send.max.retries=0")
	cmd.Stdin = strings.NewReader(line + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return err, stderr.String()
}

// TestACLsEnforcedOnKafkaClients walks the rules with real clients: a
// super user first sets the bindings (CLI and HTTP), then the node
// restarts without it and enforces what survived the restart.
func TestACLsEnforcedOnKafkaClients(t *testing.T) {
	kcatPath(t)
	node := harness.Start(t, "--authorizer-class-name", "ferry", "--super-users", "User:ANONYMOUS")
	node.WaitKafka()
	for _, topic := range []string{"acl-a", "acl-b", "pre-x", "pre-secret-1"} {
		createTopic(t, node, topic, 1)
	}
	// A super user may do anything, with or without bindings.
	if err := produceOne(t, node, "acl-b", "as-super"); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
	if recs := consumeGroup(t, node, "any-group", "acl-b", 1); string(recs[0].Value) != "as-super" {
		t.Fatalf("super user consume: %q", recs[0].Value)
	}
	dirs, err := kadm.NewClient(franz(t, node)).DescribeAllLogDirs(context.Background(), nil)
	if err != nil || len(dirs) != 1 || dirs[0].Error() != nil || dirs[0].Size() == 0 {
		t.Fatalf("super user DescribeLogDirs (DESCRIBE on the cluster): %v %v", err, dirs)
	}
	cli(t, node, "", "acls", "add", "--allow-principal", "User:ANONYMOUS", "--cluster", "--operation", "Alter")
	cli(t, node, "", "acls", "add", "--allow-principal", "User:ANONYMOUS", "--topic", "acl-a", "--operation", "Write", "--operation", "Read")
	cli(t, node, "", "acls", "add", "--allow-principal", "User:*", "--topic", "pre-", "--resource-pattern-type", "prefixed", "--operation", "Write")
	cli(t, node, "", "acls", "add", "--deny-principal", "User:ANONYMOUS", "--topic", "pre-secret", "--resource-pattern-type", "prefixed", "--operation", "Write")
	status, body := aclHTTP(t, "POST", node.URL+"/admin/acls", `{"acls":[
		{"resource_type":"GROUP","resource_name":"g-ok","principal":"User:ANONYMOUS","operation":"READ"}]}`)
	if status != 201 {
		t.Fatalf("POST /admin/acls: %d %s", status, body)
	}
	listed := cli(t, node, "", "acls", "list")
	for _, want := range []string{"name=acl-a, patternType=LITERAL", "operation=WRITE", "name=pre-secret, patternType=PREFIXED",
		"permissionType=DENY", "resourceType=GROUP, name=g-ok", "resourceType=CLUSTER"} {
		if !strings.Contains(listed, want) {
			t.Fatalf("acls list lacks %q:\n%s", want, listed)
		}
	}

	node.Stop()
	node.Args = slices.DeleteFunc(slices.Clone(node.Args), func(a string) bool { return a == "--super-users" || a == "User:ANONYMOUS" })
	node.Restart()
	node.WaitKafka()

	t.Run("literal", func(t *testing.T) {
		if err := produceOne(t, node, "acl-a", "a-1"); err != nil {
			t.Fatalf("produce to acl-a: %v", err)
		}
		before := endOffsetOf(t, node, "acl-b")
		wantAuthFailed(t, produceOne(t, node, "acl-b", "b-1"), kerr.TopicAuthorizationFailed, "produce to acl-b")
		if after := endOffsetOf(t, node, "acl-b"); after != before {
			t.Fatalf("a refused produce wrote: acl-b end offset %d -> %d", before, after)
		}
	})
	t.Run("kcat", func(t *testing.T) {
		if err, stderr := kcatProduce(t, node, "acl-a", "kcat-a"); err != nil {
			t.Fatalf("kcat produce to acl-a: %v\n%s", err, stderr)
		}
		before := endOffsetOf(t, node, "acl-b")
		err, stderr := kcatProduce(t, node, "acl-b", "kcat-b")
		if err == nil || !strings.Contains(strings.ToLower(stderr), "authorization") {
			t.Fatalf("kcat produce to acl-b: %v, want an authorization failure:\n%s", err, stderr)
		}
		if after := endOffsetOf(t, node, "acl-b"); after != before {
			t.Fatalf("kcat's refused produce wrote: %d -> %d", before, after)
		}
	})
	t.Run("sarama and kafka-go", func(t *testing.T) {
		cfg := sarama.NewConfig()
		cfg.Producer.Return.Successes = true
		cfg.Producer.Retry.Max = 0
		producer, err := sarama.NewSyncProducer([]string{node.KafkaAddr}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "acl-a", Value: sarama.StringEncoder("sarama-a")}); err != nil {
			t.Fatalf("sarama produce to acl-a: %v", err)
		}
		before := endOffsetOf(t, node, "acl-b")
		_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: "acl-b", Value: sarama.StringEncoder("sarama-b")})
		if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			t.Fatalf("sarama produce to acl-b: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		w := &kafkago.Writer{Addr: kafkago.TCP(node.KafkaAddr), Topic: "acl-b", Transport: &kafkago.Transport{}, MaxAttempts: 1}
		defer w.Close()
		err = w.WriteMessages(ctx, kafkago.Message{Value: []byte("kafkago-b")})
		// kafka-go reads the metadata of every topic and refuses a topic it
		// does not list by itself; the listing leaves out what the client
		// may not describe, as Kafka's does, so against Kafka it says the same.
		if !errors.Is(err, kafkago.TopicAuthorizationFailed) && !errors.Is(err, kafkago.UnknownTopicOrPartition) {
			t.Fatalf("kafka-go produce to acl-b: %v, want %v", err, kafkago.TopicAuthorizationFailed)
		}
		if after := endOffsetOf(t, node, "acl-b"); after != before {
			t.Fatalf("a refused produce wrote: %d -> %d", before, after)
		}
	})
	t.Run("prefixed and deny over allow", func(t *testing.T) {
		if err := produceOne(t, node, "pre-x", "p"); err != nil {
			t.Fatalf("produce to pre-x (prefixed allow): %v", err)
		}
		wantAuthFailed(t, produceOne(t, node, "pre-secret-1", "s"), kerr.TopicAuthorizationFailed, "produce to pre-secret-1 (denied)")
	})
	t.Run("group needs READ on group and topic", func(t *testing.T) {
		recs := consumeGroup(t, node, "g-ok", "acl-a", 1)
		if string(recs[0].Value) != "a-1" {
			t.Fatalf("consumed %q", recs[0].Value)
		}
		err := consumeGroupErr(t, node, "g-other", "acl-a")
		wantAuthFailed(t, err, kerr.GroupAuthorizationFailed, "consume with group g-other")
		err = consumeGroupErr(t, node, "g-ok", "pre-x") // WRITE only on pre-*: no READ
		wantAuthFailed(t, err, kerr.TopicAuthorizationFailed, "consume pre-x")
	})
	t.Run("metadata hides topics not described", func(t *testing.T) {
		meta := kcat(t, "", "-b", node.KafkaAddr, "-L")
		if !strings.Contains(meta, `topic "acl-a"`) || strings.Contains(meta, `topic "acl-b"`) {
			t.Fatalf("kcat -L should list acl-a and not acl-b:\n%s", meta)
		}
	})
	t.Run("removal through the CLI and HTTP", func(t *testing.T) {
		out := cli(t, node, "", "acls", "remove", "--topic", "acl-a", "--allow-principal", "User:ANONYMOUS", "--operation", "Write")
		if !strings.Contains(out, "Removed 1 ACLs") {
			t.Fatalf("remove: %s", out)
		}
		wantAuthFailed(t, produceOne(t, node, "acl-a", "a-2"), kerr.TopicAuthorizationFailed, "produce to acl-a after removal")
		status, body := aclHTTP(t, "DELETE", node.URL+"/admin/acls", `{"resource_type":"TOPIC","resource_name":"pre-secret","pattern_type":"PREFIXED"}`)
		if status != 200 || !strings.Contains(string(body), `"permission":"DENY"`) {
			t.Fatalf("DELETE /admin/acls: %d %s", status, body)
		}
		if err := produceOne(t, node, "pre-secret-1", "s"); err != nil {
			t.Fatalf("produce to pre-secret-1 once the deny is gone: %v", err)
		}
		status, body = aclHTTP(t, "GET", node.URL+"/admin/acls?resource_type=topic&resource_name=pre-secret-2&pattern_type=match", "")
		var list struct {
			ACLs []struct{ ResourceName, Permission string } `json:"acls"`
		}
		if status != 200 || json.Unmarshal(body, &list) != nil || len(list.ACLs) != 1 || list.ACLs[0].Permission != "ALLOW" {
			t.Fatalf("GET /admin/acls match pre-secret-2: %d %s", status, body)
		}
	})
}

// consumeGroup reads n records of topic as a member of group.
func consumeGroup(t *testing.T, node *harness.Node, group, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := franz(t, node, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: %d of %d records", group, len(out), n)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("group %s: %v", group, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// consumeGroupErr is the first error a group member of topic meets.
func consumeGroupErr(t *testing.T, node *harness.Node, group, topic string) error {
	t.Helper()
	cl := franz(t, node, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fs.Err0(); err != nil {
			return err
		}
		if len(fs.Records()) > 0 {
			return nil
		}
	}
}

// TestACLsAllowEveryoneIfNoACLFound: a resource without bindings is open,
// one with bindings is decided by them.
func TestACLsAllowEveryoneIfNoACLFound(t *testing.T) {
	node := harness.Start(t, "--authorizer-class-name", "kafka.security.authorizer.AclAuthorizer",
		"--allow-everyone-if-no-acl-found", "true")
	node.WaitKafka()
	createTopic(t, node, "open", 1)
	createTopic(t, node, "closed", 1)
	status, body := aclHTTP(t, "POST", node.URL+"/admin/acls", `{"acls":[
		{"resource_type":"TOPIC","resource_name":"closed","principal":"User:alice","operation":"WRITE"}]}`)
	if status != 201 {
		t.Fatalf("POST /admin/acls (the cluster has no ACL, so anyone may): %d %s", status, body)
	}
	if err := produceOne(t, node, "open", "x"); err != nil {
		t.Fatalf("produce to a topic without ACLs: %v", err)
	}
	wantAuthFailed(t, produceOne(t, node, "closed", "x"), kerr.TopicAuthorizationFailed, "produce to a topic only alice may write")
}

// TestACLsOffByDefault: without an authorizer the ACL APIs answer
// SECURITY_DISABLED and everything is allowed.
func TestACLsOffByDefault(t *testing.T) {
	node := kafkaNode(t)
	res := runCLI(t, "", nil, "acls", "list", "--bootstrap", node.KafkaAddr)
	if res.code == 0 || !strings.Contains(res.stderr, "SECURITY_DISABLED") {
		t.Fatalf("acls list without an authorizer: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if status, body := aclHTTP(t, "GET", node.URL+"/admin/acls", ""); status != 501 {
		t.Fatalf("GET /admin/acls without an authorizer: %d %s", status, body)
	}
	createTopic(t, node, "anything", 1)
	if err := produceOne(t, node, "anything", "x"); err != nil {
		t.Fatal(err)
	}
}
