package kafka

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/test/zkserver"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

// uniqueChroot is a fresh chroot of the shared ZooKeeper for one test run
// (-count reruns a test against the same server).
func uniqueChroot(t *testing.T) string {
	return "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// zkBroker is a cluster's broker: registered in ZooKeeper under chroot,
// its topics there, its partitions awaiting their roles.
func zkBroker(t *testing.T, id int32, chroot string) *testServer {
	t.Helper()
	srv := zks.Require(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	zkc, err := zookeeper.Open(srv.Addr()+chroot, 6*time.Second, logger)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range zkc.Events() {
		}
	}()
	clusterID, err := zkc.GetOrCreateClusterID(replication.NewTopicID())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	if err := zkc.Register(zookeeper.BrokerInfo{ID: id, JMXPort: -1, Timestamp: time.Now().UnixMilli(),
		Endpoints: []zookeeper.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: p, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	meta := zookeeper.NewMetadata(zkc, clusterID)
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: id, AwaitRoles: true,
		Metadata: meta, ISRStore: meta, ProducerIDs: zkc, ReplicaLagTimeMax: 400 * time.Millisecond}, logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := group.New(b, group.Config{Logger: logger, OffsetsTopicPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(b, g, Config{Addr: ln.Addr().String(), AdvertisedAddr: ln.Addr().String(), Logger: logger, InterBroker: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	ts := &testServer{Server: s, broker: b, groups: g, addr: ln.Addr().String(), logs: &logSink{t: t, done: true}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		g.Close()
		b.Close()
		zkc.Close()
	})
	return ts
}

// Topics of a cluster live in ZooKeeper: a topic created on broker 1 is
// assigned over the registered brokers and written as Kafka writes it;
// broker 2, which never heard of it, opens its replica when the
// controller's LeaderAndIsr names it, and the two replicate.
func TestClusterTopicCreatedOnOneBrokerReplicatesToAnother(t *testing.T) {
	chroot := uniqueChroot(t)
	b1 := zkBroker(t, 1, chroot)
	b2 := zkBroker(t, 2, chroot)
	if err := b1.broker.CreateTopic(server.TopicSpec{Name: "zk", Partitions: 1, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := b1.broker.Partition("zk", 0)
	if err != nil {
		t.Fatalf("broker 1 holds no replica of a topic assigned to both brokers: %v", err)
	}
	if err := b1.broker.CreateTopic(server.TopicSpec{Name: "zk3", Partitions: 1, ReplicationFactor: 3}); err == nil {
		t.Fatal("replication factor 3 with 2 live brokers was accepted")
	}
	// The controller's part, by hand: both replicas in the ISR, broker 1 leads.
	req := leaderAndIsr(1, "zk", 1, 0, []int32{1, 2}, b1)
	req.TopicStates[0].PartitionStates[0].Replicas = []int32{1, 2}
	for _, b := range []*testServer{b1, b2} {
		resp := sendLeaderAndIsr(t, b, req)
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d: %+v", b.broker.BrokerID(), resp)
		}
	}
	if p := produceOneAcks(b1.dial(t), "zk", -1, "v"); p.ErrorCode != 0 {
		t.Fatalf("acks=all: error %d", p.ErrorCode)
	}
	f2, err := b2.broker.Partition("zk", 0)
	if err != nil || f2.LogEndOffset() != 1 || !slices.Equal(f2.Replicas(), []int32{1, 2}) {
		t.Fatalf("broker 2's replica: %v", err)
	}
}

// A leader whose follower stops fetching shrinks the ISR after
// replica.lag.time.max.ms and writes it to the partition's state znode
// (conditionally on its version) with an ISR change notification; the
// partition's role carries the new ISR and version.
func TestClusterLeaderShrinksTheISRInZooKeeper(t *testing.T) { shrinkISR(t, false) }

// Another writer (the controller) changes the partition's state znode
// after the leader read it: the leader's conditional ISR write conflicts,
// the leader re-reads the state, adopts its version, and its next
// proposal is written on top of it.
func TestClusterLeaderISRWriteConflictRereads(t *testing.T) { shrinkISR(t, true) }

// shrinkISR makes broker 2's follower stop fetching from broker 1 and
// checks the ISR shrinks to [1] in ZooKeeper and on the leader; with
// conflict, the state znode moves on under the leader first.
func shrinkISR(t *testing.T, conflict bool) {
	chroot := uniqueChroot(t)
	b1 := zkBroker(t, 1, chroot)
	b2 := zkBroker(t, 2, chroot)
	if err := b1.broker.CreateTopic(server.TopicSpec{Name: "s", Partitions: 1, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	ctl, err := zookeeper.Open(zks.Require(t).Addr()+chroot, 6*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	go func() {
		for range ctl.Events() {
		}
	}()
	e, err := ctl.TryElect(9, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.CreatePartitionStates("s", map[int32]zookeeper.PartitionState{0: {Leader: 1, ISR: []int32{1, 2}, ControllerEpoch: e.Epoch}}, e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	req := leaderAndIsr(e.Epoch, "s", 1, 0, []int32{1, 2}, b1)
	req.TopicStates[0].PartitionStates[0].ZKVersion = 0
	for _, b := range []*testServer{b1, b2} {
		if resp := sendLeaderAndIsr(t, b, req); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d: %+v", b.broker.BrokerID(), resp)
		}
	}
	if conflict {
		bumped := zookeeper.PartitionState{Leader: 1, ISR: []int32{1, 2}, ControllerEpoch: e.Epoch, Version: 0}
		if v, err := ctl.UpdatePartitionState("s", 0, bumped, e.EpochVersion); err != nil || v != 1 {
			t.Fatalf("bump the state znode: version %d, %v", v, err)
		}
	}
	stop := kmsg.NewPtrStopReplicaRequest()
	stop.ControllerEpoch = e.Epoch
	stop.Topics = []kmsg.StopReplicaRequestTopic{{Topic: "s", Partitions: []int32{0}}}
	if resp := do[*kmsg.StopReplicaResponse](b2.dial(t), stop, 2); resp.ErrorCode != 0 {
		t.Fatalf("StopReplica: %+v", resp)
	}
	if p := produceOneAcks(b1.dial(t), "s", 1, "v"); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	// The leader adopts the ISR once its write returns: both must agree.
	harness.WaitFor(t, "the ISR to shrink to [1] in ZooKeeper and on the leader", 10*time.Second, func() bool {
		st, err := ctl.PartitionState("s", 0)
		p, _ := b1.broker.Partition("s", 0)
		return err == nil && slices.Equal(st.ISR, []int32{1}) && slices.Equal(p.ISR(), []int32{1})
	})
	if st, _ := ctl.PartitionState("s", 0); conflict && st.Version != 2 {
		t.Fatalf("state znode at version %d, want 2: the leader's write on top of the other writer's", st.Version)
	}
	changes, err := ctl.ISRChanges()
	if err != nil || len(changes) == 0 {
		t.Fatalf("no ISR change notification: %v %v", changes, err)
	}
}

// Producer ids are unique across a cluster's brokers: each reserves its
// blocks in /latest_producer_id_block, so two brokers never give two
// producers the same id (whose batches would look like each other's
// retries and be dropped as duplicates).
func TestClusterProducerIDsAreUniqueAcrossBrokers(t *testing.T) {
	chroot := uniqueChroot(t)
	b1, b2 := zkBroker(t, 1, chroot), zkBroker(t, 2, chroot)
	seen := map[int64]int32{}
	for i := 0; i < 1500; i++ { // past one block on each
		for _, b := range []*testServer{b1, b2} {
			id, epoch, err := b.broker.InitProducerID(-1, -1)
			if err != nil || epoch != 0 {
				t.Fatalf("broker %d: InitProducerID: %d %d %v", b.broker.BrokerID(), id, epoch, err)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("producer id %d handed out by broker %d and broker %d", id, other, b.broker.BrokerID())
			}
			seen[id] = b.broker.BrokerID()
		}
	}
}
