package cluster_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
	"github.com/ferry-mq/ferry/test/harness"
)

// Three brokers whose only listener is SASL_SSL, ACLs on (--security):
// they replicate, elect and forward to each other over TLS as
// User:broker, a SCRAM user created in ZooKeeper before they start and
// named in each broker's sasl.jaas.config; clients are alice.
// An acks=all producer goes on through a leader's kill -9, an HTTP
// produce through a node leading nothing is forwarded, and every
// acknowledged record is read back with the killed broker in sync again.
func TestBrokersAuthenticateToEachOtherOverSASLSSL(t *testing.T) {
	connect := freshChroot(t, zks.Require(t).Addr())
	dir := t.TempDir()
	const brokerPassword, alicePassword = "broker-Pw-9c1e", "alice-Pw-44aa"
	// The brokers' own credentials come as a Kafka operator writes them:
	// a JAAS line for the inter-broker listener's mechanism.
	config := filepath.Join(dir, "server.properties")
	jaas := `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="` + brokerPassword + `";` + "\n"
	if err := os.WriteFile(config, []byte(jaas), 0o600); err != nil {
		t.Fatal(err)
	}
	for user, pw := range map[string]string{"broker": brokerPassword, "alice": alicePassword} {
		cmd := exec.Command(harness.Binary(t), "users", "create", user, "--mechanism", "SCRAM-SHA-512", "--zookeeper", connect)
		cmd.Stdin = strings.NewReader(pw + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("users create %s: %v\n%s", user, err, out)
		}
	}
	ca := tlstest.NewCA(t, "ferry cluster CA")
	files := tlstest.Write(t, dir, "broker", ca, ca.Server(t, "broker"))
	nodes := startClusterAt(t, connect, 3, "--security", "--super-users", "User:broker;User:alice",
		"--listeners", "SASL_SSL://{kafka-addr}", "--ssl-keystore-location", files.Keystore, "--ssl-truststore-location", files.Truststore,
		"--config", config)
	alice := scram.Auth{User: "alice", Pass: alicePassword}.AsSha512Mechanism()
	overTLS := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), overTLS, kgo.SASL(alice), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("sasl-replicated"), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "sasl-replicated"); err != nil {
		t.Fatal(err)
	}
	acked := map[int64]string{}
	produce := func(from, n int) {
		for i := from; i < from+n; i++ {
			v := fmt.Sprintf("v%04d", i)
			res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)})
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[res[0].Record.Offset] = v
		}
	}
	harness.WaitFor(t, "sasl-replicated fully in sync", 60*time.Second, func() bool {
		d, err := adm.ListTopics(ctx, "sasl-replicated")
		if err != nil {
			return false
		}
		p := d["sasl-replicated"].Partitions[0]
		return p.Leader > 0 && len(p.ISR) == 3
	})
	produce(0, 100)
	leader := leaderOf(t, adm, "sasl-replicated")
	nodes[leader-1].Kill()
	produce(100, 100) // through a new leader, elected and followed over SASL
	nodes[leader-1].Restart()
	harness.WaitFor(t, "the killed broker back in sync", 60*time.Second, func() bool {
		d, err := adm.ListTopics(ctx, "sasl-replicated")
		return err == nil && len(d["sasl-replicated"].Partitions[0].ISR) == 3
	})

	// HTTP produce through a broker that does not lead: forwarded over the
	// inter-broker listener, as User:broker.
	leader = leaderOf(t, adm, "sasl-replicated")
	other := nodes[leader%3]
	req, _ := http.NewRequest("POST", other.URL+"/kafka/sasl-replicated", strings.NewReader(`"over http"`))
	req.SetBasicAuth("alice", alicePassword)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("HTTP produce through broker %s: %d", other.URL, res.StatusCode)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), overTLS, kgo.SASL(alice),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"sasl-replicated": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[int64]string{}
	for len(seen) < len(acked)+1 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[r.Offset] = string(r.Value) })
	}
	for off, v := range acked {
		if seen[off] != v {
			t.Fatalf("acknowledged %s at %d; the log has %q", v, off, seen[off])
		}
	}
	for _, n := range nodes {
		if strings.Contains(n.Logs(), brokerPassword) || strings.Contains(n.Logs(), alicePassword) {
			t.Fatal("a password reached a broker's log")
		}
	}
	t.Logf("%d records acknowledged across a leader kill, all kept; replication, elections and forwarding as User:broker", len(acked))
}
