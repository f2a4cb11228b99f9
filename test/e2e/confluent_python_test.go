package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
	"github.com/ferry-mq/ferry/test/harness"
)

// The confluent-kafka Python client (librdkafka underneath, Debian's
// python3-confluent-kafka) against a real node: SASL_SSL with each
// mechanism, a wrong password, mTLS principals under ACLs, and a consumer
// group's commits as franz-go sees them. The client is
// testdata/confluent_client.py; these tests read its JSON output.

// systemPython is Debian's interpreter, named by path: the Debian package
// installs the module for it alone, and a python3 earlier on PATH (pyenv's)
// does not see it.
const systemPython = "/usr/bin/python3"

// confluentPython checks that systemPython imports confluent_kafka; without
// it the test fails under CI and is skipped elsewhere.
func confluentPython(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, "-c", "import confluent_kafka").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s -c 'import confluent_kafka': %v %s", systemPython, err, bytes.TrimSpace(out))
	}
	harness.RequireService(t, "python3-confluent-kafka ("+systemPython+")", err)
}

// pyRecord is a record as the script prints it, produced or consumed.
type pyRecord struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     string  `json:"value"`
}

// pyRun is what one run of the script reported.
type pyRun struct {
	records   []pyRecord
	committed []pyRecord // topic, partition and the offset committed
	errName   string     // librdkafka's error name, "" on success
	errMsg    string
	stderr    string
}

