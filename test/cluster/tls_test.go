package cluster_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
	"github.com/ferry-mq/ferry/test/harness"
)

// Three brokers whose inter-broker listener, INTERNAL, is SSL with
// client certificates required (each broker's own certificate, one CA),
// while clients use a PLAINTEXT EXTERNAL listener: replication, the
// controller's requests and forwarding all go over TLS. An acks=all
// producer writes while the leader is killed (kill -9); every
// acknowledged record is read back. Metadata on each listener names that
// listener's ports.
func TestInterBrokerTLS(t *testing.T) {
	zkAddr := zks.Require(t).Addr()
	chroot := "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	connect := zkAddr + chroot
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ferry cluster CA")
	internal := make([]string, 3)
	nodes := make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		id := i + 1
		files := tlstest.Write(t, dir, "broker-"+strconv.Itoa(id), ca, ca.Server(t, "broker-"+strconv.Itoa(id)))
		internal[i] = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		args := []string{"--broker-id", strconv.Itoa(id), "--zookeeper", connect, "--zookeeper-session-timeout-ms", "6000",
			"--log-level", "debug",
			"--listeners", "EXTERNAL://{kafka-addr},INTERNAL://" + internal[i],
			"--listener-security-protocol-map", "EXTERNAL:PLAINTEXT,INTERNAL:SSL",
			"--inter-broker-listener-name", "INTERNAL",
			"--ssl-keystore-location", files.Keystore, "--ssl-truststore-location", files.Truststore,
			"--ssl-client-auth", "required"}
		wg.Go(func() { nodes[i] = harness.Start(t, args...) })
	}
	wg.Wait()
	for _, n := range nodes {
		if n == nil {
			t.FailNow()
		}
	}

	checkRegistration(t, zkAddr, chroot+"/brokers/ids/1", nodes[0].KafkaAddr, internal[0])
	cl, adm := replicatedProducer(t, nodes, "secured")
	acked := map[int64]string{}
	produce := func(from, count int) {
		for i := from; i < from+count; i++ {
			v := fmt.Sprintf("v%05d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)})
			cancel()
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[res[0].Record.Offset] = v
		}
	}
	produce(0, 50)
	checkListenerPorts(t, nodes, internal, ca)
	harness.WaitFor(t, "the followers fetch over TLS with their own certificates", 30*time.Second, func() bool {
		for _, n := range nodes {
			if strings.Contains(n.Logs(), "listener=INTERNAL principal=User:broker-") {
				return true
			}
		}
		return false
	})

	leader := leaderOf(t, adm, "secured")
	nodes[leader-1].Kill()
	produce(50, 50) // the producer retries until a new leader, elected over TLS, answers
	nodes[leader-1].Restart()
	produce(100, 20)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secured": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[int64]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(seen) < len(acked) && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[r.Offset] = string(r.Value) })
	}
	for off, v := range acked {
		if seen[off] != v {
			t.Fatalf("acknowledged %s at offset %d; the log has %q there", v, off, seen[off])
		}
	}
	// The restarted broker catches up over TLS: all three are in the ISR.
	harness.WaitFor(t, "the restarted broker back in the ISR", 60*time.Second, func() bool {
		md, err := adm.Metadata(ctx, "secured")
		return err == nil && len(md.Topics["secured"].Partitions[0].ISR) == 3
	})
}

// checkListenerPorts: Metadata on EXTERNAL names the EXTERNAL ports,
// on INTERNAL (over TLS, with a broker's certificate) the INTERNAL ones.
func checkListenerPorts(t *testing.T, nodes []*harness.Node, internal []string, ca *tlstest.CA) {
	t.Helper()
	ports := func(cl *kgo.Client) map[int32]string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]string{}
		for _, b := range resp.Brokers {
			out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		return out
	}
	external, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer external.Close()
	cert := ca.Client(t, "operator")
	internalCl, err := kgo.NewClient(kgo.SeedBrokers(internal[0]),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert.TLS}}))
	if err != nil {
		t.Fatal(err)
	}
	defer internalCl.Close()
	harness.WaitFor(t, "both listeners list three brokers", 30*time.Second, func() bool {
		return len(ports(external)) == 3 && len(ports(internalCl)) == 3
	})
	ext, in := ports(external), ports(internalCl)
	for i, n := range nodes {
		id := int32(i + 1)
		if ext[id] != n.KafkaAddr || in[id] != internal[i] {
			t.Fatalf("broker %d: EXTERNAL says %s (want %s), INTERNAL says %s (want %s)", id, ext[id], n.KafkaAddr, in[id], internal[i])
		}
	}
}

