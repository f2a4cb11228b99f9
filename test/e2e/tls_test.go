package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
	"github.com/ferry-mq/ferry/test/harness"
)

// tlsNode is a node with three listeners: PLAINTEXT (the harness's
// KafkaAddr), SSL (client certificates requested) and MTLS, an SSL
// listener whose listener.name.mtls.ssl.client.auth=required comes from
// server.properties. Extra serve flags (an authorizer, say) go to startTLSNode.
type tlsNode struct {
	*harness.Node
	ssl, mtls string
	ca        *tlstest.CA
	server    tlstest.Files // the broker's keystore and truststore
	alice     tlstest.Files // a client certificate, CN alice
}

func startTLSNode(t *testing.T, extra ...string) *tlsNode {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ferry test CA")
	n := &tlsNode{ca: ca,
		server: tlstest.Write(t, dir, "broker", ca, ca.Server(t, "broker")),
		alice:  tlstest.Write(t, dir, "alice", ca, ca.Client(t, "alice")),
		ssl:    fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		mtls:   fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf(`listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL
ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.truststore.type=PEM
ssl.truststore.location=%s
ssl.client.auth=requested
listener.name.mtls.ssl.client.auth=required
`, n.server.Keystore, n.server.Truststore)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The listeners are a flag: the harness fills in {kafka-addr}.
	n.Node = harness.Start(t, append([]string{"--config", props, "--log-level", "debug",
		"--listeners", fmt.Sprintf("PLAINTEXT://{kafka-addr},SSL://%s,MTLS://%s", n.ssl, n.mtls)}, extra...)...)
	n.WaitKafka()
	return n
}

// kcatSSL runs kcat against addr over SSL; cert adds a client certificate.
func (n *tlsNode) kcatSSL(t *testing.T, stdin, addr string, cert *tlstest.Files, args ...string) string {
	t.Helper()
	base := []string{"-b", addr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + n.server.Truststore}
	if cert != nil {
		base = append(base, "-X", "ssl.certificate.location="+cert.Cert, "-X", "ssl.key.location="+cert.Key)
	}
	return kcat(t, stdin, append(base, args...)...)
}

func (n *tlsNode) franzTLS(t *testing.T, addr string, cert *tlstest.Leaf, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: n.ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLS}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(cfg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKafkaTLSListeners: kcat and franz-go over SSL, with and without a
// client certificate; each listener's Metadata names its own port; a
// client certificate's CN is the connection's principal; the CLI's --tls
// flags.
func TestKafkaTLSListeners(t *testing.T) {
	kcatPath(t)
	n := startTLSNode(t)
	createTopic(t, n.Node, "secure", 1)

	for addr, proto := range map[string][]string{n.KafkaAddr: nil, n.ssl: {"ssl"}} {
		var meta string
		if proto == nil {
			meta = kcat(t, "", "-b", addr, "-L")
		} else {
			meta = n.kcatSSL(t, "", addr, nil, "-L")
		}
		if !strings.Contains(meta, "broker 0 at "+addr) || strings.Count(meta, "broker 0 at") != 1 {
			t.Fatalf("kcat -L on %s does not name that listener alone:\n%s", addr, meta)
		}
	}

	n.kcatSSL(t, "k1:over-tls\nk2:with-a-certificate\n", n.ssl, &n.alice, "-P", "-t", "secure", "-K:")
	harness.WaitFor(t, "alice's connection logged with her principal", 10*time.Second, func() bool {
		return strings.Contains(n.Logs(), "principal=User:alice") && strings.Contains(n.Logs(), "listener=SSL")
	})
	got := n.kcatSSL(t, "", n.ssl, nil, "-C", "-t", "secure", "-o", "beginning", "-e", "-f", "%k=%s\n")
	if got != "k1=over-tls\nk2=with-a-certificate\n" {
		t.Fatalf("kcat read over SSL:\n%s", got)
	}
	if !strings.Contains(n.Logs(), "principal=User:ANONYMOUS") {
		t.Fatal("the certificate-less kcat was not logged as anonymous")
	}

	// franz-go: produce over TLS, read back over plaintext (the same log).
	cl := n.franzTLS(t, n.ssl, nil, kgo.DefaultProduceTopic("secure"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k3"), Value: []byte("from franz-go")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	recs := consumeFranz(t, n.Node, "secure", 0, 3)
	if string(recs[2].Value) != "from franz-go" {
		t.Fatalf("third record %q", recs[2].Value)
	}

	// The CLI over TLS; without --tls it cannot speak to the SSL listener.
	res := runCLI(t, "", nil, "topics", "list", "--bootstrap", n.ssl, "--tls", "--tls-ca-file", n.server.Truststore)
	if res.code != 0 || !strings.Contains(res.stdout, "secure") {
		t.Fatalf("ferry topics list --tls: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, "", nil, "topics", "list", "--bootstrap", n.mtls, "--tls", "--tls-ca-file", n.server.Truststore,
		"--tls-cert-file", n.alice.Cert, "--tls-key-file", n.alice.Key)
	if res.code != 0 || !strings.Contains(res.stdout, "secure") {
		t.Fatalf("ferry topics list with a client certificate: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, "", nil, "topics", "list", "--bootstrap", n.ssl, "--tls-ca-file", n.server.Truststore)
	if res.code == 0 || !strings.Contains(res.stderr, "need --tls") {
		t.Fatalf("--tls-ca-file without --tls: exit %d\n%s", res.code, res.stderr)
	}
}

// TestKafkaTLSRequiredClientAuth: the MTLS listener (ssl.client.auth=
// required, from listener.name.mtls.ssl.client.auth) refuses kcat and
// franz-go without a certificate and serves them with one.
func TestKafkaTLSRequiredClientAuth(t *testing.T) {
	kcatPath(t)
	n := startTLSNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), "-b", n.mtls, "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+n.server.Truststore,
		"-m", "5", "-L")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kcat without a certificate listed the MTLS listener:\n%s", out)
	}
	anon := n.franzTLS(t, n.mtls, nil, kgo.RequestRetries(0))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, anon); err == nil {
		t.Fatal("franz-go without a certificate got Metadata from the MTLS listener")
	}
	harness.WaitFor(t, "the refused handshakes logged", 10*time.Second, func() bool {
		return strings.Contains(n.Logs(), "TLS handshake failed") && strings.Contains(n.Logs(), "listener=MTLS")
	})
	meta := n.kcatSSL(t, "", n.mtls, &n.alice, "-L")
	if !strings.Contains(meta, "broker 0 at "+n.mtls) {
		t.Fatalf("kcat with a certificate on MTLS:\n%s", meta)
	}
	bob := n.franzTLS(t, n.mtls, n.ca.Client(t, "bob"))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bob); err != nil {
		t.Fatalf("franz-go with a certificate: %v", err)
	}
	harness.WaitFor(t, "bob's principal logged", 10*time.Second, func() bool {
		return strings.Contains(n.Logs(), "principal=User:bob")
	})
}

// TestKafkaTLSCertificateReload: the keystore replaced on disk serves the
// next connection, without a restart; a connection opened before keeps
// working; a broken replacement keeps the last good certificate.
func TestKafkaTLSCertificateReload(t *testing.T) {
	n := startTLSNode(t)
	createTopic(t, n.Node, "renewed", 1)
	servedCN := func() string {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.ssl, &tls.Config{RootCAs: n.ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("TLS dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := servedCN(); cn != "broker" {
		t.Fatalf("served CN %q", cn)
	}
	old := n.franzTLS(t, n.ssl, nil, kgo.DefaultProduceTopic("renewed"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := old.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	tlstest.WriteFile(t, n.server.Keystore, n.ca.Server(t, "broker-renewed").KeystorePEM)
	harness.WaitFor(t, "new connections get the renewed certificate", 20*time.Second, func() bool { return servedCN() == "broker-renewed" })
	// The swap comes before its log line: the next handshake may see the
	// new certificate before the line is written.
	harness.WaitFor(t, "the reload logged", 10*time.Second, func() bool { return strings.Contains(n.Logs(), "TLS files reloaded") })
	if err := old.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("a client connected before the reload: %v", err)
	}

	tlstest.WriteFile(t, n.server.Keystore, []byte("not PEM at all\n"))
	// Files are looked at on a handshake: each poll makes one.
	harness.WaitFor(t, "the broken keystore logged", 20*time.Second, func() bool {
		if cn := servedCN(); cn != "broker-renewed" {
			t.Fatalf("after a broken keystore, served %q", cn)
		}
		return strings.Contains(n.Logs(), "TLS files changed but cannot be used")
	})
	recs := consumeFranz(t, n.Node, "renewed", 0, 2)
	if string(recs[0].Value) != "before" || string(recs[1].Value) != "after" {
		t.Fatalf("records %q %q", recs[0].Value, recs[1].Value)
	}
}

// TestHTTPOverTLS: ferry.http.tls.enable serves the HTTP port over TLS
// with the Kafka keystore; plain HTTP on it is refused.
func TestHTTPOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ferry test CA")
	files := tlstest.Write(t, dir, "broker", ca, ca.Server(t, "broker"))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	cmd := exec.Command(harness.Binary(t), "serve", "--data-dir", filepath.Join(dir, "data"), "--http-addr", httpAddr,
		"--kafka-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		"--http-tls-enable", "true", "--ssl-keystore-location", files.Keystore)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("ferry logs:\n%s", logs.String())
		}
	})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	harness.WaitFor(t, "https /healthz answers 200", 30*time.Second, func() bool {
		res, err := client.Get("https://" + httpAddr + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	res, err := client.Post("https://"+httpAddr+"/topics", "application/json", strings.NewReader(`{"name":"over-https","partitions":1}`))
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create a topic over https: %v %v", res, err)
	}
	res.Body.Close()
	plain, err := http.Get("http://" + httpAddr + "/healthz")
	if err == nil {
		defer plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP on the TLS port answered %d", plain.StatusCode)
		}
	}
	untrusting := &http.Client{Timeout: 5 * time.Second}
	if _, err := untrusting.Get("https://" + httpAddr + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the CA: %v", err)
	}
}
