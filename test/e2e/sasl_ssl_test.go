package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
	"github.com/ferry-mq/ferry/test/harness"
)

// saslSSLNode is a saslNode with a SASL_SSL listener beside the PLAINTEXT
// one, its certificate signed by the test's own CA.
type saslSSLNode struct {
	*harness.Node
	saslSSL string        // the SASL_SSL listener's address
	ca      *tlstest.CA   // signed the broker's certificate
	server  tlstest.Files // the broker's keystore and truststore
}

func startSaslSSLNode(t *testing.T) *saslSSLNode {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ferry test CA")
	server := tlstest.Write(t, dir, "broker", ca, ca.Server(t, "broker"))
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf("ssl.keystore.type=PEM\nssl.keystore.location=%s\nssl.truststore.type=PEM\nssl.truststore.location=%s\n",
		server.Keystore, server.Truststore)), 0o600); err != nil {
		t.Fatal(err)
	}
	saslSSL := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	node := saslNode(t, "--config", props, "--listeners", "PLAINTEXT://{kafka-addr},SASL_SSL://"+saslSSL)
	return &saslSSLNode{Node: node, saslSSL: saslSSL, ca: ca, server: server}
}

// franzOver is a franz-go client of the SASL_SSL listener authenticated by
// m, closed at cleanup.
func (n *saslSSLNode) franzOver(t *testing.T, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	tlsCfg := &tls.Config{RootCAs: n.ca.Pool(), MinVersion: tls.VersionTLS12}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.saslSSL), kgo.DialTLSConfig(tlsCfg), kgo.SASL(m)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// SASL over TLS: a node with a SASL_SSL listener beside the PLAINTEXT one,
// franz-go and kcat producing and consuming over it with PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512; a wrong password is refused there too.
func TestSaslSSLEachMechanism(t *testing.T) {
	n := startSaslSSLNode(t)
	saslSSL, server := n.saslSSL, n.server
	over := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client { return n.franzOver(t, m, opts...) }
	for i, m := range []sasl.Mechanism{alicePlain, aliceScram, bobScram512} {
		topic := fmt.Sprintf("sasl-ssl-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := kadm.NewClient(over(m)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("%s: create %s: %v", m.Name(), topic, err)
		}
		if err := over(m).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("over " + m.Name())}).FirstErr(); err != nil {
			t.Fatalf("%s: produce over SASL_SSL: %v", m.Name(), err)
		}
		fs := over(m, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())).PollRecords(ctx, 1)
		cancel()
		if recs := fs.Records(); fs.Err() != nil || len(recs) != 1 || string(recs[0].Value) != "over "+m.Name() {
			t.Fatalf("%s: consume over SASL_SSL: %v %v", m.Name(), recs, fs.Err())
		}
	}

	for _, tc := range []struct{ mechanism, user, password string }{
		{"PLAIN", "alice", alicePassword}, {"SCRAM-SHA-256", "alice", alicePassword}, {"SCRAM-SHA-512", "bob", bobPassword},
	} {
		base := []string{"-b", saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + server.Truststore,
			"-X", "sasl.mechanisms=" + tc.mechanism, "-X", "sasl.username=" + tc.user, "-X", "sasl.password=" + tc.password}
		topic := "sasl-ssl-0"
		kcat(t, "kcat "+tc.mechanism+"\n", append(base, "-P", "-t", topic)...)
		out := kcat(t, "", append(base, "-C", "-t", topic, "-o", "beginning", "-e")...)
		if !strings.Contains(out, "kcat "+tc.mechanism) {
			t.Fatalf("kcat %s over SASL_SSL read %q", tc.mechanism, out)
		}
	}

	wrong := scram.Auth{User: "alice", Pass: "not-" + alicePassword}.AsSha256Mechanism()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := over(wrong).Ping(ctx); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password over SASL_SSL: %v", err)
	}
}
