package cluster

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/test/harness"
)

// fakeBroker answers the controller's requests with empty responses,
// after closing its first refuse connections unanswered. It advertises
// LeaderAndIsr, StopReplica and UpdateMetadata unless told otherwise.
type fakeBroker struct {
	ln     net.Listener
	serves map[int16]int16
	silent bool // read requests, never answer (a frozen broker)
	mu     struct {
		sync.Mutex
		refuse int
		keys   []int16
	}
}

func newFakeBroker(t *testing.T, refuse int, serves map[int16]int16) *fakeBroker {
	return newFakeBrokerAt(t, "127.0.0.1:0", refuse, serves)
}

// newFakeBrokerAt is newFakeBroker listening on addr.
func newFakeBrokerAt(t *testing.T, addr string, refuse int, serves map[int16]int16) *fakeBroker {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if serves == nil {
		serves = map[int16]int16{4: 5, 5: 3, 6: 7}
	}
	f := &fakeBroker{ln: ln, serves: serves}
	f.mu.refuse = refuse
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			refused := f.mu.refuse > 0
			f.mu.refuse--
			f.mu.Unlock()
			if refused {
				nc.Close()
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); f.serve(nc) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return f
}

func (f *fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, frame); err != nil || len(frame) < 8 {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		if f.silent && key != kmsg.ApiVersions.Int16() {
			f.mu.Lock()
			f.mu.keys = append(f.mu.keys, key)
			f.mu.Unlock()
			continue
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		resp := req.ResponseKind()
		resp.SetVersion(version)
		if av, ok := resp.(*kmsg.ApiVersionsResponse); ok {
			for k, max := range f.serves {
				av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: max})
			}
		} else {
			f.mu.Lock()
			f.mu.keys = append(f.mu.keys, key)
			f.mu.Unlock()
		}
		out := binary.BigEndian.AppendUint32(nil, 0)
		out = append(out, frame[4:8]...) // correlation id
		if resp.IsFlexible() {
			out = append(out, 0) // no header tags
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

func (f *fakeBroker) keys() []int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.mu.keys)
}

func (f *fakeBroker) broker(id int32) controller.Broker {
	host, port, _ := net.SplitHostPort(f.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	return controller.Broker{ID: id, Epoch: 1, Endpoints: []zookeeper.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: p, SecurityProtocol: "PLAINTEXT"}}}
}

func testSenderConfig() *Config {
	cfg := &Config{BrokerID: 9, RetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond, RequestTimeout: 2 * time.Second, MaxQueuedRequests: 8}
	cfg.defaults()
	return cfg
}

func lai(epoch int32, tp string, leaderEpoch int32) *leaderAndIsr {
	return &leaderAndIsr{controller.SendLeaderAndIsr{ControllerEpoch: epoch, Broker: 1, Partitions: []controller.PartitionInfo{
		{Partition: controller.TopicPartition{Topic: tp}, State: controller.LeaderAndIsr{Leader: 1, LeaderEpoch: leaderEpoch, ISR: []int32{1}}}}}}
}

// Requests reach a broker in the order queued, each sent again until it
// is delivered: the broker drops the first two connections.
func TestSenderRetriesInOrder(t *testing.T) {
	f := newFakeBroker(t, 2, nil)
	var m sendMetrics
	s := newSenders(testSenderConfig(), testLogger(t), &m, nil, nil)
	defer s.stopAll()
	s.setBrokers([]controller.Broker{f.broker(1)})
	s.enqueue(1, lai(1, "a", 0))
	s.enqueue(1, &stopReplica{SendStopReplica: controller.SendStopReplica{ControllerEpoch: 1, Broker: 1, Partitions: []controller.TopicPartition{{Topic: "b"}}}})
	s.enqueue(1, &updateMetadata{controller.SendUpdateMetadata{ControllerEpoch: 1, LiveBrokers: []controller.Broker{f.broker(1)}}})
	s.enqueue(7, lai(1, "c", 0)) // not live: dropped
	harness.WaitFor(t, "three deliveries", 10*time.Second, func() bool { return len(f.keys()) == 3 })
	if got := f.keys(); !slices.Equal(got, []int16{4, 5, 6}) {
		t.Fatalf("keys %v, want LeaderAndIsr, StopReplica, UpdateMetadata", got)
	}
	if m.count("LeaderAndIsr", 1) != 1 || m.count("StopReplica", 1) != 1 || m.count("UpdateMetadata", 1) != 1 {
		t.Fatalf("deliveries %v", m.delivers)
	}
}

// A request kind the broker does not serve (UpdateMetadata before a
// broker had it) is dropped, not retried forever: what follows it is
// delivered.
func TestSenderSkipsWhatTheBrokerDoesNotServe(t *testing.T) {
	f := newFakeBroker(t, 0, map[int16]int16{4: 5, 5: 3})
	var m sendMetrics
	s := newSenders(testSenderConfig(), testLogger(t), &m, nil, nil)
	defer s.stopAll()
	s.setBrokers([]controller.Broker{f.broker(1)})
	s.enqueue(1, &updateMetadata{controller.SendUpdateMetadata{ControllerEpoch: 1}})
	s.enqueue(1, lai(1, "a", 0))
	harness.WaitFor(t, "the LeaderAndIsr", 10*time.Second, func() bool { return m.count("LeaderAndIsr", 1) == 1 })
	if got := f.keys(); !slices.Equal(got, []int16{4}) {
		t.Fatalf("the broker got keys %v, want only LeaderAndIsr", got)
	}
}

