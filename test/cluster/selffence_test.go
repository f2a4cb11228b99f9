package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// cuttableCluster is three brokers each reaching ZooKeeper through its own
// proxy and reached by the other brokers (replication, the controller's
// requests, forwarding) through another, on an INTERNAL listener; clients
// use PLAINTEXT directly. Pausing a broker's two proxies cuts it from
// ZooKeeper and from its peers, as a network partition would (bytes held,
// connections left open), while clients still reach it.
type cuttableCluster struct {
	nodes    []*harness.Node
	zk, peer []*zkserver.Proxy
}

func startCuttableCluster(t *testing.T, extra ...string) *cuttableCluster {
	t.Helper()
	zkAddr := zks.Require(t).Addr()
	chroot := "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c := &cuttableCluster{nodes: make([]*harness.Node, 3), zk: make([]*zkserver.Proxy, 3), peer: make([]*zkserver.Proxy, 3)}
	args := make([][]string, 3)
	for i := range c.nodes {
		internal := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		c.zk[i], c.peer[i] = zkserver.NewProxy(t, zkAddr), zkserver.NewProxy(t, internal)
		args[i] = []string{"--broker-id", strconv.Itoa(i + 1), "--zookeeper", c.zk[i].Addr() + chroot,
			"--zookeeper-session-timeout-ms", "6000",
			"--listeners", "PLAINTEXT://{kafka-addr},INTERNAL://" + internal,
			"--advertised-listeners", "PLAINTEXT://{kafka-addr},INTERNAL://" + c.peer[i].Addr(),
			"--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
			"--inter-broker-listener-name", "INTERNAL"}
		args[i] = append(args[i], extra...)
	}
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { c.nodes[i] = harness.Start(t, args[i]...) })
	}
	wg.Wait()
	for _, n := range c.nodes {
		if n == nil {
			t.FailNow()
		}
	}
	return c
}

func (c *cuttableCluster) cut(id int32)  { c.zk[id-1].Pause(); c.peer[id-1].Pause() }
func (c *cuttableCluster) heal(id int32) { c.zk[id-1].Resume(); c.peer[id-1].Resume() }

// askOnce sends req straight to the broker at addr on a connection of its
// own (no client's metadata, no queue behind other requests); nil when it
// does not answer within 3 s.
func askOnce(addr string, req kmsg.Request) kmsg.Response {
	// Kafka 2.8's versions: Fetch names topics (v13+ would need ids).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		return nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil
	}
	return resp
}

