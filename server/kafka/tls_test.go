package kafka

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/tlsconf"
	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"

	"github.com/ferry-mq/ferry/test/harness"
)

type tlsTestServer struct {
	*Server
	plain, secure string // the listeners' addresses
	ca            *tlstest.CA
	files         tlstest.Files
	logs          *logSink
	broker        *server.Broker
}

// newTLSTestServer serves a PLAINTEXT and an SSL listener on one broker.
func newTLSTestServer(t testing.TB, clientAuth tlsconf.ClientAuth) *tlsTestServer {
	t.Helper()
	logs := &logSink{t: t, done: true} // kept for has, not echoed
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ca := tlstest.NewCA(t, "test CA")
	files := tlstest.Write(t, t.TempDir(), "broker", ca, ca.Server(t, "broker"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: files.Keystore, TruststoreLocation: files.Truststore, ClientAuth: clientAuth}, logger)
	if err != nil {
		t.Fatal(err)
	}
	plainLn, _ := net.Listen("tcp", "127.0.0.1:0")
	secureLn, _ := net.Listen("tcp", "127.0.0.1:0")
	// As serve does: the core's advertised address is the first listener's.
	b, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true, AdvertisedKafkaAddr: plainLn.Addr().String()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := group.New(b, group.Config{Logger: logger, InitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(b, g, Config{Logger: logger, Listeners: []Listener{
		{Name: "PLAINTEXT", Addr: plainLn.Addr().String(), Protocol: auth.Plaintext},
		{Name: "SECURE", Addr: secureLn.Addr().String(), Protocol: auth.SSL, TLS: src.ServerConfig()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener("PLAINTEXT", plainLn)
	go s.ServeListener("SECURE", secureLn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		g.Close()
		b.Close()
	})
	return &tlsTestServer{Server: s, plain: plainLn.Addr().String(), secure: secureLn.Addr().String(), ca: ca, files: files, logs: logs, broker: b}
}

func (ts *tlsTestServer) tlsClient(t testing.TB, cert *tlstest.Leaf, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: ts.ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLS}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.secure), kgo.DialTLSConfig(cfg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func metadataPorts(t *testing.T, cl *kgo.Client) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var ports []int32
	for _, b := range resp.Brokers {
		ports = append(ports, b.Port)
	}
	return ports
}

func portOf(addr string) int32 {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// TestTLSListenerNextToPlaintext: each listener's Metadata names its own
// port; records produced over TLS are read back over both listeners,
// large enough to be served from the segment files, which TLS
// connections copy rather than sendfile.
func TestTLSListenerNextToPlaintext(t *testing.T) {
	ts := newTLSTestServer(t, tlsconf.ClientAuthNone)
	secure := ts.tlsClient(t, nil, kgo.DefaultProduceTopic("secured"), kgo.AllowAutoTopicCreation())
	plain, err := kgo.NewClient(kgo.SeedBrokers(ts.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	if got := metadataPorts(t, secure); len(got) != 1 || got[0] != portOf(ts.secure) {
		t.Fatalf("Metadata on the SSL listener: ports %v, want [%d]", got, portOf(ts.secure))
	}
	if got := metadataPorts(t, plain); len(got) != 1 || got[0] != portOf(ts.plain) {
		t.Fatalf("Metadata on the PLAINTEXT listener: ports %v, want [%d]", got, portOf(ts.plain))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for cl, want := range map[*kgo.Client]int32{secure: portOf(ts.secure), plain: portOf(ts.plain)} {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "a-group"
		var fresp *kmsg.FindCoordinatorResponse
		var err error
		harness.WaitFor(t, "the coordinator answers (COORDINATOR_NOT_AVAILABLE while the offsets load)", 10*time.Second, func() bool {
			fresp, err = fc.RequestWith(ctx, cl)
			return err != nil || fresp.ErrorCode != kerr.CoordinatorNotAvailable.Code
		})
		if err != nil || fresp.ErrorCode != 0 || fresp.Port != want {
			msg := ""
			if fresp != nil && fresp.ErrorMessage != nil {
				msg = *fresp.ErrorMessage
			}
			t.Fatalf("FindCoordinator: %+v (%s), %v; want port %d", fresp, msg, err, want)
		}
		dresp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil || len(dresp.Brokers) != 1 || dresp.Brokers[0].Port != want {
			t.Fatalf("DescribeCluster: %+v %v; want port %d", dresp, err, want)
		}
	}
	value := bytes.Repeat([]byte("secret "), 4096) // large enough that sendfile would be used on plaintext
	for i := range 20 {
		if err := secure.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	secureConsumer := ts.tlsClient(t, nil, kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	plainConsumer, err := kgo.NewClient(kgo.SeedBrokers(ts.plain), kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer plainConsumer.Close()
	for _, cl := range []*kgo.Client{secureConsumer, plainConsumer} {
		got := 0
		for got < 20 {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if !bytes.Equal(r.Value, value) {
					t.Fatalf("record %s: value of %d bytes differs", r.Key, len(r.Value))
				}
				got++
			})
		}
	}

	ts.mu.Lock()
	defer ts.mu.Unlock()
	tlsConns := 0
	for c := range ts.mu.conns {
		if c.tls != nil {
			tlsConns++
			// Its Fetch answers' file sections go through the TLS
			// connection, never to the kernel's sendfile (which would
			// send them unencrypted: the records above would not have
			// been read back).
			if _, raw := c.nc.(*net.TCPConn); raw || c.listener != "SECURE" || c.protocol != auth.SSL {
				t.Errorf("TLS connection: raw TCP %v, listener %s, protocol %v", raw, c.listener, c.protocol)
			}
		} else if c.listener != "PLAINTEXT" {
			t.Errorf("plaintext connection on listener %s", c.listener)
		}
	}
	if tlsConns == 0 {
		t.Fatal("no TLS connection is open")
	}
}

// TestTLSClientCertificatePrincipal: a client certificate's CN becomes
// the connection's principal; without one the client is anonymous.
func TestTLSClientCertificatePrincipal(t *testing.T) {
	ts := newTLSTestServer(t, tlsconf.ClientAuthRequested)
	alice := ts.tlsClient(t, ts.ca.Client(t, "alice"))
	metadataPorts(t, alice)
	if !ts.logs.has("TLS connection", "principal=User:alice", "client_certificate=true") {
		t.Fatal("no connection logged with principal User:alice")
	}
	anon := ts.tlsClient(t, nil)
	metadataPorts(t, anon)
	if !ts.logs.has("TLS connection", "principal=User:ANONYMOUS", "client_certificate=false") {
		t.Fatal("no anonymous TLS connection logged")
	}
}

// TestTLSRequiredClientAuth: ssl.client.auth=required refuses a client
// without a certificate, and one whose certificate another CA signed.
func TestTLSRequiredClientAuth(t *testing.T) {
	ts := newTLSTestServer(t, tlsconf.ClientAuthRequired)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	other := tlstest.NewCA(t, "other CA")
	for name, cert := range map[string]*tlstest.Leaf{"none": nil, "other CA": other.Client(t, "mallory")} {
		cl := ts.tlsClient(t, cert, kgo.RequestRetries(0))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil {
			t.Fatalf("client certificate %s: Metadata answered", name)
		}
	}
	if !ts.logs.has("TLS handshake failed") {
		t.Fatal("the refused handshakes were not logged")
	}
	bob := ts.tlsClient(t, ts.ca.Client(t, "bob"))
	metadataPorts(t, bob)
	if !ts.logs.has("principal=User:bob") {
		t.Fatal("bob's connection was not logged with his principal")
	}
}

func TestListenerValidation(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g, err := group.New(b, group.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, tc := range []struct {
		ls   []Listener
		want string
	}{
		{[]Listener{{Name: "A", Addr: ":1"}, {Name: "A", Addr: ":2"}}, "given twice"},
		{[]Listener{{Name: "SSL", Addr: ":1", Protocol: auth.SSL}}, "no TLS configuration"},
		{[]Listener{{Name: "", Addr: ":1"}}, "listener name"},
		{[]Listener{{Name: "X", Addr: ":1", Advertised: "nohost"}}, "advertised address"},
	} {
		if _, err := New(b, g, Config{Listeners: tc.ls}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.ls, err, tc.want)
		}
	}
}

// TestMetadataPerListenerOnCluster: with the controller's view, each
// listener lists the brokers that have it; a partition led by a broker
// without the listener answers LEADER_NOT_AVAILABLE there.
func TestMetadataPerListenerOnCluster(t *testing.T) {
	ts := newTLSTestServer(t, tlsconf.ClientAuthNone)
	plainPort, securePort := portOf(ts.plain), portOf(ts.secure)
	brokers := []server.ClusterBroker{
		{ID: 0, Host: "127.0.0.1", Port: plainPort, Endpoints: []server.Endpoint{
			{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: plainPort}, {Listener: "SECURE", Host: "127.0.0.1", Port: securePort, Protocol: 1}}},
		{ID: 1, Host: "127.0.0.1", Port: 1, Endpoints: []server.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}},
	}
	parts := map[server.TopicPartition]server.PartitionView{
		{Topic: "elsewhere", Partition: 0}: {Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 0}, Replicas: []int32{1, 0}},
		{Topic: "elsewhere", Partition: 1}: {Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}, Replicas: []int32{0, 1}},
	}
	if err := ts.broker.ApplyUpdateMetadata(0, 1, brokers, parts); err != nil {
		t.Fatal(err)
	}
	ask := func(cl *kgo.Client) *kmsg.MetadataResponse {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("elsewhere")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(ts.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	resp := ask(plain)
	if len(resp.Brokers) != 2 || resp.Brokers[0].Port != plainPort || resp.Brokers[1].NodeID != 1 {
		t.Fatalf("PLAINTEXT brokers %+v", resp.Brokers)
	}
	if p := resp.Topics[0].Partitions[0]; p.Leader != 1 || p.ErrorCode != 0 {
		t.Fatalf("PLAINTEXT partition 0: leader %d, error %d", p.Leader, p.ErrorCode)
	}
	resp = ask(ts.tlsClient(t, nil))
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Port != securePort {
		t.Fatalf("SECURE brokers %+v", resp.Brokers)
	}
	ps := resp.Topics[0].Partitions
	if ps[0].Leader != -1 || ps[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("SECURE partition 0 (led by a broker without the listener): leader %d, error %d", ps[0].Leader, ps[0].ErrorCode)
	}
	if ps[1].Leader != 0 || ps[1].ErrorCode != 0 {
		t.Fatalf("SECURE partition 1: leader %d, error %d", ps[1].Leader, ps[1].ErrorCode)
	}
}