// Two brokers serving HTTP over TLS (ferry.http.tls.enable): a node
// gathers GET /groups from the other over https, trusting the
// truststore, so no broker is unreachable; a group's requests handed to
// its coordinator go over https too.
func TestHTTPRelaysOverTLS(t *testing.T) {
	connect := zks.Require(t).Addr() + "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ferry cluster CA")
	nodes := make([]*harness.Node, 2)
	var wg sync.WaitGroup
	for i := range nodes {
		id := strconv.Itoa(i + 1)
		files := tlstest.Write(t, dir, "broker-"+id, ca, ca.Server(t, "broker-"+id))
		args := []string{"--broker-id", id, "--zookeeper", connect, "--zookeeper-session-timeout-ms", "6000",
			"--offsets-topic-replication-factor", "1", "--offsets-topic-num-partitions", "4", "--group-initial-rebalance-delay-ms", "0",
			"--http-tls-enable", "true", "--ssl-keystore-location", files.Keystore, "--ssl-truststore-location", files.Truststore}
		wg.Go(func() { nodes[i] = harness.StartHTTPS(t, ca.Pool(), args...) })
	}
	wg.Wait()
	for _, n := range nodes {
		if n == nil {
			t.FailNow()
		}
	}
	// Groups on both coordinators: one joined through each node's Kafka
	// listener lands on whichever broker leads its offsets partition.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "relayed"); err != nil {
		t.Fatal(err)
	}
	for g := range 8 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumerGroup(fmt.Sprintf("g%d", g)), kgo.ConsumeTopics("relayed"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		go cl.PollFetches(ctx)
	}
	// groupsOf is node's GET /groups; local asks it for its own groups
	// only, as a peer would (the hand-on header).
	groupsOf := func(n *harness.Node, local bool) (names []string, body string) {
		req, _ := http.NewRequest(http.MethodGet, n.URL+"/groups", nil)
		if local {
			req.Header.Set("X-Ferry-Forwarded-By", "99")
		}
		res, err := n.HTTPClient.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer res.Body.Close()
		var answer struct {
			Groups []struct {
				Group string `json:"group"`
			} `json:"groups"`
			Unreachable []int32 `json:"unreachable_brokers"`
		}
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || json.Unmarshal(data, &answer) != nil || len(answer.Unreachable) > 0 {
			return nil, string(data)
		}
		for _, g := range answer.Groups {
			names = append(names, g.Group)
		}
		return names, string(data)
	}
	var body string
	defer func() {
		if t.Failed() {
			t.Logf("last gathered GET /groups: %s", body)
		}
	}()
	harness.WaitFor(t, "node 1 lists the groups node 2 coordinates, gathered over https", 60*time.Second, func() bool {
		theirs, _ := groupsOf(nodes[1], true)
		all, b := groupsOf(nodes[0], false)
		body = b
		if len(theirs) == 0 || all == nil {
			return false
		}
		for _, g := range theirs {
			if !slices.Contains(all, g) {
				return false
			}
		}
		return true
	})
	// Plain http to a TLS port is refused, so the relay above was https.
	if res, err := http.Get(strings.Replace(nodes[1].URL, "https://", "http://", 1) + "/groups"); err == nil {
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to a TLS port: %d (last gathered answer %s)", res.StatusCode, body)
		}
	}
}

// checkRegistration reads a broker's znode as an operator would: Kafka's
// endpoints and listener_security_protocol_map, and host/port of the
// PLAINTEXT-protocol endpoint.
func checkRegistration(t *testing.T, zkAddr, path, external, internal string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	var reg struct {
		Endpoints   []string          `json:"endpoints"`
		ProtocolMap map[string]string `json:"listener_security_protocol_map"`
		Host        string            `json:"host"`
		Port        int               `json:"port"`
	}
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	host, port, _ := net.SplitHostPort(external)
	if !slices.Equal(reg.Endpoints, []string{"EXTERNAL://" + external, "INTERNAL://" + internal}) ||
		reg.ProtocolMap["EXTERNAL"] != "PLAINTEXT" || reg.ProtocolMap["INTERNAL"] != "SSL" || len(reg.ProtocolMap) != 2 ||
		reg.Host != host || strconv.Itoa(reg.Port) != port {
		t.Fatalf("%s:\n%s", path, data)
	}
}