// askLatest sends req to the broker at addr at the newest version both
// sides know (askOnce stops at Kafka 2.8's, which lacks the newer APIs).
func askLatest(addr string, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// produceTo sends one acks=all record straight to the broker at addr and
// returns the partition's error code (-2: no answer).
func produceTo(t *testing.T, addr, topic string) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 500
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	var bld records.Builder
	bld.Add(records.Record{Value: []byte("probe"), Timestamp: time.Now().UnixMilli()})
	batch, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := askOnce(addr, req)
	if resp == nil {
		return -2
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// fetchFrom sends a consumer Fetch straight to the broker at addr.
func fetchFrom(addr, topic string) int16 {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := askOnce(addr, req)
	if resp == nil {
		return -2
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
}

// Issue 23: the leader of an RF3 partition is cut from ZooKeeper and from
// the other brokers while clients still reach it. Once its session
// timeout has passed since it last heard ZooKeeper (and no follower
// fetched), it answers produce and consumer fetches with
// NOT_LEADER_OR_FOLLOWER, its Metadata names no leader and its HTTP
// gateway answers 503 with Retry-After, so clients move to the leader the
// others elected; a producer writing through the whole cut loses nothing
// it was acknowledged. After the heal the old leader follows and rejoins
// the ISR.
func TestCutLeaderFencesItself(t *testing.T) {
	c := startCuttableCluster(t)
	const topic = "fenced"
	// franz-go waits 5 s (MetadataMinAge) between metadata refreshes by
	// default; when the refresh after NOT_LEADER_OR_FOLLOWER reaches the
	// fenced broker (LEADER_NOT_AVAILABLE), each such wait adds 5 s to the
	// stall (13–18 s seen). Java clients wait retry.backoff.ms (100 ms):
	// the producer here refreshes as the partition suite's do.
	cl, adm := replicatedProducer(t, c.nodes, topic, kgo.MetadataMinAge(250*time.Millisecond))
	produceNumbered(t, cl, 0, 10)
	old := leaderOf(t, adm, topic)
	controller := controllerOf(t, c.nodes)
	oldAddr := c.nodes[old-1].KafkaAddr
	if code := produceTo(t, oldAddr, topic); code != 0 {
		t.Fatalf("the leader refused a produce before the cut: %v", kerr.ErrorForCode(code))
	}
	sp := startSteadyProducer(cl)
	started := time.Now()
	harness.WaitFor(t, "the producer's first ack before the cut", 10*time.Second, func() bool { return sp.ackedSince(started) })
	cut := time.Now()
	c.cut(old)
	t.Logf("broker %d (leader) cut from ZooKeeper and its peers", old)

	var lastCode int16
	defer func() {
		if t.Failed() {
			t.Logf("the last answer to a produce to the cut leader: %v", kerr.ErrorForCode(lastCode))
		}
	}()
	fenced := harness.WaitFor(t, "the cut leader answers NOT_LEADER_OR_FOLLOWER", 30*time.Second, func() bool {
		lastCode = produceTo(t, oldAddr, topic)
		return lastCode == kerr.NotLeaderForPartition.Code
	})
	t.Logf("NOT_LEADER_OR_FOLLOWER to produce %v after the cut", fenced.Round(time.Millisecond))
	if fenced < 2*time.Second {
		t.Errorf("fenced %v after the cut: before its session could have expired", fenced)
	}
	if code := fetchFrom(oldAddr, topic); code != kerr.NotLeaderForPartition.Code {
		t.Errorf("a consumer fetch from the fenced leader answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	checkFencedMetadata(t, c.nodes[old-1], topic)
	checkFencedGateway(t, c.nodes[old-1], topic)
	if !strings.Contains(c.nodes[old-1].Logs(), "no longer acting as leader") {
		t.Error("the fenced leader did not log why it stopped leading")
	}

	var newLeader int32
	seen := map[string]bool{}
	harness.WaitFor(t, "another broker leads", 30*time.Second, func() bool {
		for id := int32(1); id <= 3; id++ {
			if line := metadataLine(c.nodes[id-1].KafkaAddr, topic); !seen[fmt.Sprint(id, line)] {
				seen[fmt.Sprint(id, line)] = true
				t.Logf("%v after the cut, broker %d's Metadata: %s", time.Since(cut).Round(time.Millisecond), id, line)
			}
		}
		newLeader = leaderOf(t, adm, topic)
		return newLeader > 0 && newLeader != old
	})
	t.Logf("broker %d leads %v after the cut (the controller was broker %d)", newLeader, time.Since(cut).Round(time.Millisecond), controller)
	moved := time.Now()
	harness.WaitFor(t, "an ack under the new leader", 30*time.Second, func() bool { return sp.ackedSince(moved) })
	healed := time.Now()
	c.heal(old)
	harness.WaitFor(t, "the healed broker rejoins the ISR", 30*time.Second, func() bool {
		for id := int32(1); id <= 3; id++ {
			if id != old && len(isrOf(c.nodes[id-1].KafkaAddr, topic)) == 3 {
				return true
			}
		}
		return false
	})
	acked, gap := sp.stop(t)
	t.Logf("cut at %s; longest stall between acknowledgements %v (goal: session timeout + 3 s = 9 s); rejoined the ISR %v after the heal",
		cut.Format("15:04:05.000"), gap.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
	if gap > 15*time.Second {
		t.Errorf("the producer stalled %v", gap)
	}
	checkAcked(t, c.nodes, topic, acked)
}

// findCoordinatorAt asks the broker at addr for key's coordinator (typ 0:
// a group, 1: a transactional id): the node it names and the error code
// (-2: no answer).
func findCoordinatorAt(addr string, typ int8, key string) (int32, int16) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = typ, key
	resp := askOnce(addr, req)
	if resp == nil {
		return -1, -2
	}
	fr := resp.(*kmsg.FindCoordinatorResponse)
	return fr.NodeID, fr.ErrorCode
}

// A transaction and a group coordinator cut from ZooKeeper and its peers
// (clients still reach it) stop naming themselves once they fence
// themselves: FindCoordinator answers COORDINATOR_NOT_AVAILABLE
// (retriable), as their Metadata names no leader, and the other brokers
// name the coordinators elected in their place. Before, the cut broker
// named itself from its stale view while its state writes were refused
// (NOT_COORDINATOR), so its clients went back and forth to it.
func TestCutCoordinatorNamesNoCoordinator(t *testing.T) {
	c := startCuttableCluster(t, "--transaction-state-log-num-partitions", "3", "--offsets-topic-num-partitions", "3")
	const txnID = "fenced-tx"
	var old int32
	harness.WaitFor(t, "every broker names the same transaction coordinator", 60*time.Second, func() bool {
		old = -1
		for _, n := range c.nodes {
			id, code := findCoordinatorAt(n.KafkaAddr, 1, txnID)
			if code != 0 || (old >= 0 && id != old) {
				return false
			}
			old = id
		}
		return old > 0
	})
	oldAddr := c.nodes[old-1].KafkaAddr
	// A group its coordinator also coordinates (3 partitions: one in three).
	group := ""
	harness.WaitFor(t, "a group coordinated by broker "+strconv.Itoa(int(old)), 60*time.Second, func() bool {
		for i := range 30 {
			g := "fenced-group-" + strconv.Itoa(i)
			if id, code := findCoordinatorAt(oldAddr, 0, g); code == 0 && id == old {
				group = g
				return true
			}
		}
		return false
	})

	// A member joined there before the cut, as a consumer of the group
	// would have.
	member := joinAlone(t, oldAddr, group)
	if code := heartbeatAt(oldAddr, group, member); code != 0 {
		t.Fatalf("heartbeat before the cut: %v", kerr.ErrorForCode(code))
	}

	cut := time.Now()
	c.cut(old)
	defer c.heal(old)
	t.Logf("broker %d (coordinator of %s and group %s) cut from ZooKeeper and its peers", old, txnID, group)
	var named int32 // what the cut broker answered until then
	harness.WaitFor(t, "the cut coordinator names no transaction coordinator", 30*time.Second, func() bool {
		id, code := findCoordinatorAt(oldAddr, 1, txnID)
		if code == 0 {
			named = id
		}
		return code == kerr.CoordinatorNotAvailable.Code
	})
	if took := time.Since(cut); took < 2*time.Second {
		t.Errorf("COORDINATOR_NOT_AVAILABLE %v after the cut: before its session could have expired", took)
	}
	if id, code := findCoordinatorAt(oldAddr, 0, group); code != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("the cut broker's group coordinator: node %d, %v; want COORDINATOR_NOT_AVAILABLE", id, kerr.ErrorForCode(code))
	}
	// The member's heartbeat there is refused too, so it looks for the
	// coordinator elected in its place rather than stay in a group
	// another broker rebalances without it.
	if code := heartbeatAt(oldAddr, group, member); code != kerr.NotCoordinator.Code {
		t.Errorf("the member's heartbeat at the cut coordinator: %v; want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	// And the transaction coordinator's: its memory is as stale.
	describe := kmsg.NewPtrDescribeTransactionsRequest()
	describe.TransactionalIDs = []string{txnID}
	if resp, err := askLatest(oldAddr, describe); err != nil {
		t.Errorf("DescribeTransactions at the cut coordinator: %v", err)
	} else if ts := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates; len(ts) != 1 || ts[0].ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("DescribeTransactions at the cut coordinator: %+v; want NOT_COORDINATOR", ts)
	}
	t.Logf("COORDINATOR_NOT_AVAILABLE %v after the cut (named broker %d until then)", time.Since(cut).Round(time.Millisecond), named)
	for id := int32(1); id <= 3; id++ {
		if id == old {
			continue
		}
		addr := c.nodes[id-1].KafkaAddr
		harness.WaitFor(t, fmt.Sprintf("broker %d names another coordinator", id), 30*time.Second, func() bool {
			tc, tcode := findCoordinatorAt(addr, 1, txnID)
			gc, gcode := findCoordinatorAt(addr, 0, group)
			return tcode == 0 && tc != old && tc > 0 && gcode == 0 && gc != old && gc > 0
		})
	}
}

// groupMember is a classic-protocol member of a group: its id and
// generation.
type groupMember struct {
	id         string
	generation int32
}

// joinAlone joins group at the coordinator at addr as its only member
// (JoinGroup twice, as KIP-394 asks, then SyncGroup as the leader).
func joinAlone(t *testing.T, addr, group string) groupMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var m groupMember
	for range 2 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 10000
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name, proto.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, proto)
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("join %s: %v", group, err)
		}
		jr := resp.(*kmsg.JoinGroupResponse)
		m = groupMember{id: jr.MemberID, generation: jr.Generation}
		switch jr.ErrorCode {
		case kerr.MemberIDRequired.Code:
			continue
		case 0:
		default:
			t.Fatalf("join %s: %v", group, kerr.ErrorForCode(jr.ErrorCode))
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = group, m.id, m.generation
		resp, err = cl.SeedBrokers()[0].Request(ctx, sync)
		if err != nil {
			t.Fatalf("sync %s: %v", group, err)
		}
		if code := resp.(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
			t.Fatalf("sync %s: %v", group, kerr.ErrorForCode(code))
		}
		return m
	}
	t.Fatalf("join %s: a member id was asked for twice", group)
	return m
}

// heartbeatAt sends m's heartbeat to the broker at addr and returns the
// error code (-2: no answer).
func heartbeatAt(addr, group string, m groupMember) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, m.id, m.generation
	resp := askOnce(addr, req)
	if resp == nil {
		return -2
	}
	return resp.(*kmsg.HeartbeatResponse).ErrorCode
}

// metadataLine describes topic's partition 0 in the Metadata of the
// broker at addr.
func metadataLine(addr, topic string) string {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := askOnce(addr, req)
	if resp == nil {
		return "no answer"
	}
	mr := resp.(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || len(mr.Topics[0].Partitions) != 1 {
		return fmt.Sprintf("%d topics", len(mr.Topics))
	}
	p := mr.Topics[0].Partitions[0]
	return fmt.Sprintf("leader %d epoch %d isr %v err %v", p.Leader, p.LeaderEpoch, p.ISR, kerr.ErrorForCode(p.ErrorCode))
}

// checkFencedMetadata: the fenced broker's Metadata names no leader for
// the partition (LEADER_NOT_AVAILABLE), so clients ask another broker.
func checkFencedMetadata(t *testing.T, n *harness.Node, topic string) {
	t.Helper()
	one, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := one.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("metadata from the fenced broker: %v", err)
	}
	p := resp.(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	if p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Errorf("the fenced broker's Metadata: leader %d, %v; want -1, LEADER_NOT_AVAILABLE", p.Leader, kerr.ErrorForCode(p.ErrorCode))
	}
}

// checkFencedGateway: an HTTP produce to the fenced broker writes nothing
// and answers 503 with Retry-After.
func checkFencedGateway(t *testing.T, n *harness.Node, topic string) {
	t.Helper()
	res, err := http.Post(n.URL+"/kafka/"+topic, "application/json", strings.NewReader(`{"records":[{"partition":0,"value":"gw"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("HTTP produce to the fenced broker: %s, Retry-After %q: %s", res.Status, res.Header.Get("Retry-After"), body)
	}
	t.Logf("HTTP produce to the fenced broker: %s %s", res.Status, strings.TrimSpace(string(body)))
}

// ZooKeeper down for the whole cluster for longer than the session
// timeout: every leader has lost its session, but its followers go on
// fetching, so none fences itself and acks=all writes go on (the rule's
// second condition).
func TestZooKeeperDownEverywhereFencesNothing(t *testing.T) {
	zk := zkserver.Start(t)
	nodes := startClusterOn(t, zk.Addr(), 3)
	cl, _ := replicatedProducer(t, nodes, "zkdown")
	produceNumbered(t, cl, 0, 10)
	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	sp := startSteadyProducer(cl)
	harness.WaitFor(t, "every broker noticed ZooKeeper is gone", 20*time.Second, func() bool {
		for _, n := range nodes {
			if !strings.Contains(n.Logs(), "state=disconnected") {
				return false
			}
		}
		return true
	})
	time.Sleep(12 * time.Second) // not a condition: longer than the session timeout plus its grace (8 s)
	acked, gap := sp.stop(t)
	for i, n := range nodes {
		if strings.Contains(n.Logs(), "no longer acting as leader") {
			t.Errorf("broker %d fenced a partition while its followers fetched", i+1)
		}
	}
	t.Logf("%d records acknowledged with ZooKeeper down; longest stall %v", len(acked), gap.Round(time.Millisecond))
	if gap > 3*time.Second {
		t.Errorf("acks=all stalled %v with ZooKeeper down", gap)
	}
	if err := zk.Restart(); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, nodes, "zkdown", acked)
}
