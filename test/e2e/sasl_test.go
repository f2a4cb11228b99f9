package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// Passwords of the SASL tests; no log or output may contain them.
const (
	alicePassword = "alice-Pw-7f3a9c"
	bobPassword   = "bob-Pw-51e0d2"
)

// saslNode starts a node with --security (alice and bob super users:
// these tests are about who a client is, acls_test.go about what it may
// do) after creating alice
// (SCRAM-SHA-256) and bob (SCRAM-SHA-512) with `ferry users create
// --data-dir`, before its first start. Every log and CLI output of the
// test is checked for the passwords at cleanup.
func saslNode(t *testing.T, args ...string) *harness.Node {
	t.Helper()
	var outputs []string
	node := harness.StartPrepared(t, func(dir string) {
		pwFile := filepath.Join(t.TempDir(), "bob.pw")
		if err := os.WriteFile(pwFile, []byte(bobPassword+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			stdin string
			args  []string
		}{
			{alicePassword + "\n", []string{"users", "create", "alice", "--data-dir", dir}},
			{"", []string{"users", "create", "bob", "--mechanism", "SCRAM-SHA-512", "--password-file", pwFile, "--data-dir", dir}},
		} {
			res := runCLI(t, run.stdin, nil, run.args...)
			if res.code != 0 {
				t.Fatalf("ferry %v: %d %s", run.args, res.code, res.stderr)
			}
			outputs = append(outputs, res.stdout, res.stderr)
		}
	}, append([]string{"--security", "--super-users", "User:alice;User:bob"}, args...)...)
	node.WaitKafka()
	t.Cleanup(func() {
		for _, text := range append(outputs, node.Logs()) {
			for _, pw := range []string{alicePassword, bobPassword} {
				if strings.Contains(text, pw) {
					t.Errorf("a password appears in the output:\n%s", text)
				}
			}
		}
	})
	return node
}

var (
	alicePlain  = plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()
	aliceScram  = scram.Auth{User: "alice", Pass: alicePassword}.AsSha256Mechanism()
	bobScram512 = scram.Auth{User: "bob", Pass: bobPassword}.AsSha512Mechanism()
)

func createTopicAs(t *testing.T, node *harness.Node, m sasl.Mechanism, name string) {
	t.Helper()
	adm := kadm.NewClient(franz(t, node, kgo.SASL(m)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// franz-go produces and consumes with each mechanism.
func TestSaslFranzEachMechanism(t *testing.T) {
	node := saslNode(t)
	for i, m := range []sasl.Mechanism{alicePlain, aliceScram, bobScram512} {
		topic := fmt.Sprintf("sasl-franz-%d", i)
		createTopicAs(t, node, m, topic)
		cl := franz(t, node, kgo.SASL(m), kgo.DefaultProduceTopic(topic))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for j := range 5 {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", topic, j))).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", m.Name(), err)
			}
		}
		cancel()
		recs := consumeFranz(t, node, topic, 0, 5, kgo.SASL(m))
		checkSequence(t, recs, topic)
	}
}

// kcat (librdkafka) with each mechanism.
func TestSaslKcatEachMechanism(t *testing.T) {
	kcatPath(t)
	node := saslNode(t)
	for i, c := range []struct{ mech, user, pass string }{
		{"PLAIN", "bob", bobPassword},
		{"SCRAM-SHA-256", "alice", alicePassword},
		{"SCRAM-SHA-512", "bob", bobPassword},
	} {
		topic := fmt.Sprintf("sasl-kcat-%d", i)
		createTopicAs(t, node, aliceScram, topic)
		auth := []string{"-b", node.KafkaAddr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + c.mech,
			"-X", "sasl.username=" + c.user, "-X", "sasl.password=" + c.pass}
		kcat(t, "k1:"+c.mech+"-a\nk2:"+c.mech+"-b\n", append(auth, "-P", "-t", topic, "-K:")...)
		out := kcat(t, "", append(auth, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%k:%s\n`)...)
		if want := "k1:" + c.mech + "-a\nk2:" + c.mech + "-b\n"; out != want {
			t.Errorf("%s: consumed %q, want %q", c.mech, out, want)
		}
	}
}

// connHooks counts a franz-go client's connections, disconnections and
// SaslHandshake answers.
type connHooks struct{ connects, disconnects, handshakes atomic.Int32 }

func (h *connHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.connects.Add(1)
	}
}

func (h *connHooks) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.disconnects.Add(1) }

func (h *connHooks) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 17 && err == nil {
		h.handshakes.Add(1)
	}
}

// rawConn speaks the protocol directly, so the test sees what the broker
// sends and when it closes.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, node *harness.Node) *rawConn {
	nc, err := net.Dial("tcp", node.KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))}
}

func (c *rawConn) send(req kmsg.Request) {
	c.corr++
	if _, err := c.nc.Write(c.f.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads one response into resp, or reports the connection closed.
func (c *rawConn) recv(resp kmsg.Response) error {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, frame); err != nil {
		return err
	}
	body := frame[4:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	return resp.ReadFrom(body)
}

func (c *rawConn) do(req kmsg.Request, v int16) kmsg.Response {
	c.t.Helper()
	req.SetVersion(v)
	c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if err := c.recv(resp); err != nil {
		c.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (c *rawConn) expectClosed(what string) {
	c.t.Helper()
	err := c.recv(kmsg.NewPtrMetadataResponse())
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(fmt.Sprint(err), "reset") {
		c.t.Fatalf("%s: %v, want the connection closed", what, err)
	}
}

// authenticate runs m over SaslHandshake v1 and SaslAuthenticate v1.
func (c *rawConn) authenticate(m sasl.Mechanism) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = m.Name()
	if r := c.do(hs, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		c.t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	sess, token, err := m.Authenticate(context.Background(), c.nc.RemoteAddr().String())
	if err != nil {
		c.t.Fatal(err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = token
		resp := c.do(req, 1).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			return resp
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			c.t.Fatal(err)
		}
		if done {
			return resp
		}
		token = next
	}
}

// A wrong password is SASL_AUTHENTICATION_FAILED with Kafka's message,
// then the connection is closed; a franz-go client reports the code.
func TestSaslWrongPasswordClosesTheConnection(t *testing.T) {
	node := saslNode(t)
	c := dialRaw(t, node)
	resp := c.authenticate(scram.Auth{User: "alice", Pass: "not-" + alicePassword}.AsSha256Mechanism())
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Authentication failed: Invalid user credentials" {
		t.Fatalf("wrong password: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed("after a failed authentication")

	cl := franz(t, node, kgo.SASL(plain.Auth{User: "bob", Pass: "wrong"}.AsMechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cl.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("franz-go with a wrong password: %v", err)
	}
}

// A Produce before authentication closes the connection and writes nothing.
func TestSaslUnauthenticatedProduceWritesNothing(t *testing.T) {
	node := saslNode(t)
	createTopicAs(t, node, aliceScram, "sasl-unauth")
	c := dialRaw(t, node)
	var b records.Builder
	b.Add(records.Record{Value: []byte("intruder"), Timestamp: time.Now().UnixMilli()})
	batch, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "sasl-unauth"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	produce.SetVersion(9)
	c.send(produce)
	c.expectClosed("an unauthenticated produce")

	adm := kadm.NewClient(franz(t, node, kgo.SASL(aliceScram)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "sasl-unauth")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("sasl-unauth", 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("end offset after an unauthenticated produce: %+v", o)
	}
}

// With connections.max.reauth.ms=1500 a franz-go producer keeps its
// connections across several session lifetimes (kgo re-authenticates in
// place); a raw client that does not re-authenticate is disconnected.
func TestSaslReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	node := saslNode(t, "--connections-max-reauth-ms", "1500")
	createTopicAs(t, node, aliceScram, "sasl-reauth")
	hooks := &connHooks{}
	cl := franz(t, node, kgo.SASL(aliceScram), kgo.DefaultProduceTopic("sasl-reauth"), kgo.WithHooks(hooks))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	produced := 0
	// Bounded in count and time: about 4 lifetimes, at most 1000 records.
	for produced < 1000 && time.Since(start) < 4*lifetime {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("sasl-reauth-%d", produced))).FirstErr(); err != nil {
			t.Fatalf("record %d after %v: %v", produced, time.Since(start), err)
		}
		produced++
		time.Sleep(20 * time.Millisecond) // pacing, not synchronisation
	}
	if time.Since(start) < 3*lifetime {
		t.Fatalf("only %v of producing", time.Since(start))
	}
	if strings.Contains(node.Logs(), "SASL session expired") || hooks.disconnects.Load() > 0 {
		t.Fatalf("the franz-go client's session expired instead of being renewed (%d disconnects):\n%s",
			hooks.disconnects.Load(), node.Logs())
	}
	// Each connection authenticated once, and again at least twice.
	if hs, conns := hooks.handshakes.Load(), hooks.connects.Load(); hs < conns+2 {
		t.Fatalf("%d handshakes on %d connections: no re-authentication", hs, conns)
	} else {
		t.Logf("%d records over %v, %d handshakes on %d connections", produced, time.Since(start).Round(time.Millisecond), hs, conns)
	}
	checkSequence(t, consumeFranz(t, node, "sasl-reauth", 0, produced, kgo.SASL(bobScram512)), "sasl-reauth")

	c := dialRaw(t, node)
	resp := c.authenticate(bobScram512)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("authenticate: code %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	authenticated := time.Now()
	// Requests are answered while the session lasts; the first one after
	// it ran out closes the connection.
	harness.WaitFor(t, "a request after the session ran out closes the connection", lifetime+10*time.Second, func() bool {
		req, resp := kmsg.NewPtrMetadataRequest(), kmsg.NewPtrMetadataResponse()
		req.SetVersion(12)
		resp.SetVersion(12)
		c.send(req)
		err := c.recv(resp)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("a request during the session: %v", err)
		}
		return err != nil
	})
	if lasted := time.Since(authenticated); lasted < lifetime {
		t.Fatalf("the connection closed after %v, within its %v session", lasted, lifetime)
	}
	harness.WaitFor(t, "the expiry is logged", 10*time.Second, func() bool {
		return strings.Contains(node.Logs(), "closing connection: SASL session expired")
	})
}

// `ferry users` through a SASL listener: the CLI authenticates with the
// --sasl-* flags, salts the new password itself, and the new user logs in
// until deleted. Client commands take the same flags.
func TestSaslUsersCLIOnline(t *testing.T) {
	node := saslNode(t, "--super-users", "User:alice;User:bob;User:carol") // carol, made here, creates a topic
	dir := t.TempDir()
	bobFile := filepath.Join(dir, "bob.pw")
	os.WriteFile(bobFile, []byte(bobPassword+"\n"), 0o600)
	as := []string{"--bootstrap", node.KafkaAddr, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "bob", "--sasl-password-file", bobFile}
	const carolPassword = "carol-Pw-c0ffee"
	run := func(stdin string, args ...string) cliResult {
		res := runCLI(t, stdin, nil, append(args, as...)...)
		for _, pw := range []string{alicePassword, bobPassword, carolPassword} {
			if strings.Contains(res.stdout+res.stderr, pw) {
				t.Errorf("ferry %v printed a password", args)
			}
		}
		return res
	}
	if res := run(carolPassword+"\n", "users", "create", "carol", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192"); res.code != 0 {
		t.Fatalf("create carol: %d %s", res.code, res.stderr)
	}
	res := run("", "users", "list")
	if got := squeeze(res.stdout); res.code != 0 || got != "alice SCRAM-SHA-256 iterations=4096\nbob SCRAM-SHA-512 iterations=4096\ncarol SCRAM-SHA-512 iterations=8192\n" {
		t.Fatalf("users list: %d %q %s", res.code, got, res.stderr)
	}
	carol := scram.Auth{User: "carol", Pass: carolPassword}.AsSha512Mechanism()
	createTopicAs(t, node, carol, "sasl-cli")
	if res := run("", "topics", "list"); res.code != 0 || !strings.Contains(res.stdout, "sasl-cli") {
		t.Fatalf("topics list as bob: %d %q %s", res.code, res.stdout, res.stderr)
	}
	if res := run("", "users", "delete", "carol"); res.code != 0 {
		t.Fatalf("delete carol: %d %s", res.code, res.stderr)
	}
	c := dialRaw(t, node)
	if resp := c.authenticate(carol); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("deleted carol: code %d", resp.ErrorCode)
	}
	if res := run("", "users", "delete", "carol"); res.code == 0 || !strings.Contains(res.stderr, "RESOURCE_NOT_FOUND") {
		t.Errorf("deleting carol twice: %d %s", res.code, res.stderr)
	}
	// Without credentials, a client command fails with Kafka's hint.
	if res := runCLI(t, "", nil, "topics", "list", "--bootstrap", node.KafkaAddr); res.code == 0 {
		t.Errorf("topics list without credentials succeeded")
	}
	if res := runCLI(t, "", nil, "users", "create", "dave", "--password-file", bobFile, "--bootstrap", node.KafkaAddr,
		"--sasl-mechanism", "PLAIN", "--sasl-username", "bob"); res.code == 0 || !strings.Contains(res.stderr, "--sasl-password-file") {
		t.Errorf("a mechanism without a password file: %d %s", res.code, res.stderr)
	}
}
