package fetcher_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/fetcher"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/test/harness"
)

// fetchTap records the Fetch requests a Fetcher writes to its leader.
type fetchTap struct {
	mu      sync.Mutex
	fetches []*kmsg.FetchRequest
}

func (ft *fetchTap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &tappedConn{Conn: c, tap: ft}, nil
}

// since returns the Fetch requests after the first n.
func (ft *fetchTap) since(n int) []*kmsg.FetchRequest {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return append([]*kmsg.FetchRequest(nil), ft.fetches[min(n, len(ft.fetches)):]...)
}

func (ft *fetchTap) count() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.fetches)
}

type tappedConn struct {
	net.Conn
	tap *fetchTap
	buf []byte
}

// Write decodes each complete request frame; Fetch requests are recorded.
func (c *tappedConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.record(c.buf[4 : 4+size])
		c.buf = c.buf[4+size:]
	}
	return c.Conn.Write(p)
}

func (c *tappedConn) record(frame []byte) {
	r := kbin.Reader{Src: frame}
	key, version := r.Int16(), r.Int16()
	r.Int32()          // correlation id
	r.NullableString() // client id
	req := kmsg.RequestForKey(key)
	if req == nil || key != 1 {
		return
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		for n := r.Uvarint(); n > 0; n-- { // header tags
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if err := req.ReadFrom(r.Src); err != nil {
		panic(fmt.Sprintf("the fetcher wrote a Fetch it cannot read back: %v", err))
	}
	c.tap.mu.Lock()
	c.tap.fetches = append(c.tap.fetches, req.(*kmsg.FetchRequest))
	c.tap.mu.Unlock()
}

func listedPartitions(req *kmsg.FetchRequest) int {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

// A Fetcher copying many partitions fetches through a session: once
// caught up its fetches list nothing, a record on one partition makes the
// next fetch list that partition alone, and the follower keeps the
// leader's log and high watermark. When the leader drops the session
// (FETCH_SESSION_ID_NOT_FOUND), the Fetcher starts over with a full fetch
// and goes on copying.
func TestFetcherFetchesThroughASession(t *testing.T) {
	// One session slot, which a larger session may take once this one is
	// a millisecond old.
	l := startLeaderWith(t, "127.0.0.1:0", func(c *kafka.Config) {
		c.FetchSessionCacheSlots, c.FetchSessionEvictionAge = 1, time.Millisecond
	})
	const n = 20
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "many", Partitions: n}); err != nil {
		t.Fatal(err)
	}
	followers := make([]*replication.Replica, n)
	for p := range int32(n) {
		if err := l.broker.SetPartitionRole("many", p, twoReplicas); err != nil {
			t.Fatal(err)
		}
		r, err := replication.Open(replication.Config{Topic: "many", Index: p, BrokerID: 2,
			Dir: fmt.Sprintf("%s/many-%d", t.TempDir(), p), Log: storage.Config{RetentionTime: -1, RetentionBytes: -1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if err := r.SetRole(twoReplicas); err != nil {
			t.Fatal(err)
		}
		followers[p] = r
	}
	produceTo := func(p int32, v string) {
		t.Helper()
		var bld records.Builder
		bld.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
		data, err := bld.AppendBatch(nil, records.BatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.broker.AppendBatch(context.Background(), server.BatchProduce{Topic: "many", Partition: p, Batches: data, Acks: server.AcksLeader}); err != nil {
			t.Fatal(err)
		}
	}
	for p := range int32(n) {
		produceTo(p, "first")
	}
	tap := &fetchTap{}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, Dial: tap.dial,
		MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	defer f.Close()
	for _, r := range followers {
		f.Add(r)
	}
	caughtUp := func() bool {
		for p, r := range followers {
			lp, _ := l.broker.Partition("many", int32(p))
			if r.LogEndOffset() != lp.LogEndOffset() || r.HighWatermark() != lp.HighWatermark() {
				return false
			}
		}
		return true
	}
	harness.WaitFor(t, "the follower copies every partition", 10*time.Second, caughtUp)

	// Idle: incremental fetches that list nothing.
	mark := tap.count()
	harness.WaitFor(t, "idle fetches", 10*time.Second, func() bool { return len(tap.since(mark)) >= 3 })
	for _, req := range tap.since(mark)[1:] {
		if req.SessionID == 0 || req.SessionEpoch <= 0 || listedPartitions(req) != 0 {
			t.Fatalf("an idle fetch: session %d epoch %d, %d partitions listed", req.SessionID, req.SessionEpoch, listedPartitions(req))
		}
	}

	mark = tap.count()
	produceTo(7, "second")
	harness.WaitFor(t, "the follower copies partition 7's second record", 10*time.Second, caughtUp)
	sawSeven := false
	for _, req := range tap.since(mark) {
		switch l := listedPartitions(req); {
		case l == 1 && req.Topics[0].Partitions[0].Partition == 7:
			sawSeven = true
		case l != 0:
			t.Fatalf("a fetch listed %d partitions (%+v) after a record on partition 7", l, req.Topics)
		}
	}
	if !sawSeven {
		t.Fatal("no fetch listed partition 7 at its new offset")
	}

	// Another follower's session takes the leader's only slot. It lists
	// one partition more than the Fetcher's so that it outweighs it
	// whenever it comes; a smaller one could take the slot only while the
	// Fetcher's session sat unused for the eviction age, which a Fetcher
	// asking every 50 ms does only most of the time.
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "more", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	rogue := kmsg.NewPtrFetchRequest()
	rogue.SetVersion(12)
	rogue.ReplicaID, rogue.SessionEpoch = 3, 0
	for topic, partitions := range map[string]int32{"many": n, "more": 1} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		rogue.Topics = append(rogue.Topics, rt)
	}
	wc, err := wire.Dial(context.Background(), l.addr, "rogue", 5*time.Second, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	rogueResp := rogue.ResponseKind().(*kmsg.FetchResponse)
	if err := wc.RoundTrip(rogue, rogueResp, 5*time.Second); err != nil || rogueResp.SessionID == 0 {
		t.Fatalf("the other session: %v (session %d)", err, rogueResp.SessionID)
	}
	mark = tap.count()
	produceTo(3, "third")
	harness.WaitFor(t, "the follower copies partition 3's third record", 10*time.Second, caughtUp)
	harness.WaitFor(t, "a full fetch after the session was lost", 10*time.Second, func() bool {
		for _, req := range tap.since(mark) {
			if req.SessionEpoch == 0 && listedPartitions(req) == n {
				return true
			}
		}
		return false
	})
	for p, r := range followers {
		lp, _ := l.broker.Partition("many", int32(p))
		if !bytes.Equal(readAll(t, lp), readAll(t, r)) {
			t.Fatalf("partition %d differs from the leader's", p)
		}
	}
}