// runConfluent runs the script with librdkafka's config (passed in the
// environment, so passwords stay out of the argument list) and args
// (mode, --topic, --count, …). A run that does not end or prints what
// is not JSON fails the test; a client error is returned in errName.
func runConfluent(t *testing.T, config map[string]string, args ...string) pyRun {
	t.Helper()
	confluentPython(t)
	conf, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, append([]string{filepath.Join("testdata", "confluent_client.py")}, args...)...)
	cmd.Env = append(os.Environ(), "RDKAFKA_CONFIG="+string(conf))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	run := pyRun{stderr: stderr.String()}
	var exit *exec.ExitError
	if runErr != nil && (!errors.As(runErr, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("confluent_client.py %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), runErr, stdout.String(), stderr.String())
	}
	if runErr != nil {
		// librdkafka's own log lines share stderr, some after the script's.
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		for i := len(lines) - 1; i >= 0 && run.errName == ""; i-- {
			var failure struct{ Error, Message string }
			if json.Unmarshal([]byte(lines[i]), &failure) == nil {
				run.errName, run.errMsg = failure.Error, failure.Message
			}
		}
		if run.errName == "" {
			t.Fatalf("confluent_client.py %s exited 1 without an error line:\n%s", strings.Join(args, " "), stderr.String())
		}
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var line struct {
			pyRecord
			Committed []pyRecord `json:"committed"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("confluent_client.py printed %q: %v", sc.Text(), err)
		}
		if line.Committed != nil {
			run.committed = line.Committed
			continue
		}
		run.records = append(run.records, line.pyRecord)
	}
	return run
}

// pyOK fails the test unless the run succeeded.
func pyOK(t *testing.T, what string, run pyRun) pyRun {
	t.Helper()
	if run.errName != "" {
		t.Fatalf("%s: %s: %s\n%s", what, run.errName, run.errMsg, run.stderr)
	}
	return run
}

// checkPySequence asserts recs are partition 0 of topic at offsets
// 0..n-1 with values prefix-i, in order.
func checkPySequence(t *testing.T, what string, recs []pyRecord, topic, prefix string, n int) {
	t.Helper()
	if len(recs) != n {
		t.Fatalf("%s: %d records, want %d: %+v", what, len(recs), n, recs)
	}
	for i, r := range recs {
		if r.Topic != topic || r.Partition != 0 || r.Offset != int64(i) || r.Value != fmt.Sprintf("%s-%d", prefix, i) {
			t.Fatalf("%s: record %d is %+v, want %s-0 offset %d value %s-%d", what, i, r, topic, i, prefix, i)
		}
	}
}

// groupCommits are group's committed offsets of topic, per partition,
// as kadm reads them.
func groupCommits(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	got := map[int32]int64{}
	for p, o := range offsets[topic] {
		if o.Err != nil {
			t.Fatalf("offset of %s in %s-%d: %v", group, topic, p, o.Err)
		}
		got[p] = o.At
	}
	return got
}

// endOffsets are topic's end offsets per partition, as kadm reads them.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	got := map[int32]int64{}
	for p, o := range listed[topic] {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", topic, p, o.Err)
		}
		got[p] = o.Offset
	}
	return got
}

func wantOffsets(t *testing.T, what string, got, want map[int32]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) { // fmt prints maps sorted by key
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// TestConfluentPythonSaslSSL: over SASL_SSL with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512, the Python client produces 20 records with acks=all and
// reads them back in a group; franz-go reads the same offsets and values,
// and kadm sees the group's commit. A wrong password fails authentication
// and writes nothing.
func TestConfluentPythonSaslSSL(t *testing.T) {
	confluentPython(t)
	n := startSaslSSLNode(t)
	const count = 20
	for _, tc := range []struct {
		mechanism, user, password string
		franz                     sasl.Mechanism
	}{
		{"PLAIN", "alice", alicePassword, alicePlain},
		{"SCRAM-SHA-256", "alice", alicePassword, aliceScram},
		{"SCRAM-SHA-512", "bob", bobPassword, bobScram512},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			topic, group := "py-sasl-"+strings.ToLower(tc.mechanism), "py-group-"+strings.ToLower(tc.mechanism)
			adm := kadm.NewClient(n.franzOver(t, tc.franz))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatalf("create %s: %v", topic, err)
			}
			config := map[string]string{"bootstrap.servers": n.saslSSL, "security.protocol": "SASL_SSL",
				"ssl.ca.location": n.server.Truststore, "sasl.mechanism": tc.mechanism,
				"sasl.username": tc.user, "sasl.password": tc.password}

			produced := pyOK(t, "produce", runConfluent(t, config, "produce", "--topic", topic, "--count", fmt.Sprint(count), "--prefix", topic))
			checkPySequence(t, "produced", produced.records, topic, topic, count)
			consumed := pyOK(t, "consume", runConfluent(t, config, "consume", "--topic", topic, "--count", fmt.Sprint(count), "--group", group))
			checkPySequence(t, "consumed", consumed.records, topic, topic, count)
			if len(consumed.committed) != 1 || consumed.committed[0].Offset != count {
				t.Fatalf("the client committed %+v, want %s-0 at %d", consumed.committed, topic, count)
			}

			recs := consumeFranz(t, n.Node, topic, 0, count, kgo.SeedBrokers(n.saslSSL), kgo.DialTLSConfig(tlsTrusting(n.ca)), kgo.SASL(tc.franz))
			checkSequence(t, recs, topic)
			wantOffsets(t, "committed offsets via kadm", groupCommits(t, adm, group, topic), map[int32]int64{0: count})
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		adm := kadm.NewClient(n.franzOver(t, aliceScram))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "py-sasl-refused"); err != nil {
			t.Fatal(err)
		}
		for _, mechanism := range []string{"PLAIN", "SCRAM-SHA-256"} {
			config := map[string]string{"bootstrap.servers": n.saslSSL, "security.protocol": "SASL_SSL",
				"ssl.ca.location": n.server.Truststore, "sasl.mechanism": mechanism,
				"sasl.username": "alice", "sasl.password": "not-" + alicePassword}
			run := runConfluent(t, config, "produce", "--topic", "py-sasl-refused", "--count", "3", "--timeout", "20")
			if run.errName != "_AUTHENTICATION" && run.errName != "SASL_AUTHENTICATION_FAILED" {
				t.Fatalf("%s with a wrong password: %q %s, want an authentication error\n%s", mechanism, run.errName, run.errMsg, run.stderr)
			}
			if len(run.records) != 0 {
				t.Fatalf("%s with a wrong password delivered %+v", mechanism, run.records)
			}
			t.Logf("%s with a wrong password: %s: %s", mechanism, run.errName, run.errMsg)
		}
		wantOffsets(t, "py-sasl-refused after wrong passwords", endOffsets(t, adm, "py-sasl-refused"), map[int32]int64{0: 0})
	})
}

func tlsTrusting(ca *tlstest.CA) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
}

// TestConfluentPythonMTLSACLs: on an SSL listener that requires a client
// certificate, the certificate's CN is the principal the ACLs decide on.
// User:alice may write and read one topic and nothing else; her produce to
// another is TOPIC_AUTHORIZATION_FAILED and writes nothing, and bob's
// certificate, with no bindings, is refused the first topic too.
func TestConfluentPythonMTLSACLs(t *testing.T) {
	confluentPython(t)
	// The PLAINTEXT listener's ANONYMOUS is a super user, to set things up.
	n := startTLSNode(t, "--authorizer-class-name", "ferry", "--super-users", "User:ANONYMOUS")
	bob := tlstest.Write(t, t.TempDir(), "bob", n.ca, n.ca.Client(t, "bob"))
	createTopic(t, n.Node, "py-mtls-allowed", 1)
	createTopic(t, n.Node, "py-mtls-refused", 1)
	cli(t, n.Node, "", "acls", "add", "--allow-principal", "User:alice", "--topic", "py-mtls-allowed",
		"--operation", "Write", "--operation", "Read", "--operation", "Describe")
	cli(t, n.Node, "", "acls", "add", "--allow-principal", "User:alice", "--group", "py-mtls-group", "--operation", "Read")
	adm := kadm.NewClient(franz(t, n.Node))

	as := func(cert tlstest.Files) map[string]string {
		return map[string]string{"bootstrap.servers": n.mtls, "security.protocol": "SSL",
			"ssl.ca.location": n.server.Truststore, "ssl.certificate.location": cert.Cert, "ssl.key.location": cert.Key}
	}
	const count = 20
	produced := pyOK(t, "alice produces to py-mtls-allowed",
		runConfluent(t, as(n.alice), "produce", "--topic", "py-mtls-allowed", "--count", fmt.Sprint(count), "--prefix", "mtls"))
	checkPySequence(t, "produced", produced.records, "py-mtls-allowed", "mtls", count)
	consumed := pyOK(t, "alice consumes py-mtls-allowed",
		runConfluent(t, as(n.alice), "consume", "--topic", "py-mtls-allowed", "--count", fmt.Sprint(count), "--group", "py-mtls-group"))
	checkPySequence(t, "consumed", consumed.records, "py-mtls-allowed", "mtls", count)
	wantOffsets(t, "py-mtls-group's commit via kadm", groupCommits(t, adm, "py-mtls-group", "py-mtls-allowed"), map[int32]int64{0: count})

	before := endOffsetOf(t, n.Node, "py-mtls-refused")
	for _, tc := range []struct {
		who   string
		cert  tlstest.Files
		topic string
	}{{"alice", n.alice, "py-mtls-refused"}, {"bob", bob, "py-mtls-allowed"}} {
		run := runConfluent(t, as(tc.cert), "produce", "--topic", tc.topic, "--count", "3", "--timeout", "20")
		if run.errName != "TOPIC_AUTHORIZATION_FAILED" || len(run.records) != 0 {
			t.Fatalf("%s produces to %s: %q %s, delivered %+v; want TOPIC_AUTHORIZATION_FAILED\n%s",
				tc.who, tc.topic, run.errName, run.errMsg, run.records, run.stderr)
		}
	}
	if after := endOffsetOf(t, n.Node, "py-mtls-refused"); after != before {
		t.Fatalf("a refused produce wrote to py-mtls-refused: %d -> %d bytes", before, after)
	}
	wantOffsets(t, "end offsets", endOffsets(t, adm, "py-mtls-refused"), map[int32]int64{0: 0})
	wantOffsets(t, "end offsets", endOffsets(t, adm, "py-mtls-allowed"), map[int32]int64{0: count})
	harness.WaitFor(t, "alice's and bob's principals logged", 10*time.Second, func() bool {
		return strings.Contains(n.Logs(), "principal=User:alice") && strings.Contains(n.Logs(), "principal=User:bob")
	})
	// librdkafka's Metadata allows auto-creation; of a topic that exists
	// nothing is created, so no CREATE may be logged as refused.
	if strings.Contains(n.Logs(), "operation=CREATE") {
		t.Fatalf("a CREATE refusal was logged though every topic asked for exists:\n%s", n.Logs())
	}
}

// TestConfluentPythonGroupCommit: on three partitions, the group's commit
// is what kadm reads, equal to the end offsets; a second member of the
// group resumes from it, reading only what was produced since.
func TestConfluentPythonGroupCommit(t *testing.T) {
	confluentPython(t)
	node := kafkaNode(t)
	createTopic(t, node, "py-commit", 3)
	adm := kadm.NewClient(franz(t, node))
	config := map[string]string{"bootstrap.servers": node.KafkaAddr}

	first := pyOK(t, "produce", runConfluent(t, config, "produce", "--topic", "py-commit", "--count", "30", "--prefix", "first", "--spread", "3"))
	consumed := pyOK(t, "consume", runConfluent(t, config, "consume", "--topic", "py-commit", "--count", "30", "--group", "py-commit-group"))
	if fmt.Sprint(byPosition(first.records)) != fmt.Sprint(byPosition(consumed.records)) {
		t.Fatalf("consumed %v\nproduced %v", byPosition(consumed.records), byPosition(first.records))
	}
	ends := endOffsets(t, adm, "py-commit")
	committed := map[int32]int64{}
	for _, c := range consumed.committed {
		committed[c.Partition] = c.Offset
	}
	wantOffsets(t, "what the client says it committed", committed, ends)
	wantOffsets(t, "committed offsets via kadm", groupCommits(t, adm, "py-commit-group", "py-commit"), ends)

	second := pyOK(t, "produce more", runConfluent(t, config, "produce", "--topic", "py-commit", "--count", "6", "--prefix", "second", "--spread", "3"))
	resumed := pyOK(t, "consume again", runConfluent(t, config, "consume", "--topic", "py-commit", "--count", "6", "--group", "py-commit-group"))
	if fmt.Sprint(byPosition(second.records)) != fmt.Sprint(byPosition(resumed.records)) {
		t.Fatalf("the group resumed with %v\nwant what was produced since %v", byPosition(resumed.records), byPosition(second.records))
	}
	wantOffsets(t, "committed offsets via kadm after resuming", groupCommits(t, adm, "py-commit-group", "py-commit"), endOffsets(t, adm, "py-commit"))
}

// byPosition maps "partition/offset" to value, for comparing sets of
// records across partitions, whose interleaving is not defined.
func byPosition(recs []pyRecord) map[string]string {
	out := make(map[string]string, len(recs))
	for _, r := range recs {
		out[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r.Value
	}
	return out
}