// A broker that takes a request and never answers (frozen) does not hold
// up the controller when it leaves: stopping its sender cuts the
// connection instead of waiting out the request timeout.
func TestStoppingASenderCutsAStuckRequest(t *testing.T) {
	f := newFakeBroker(t, 0, nil)
	f.silent = true
	cfg := testSenderConfig()
	cfg.RequestTimeout = time.Minute
	s := newSenders(cfg, testLogger(t), &sendMetrics{}, nil, nil)
	s.setBrokers([]controller.Broker{f.broker(1)})
	s.enqueue(1, lai(1, "a", 0))
	harness.WaitFor(t, "the request to reach the broker", 10*time.Second, func() bool { return len(f.keys()) == 1 })
	start := time.Now()
	s.setBrokers(nil)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("stopping the sender of a frozen broker took %v", took)
	}
}

// A broker that never answers holds a bounded queue: same-kind requests
// merge, alternating kinds are capped; leaving /brokers/ids stops its
// sender at once, even mid-backoff.
func TestSenderQueueIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := (&fakeBroker{ln: ln}).broker(1)
	ln.Close() // nothing listens: every dial is refused
	cfg := testSenderConfig()
	s := newSenders(cfg, testLogger(t), &sendMetrics{}, nil, nil)
	s.setBrokers([]controller.Broker{dead})
	for i := range 10000 {
		s.enqueue(1, lai(1, "t"+strconv.Itoa(i%100), int32(i)))
	}
	if n := s.queuedCount(); n > 1 {
		t.Fatalf("%d LeaderAndIsr queued, want them merged into one", n)
	}
	for i := range 10000 {
		s.enqueue(1, lai(1, "t", int32(i)))
		s.enqueue(1, &stopReplica{SendStopReplica: controller.SendStopReplica{ControllerEpoch: 1, Broker: 1, Partitions: []controller.TopicPartition{{Topic: "s", Partition: int32(i % 10)}}}})
	}
	if n := s.queuedCount(); n > cfg.MaxQueuedRequests {
		t.Fatalf("%d requests queued, limit %d", n, cfg.MaxQueuedRequests)
	}
	bs := s.byID[1]
	start := time.Now()
	s.setBrokers(nil)
	select {
	case <-bs.done:
	default:
		t.Fatal("the sender of a broker that left still runs")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("stopping took %v", took)
	}
}

// Merging keeps what the broker would have ended with: each partition's
// latest state, every leader, and nothing of another controller epoch.
func TestMergeKeepsLatestState(t *testing.T) {
	a := lai(1, "x", 0)
	a.Partitions[0].IsNew = true
	a.Leaders = []controller.Broker{{ID: 1}}
	b := lai(1, "x", 3)
	b.Partitions = append(b.Partitions, lai(1, "y", 1).Partitions...)
	b.Leaders = []controller.Broker{{ID: 2}}
	if !a.merge(b) {
		t.Fatal("two LeaderAndIsr of one epoch did not merge")
	}
	if len(a.Partitions) != 2 || a.Partitions[0].State.LeaderEpoch != 3 || !a.Partitions[0].IsNew || len(a.Leaders) != 2 {
		t.Fatalf("merged %+v", a.SendLeaderAndIsr)
	}
	if a.merge(lai(2, "x", 4)) {
		t.Fatal("merged requests of two controller epochs")
	}
	if a.merge(&stopReplica{}) {
		t.Fatal("merged a StopReplica into a LeaderAndIsr")
	}
	req := a.request(9, "").(*kmsg.LeaderAndISRRequest)
	if req.ControllerID != 9 || req.BrokerEpoch != -1 || len(req.TopicStates) != 2 || len(req.LiveLeaders) != 2 {
		t.Fatalf("encoded %+v", req)
	}
}

// A topic znode that gains partitions becomes PartitionsAdded with only
// the new ones; seeing the same content again is no event.
func TestTopicChangeAddsPartitions(t *testing.T) {
	tm := &term{topics: map[string]*topicWatch{"t": {created: true, parts: map[int32]bool{0: true}}}}
	snap := zookeeper.TopicSnapshot{Present: true, Assignment: zookeeper.TopicAssignment{Name: "t",
		Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 1}}}}
	ev, ok := tm.topicChanged(topicChange{name: "t", snap: snap}).(controller.PartitionsAdded)
	if !ok || ev.Topic != "t" || len(ev.Partitions) != 1 || !slices.Equal(ev.Partitions[1].Replicas, []int32{2, 1}) {
		t.Fatalf("event %+v, want partition 1 added", ev)
	}
	if again := tm.topicChanged(topicChange{name: "t", snap: snap}); again != nil {
		t.Fatalf("the same content again gave %+v", again)
	}
	if gone := tm.topicChanged(topicChange{name: "t", snap: zookeeper.TopicSnapshot{}}); gone != nil {
		t.Fatalf("a deleted topic gave %+v", gone)
	}
}
