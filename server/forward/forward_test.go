package forward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

func fakeCluster(t *testing.T) (*kfake.Cluster, *Forwarder) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// As a broker outside kfake's: every kfake broker is a peer.
	f, err := New(Config{BrokerID: 1000, Self: []string{closedAddr(t)}, ClientID: "test", MaxBatchBytes: func(string) int32 { return 1 << 20 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	f.LiveBrokers(clusterView(t, c.ListenAddrs()))
	return c, f
}

// clusterView is the live brokers as the cluster describes them, asked
// of the brokers at seeds.
func clusterView(t *testing.T, seeds []string) []server.ClusterBroker {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	bs, err := kadm.NewClient(cl).ListBrokers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var view []server.ClusterBroker
	for _, b := range bs {
		view = append(view, server.ClusterBroker{ID: b.NodeID, Host: b.Host, Port: b.Port})
	}
	return view
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func leaders(t *testing.T, c *kfake.Cluster) map[int32]int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int32{}
	for _, p := range md.Topics["t"].Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

// Records for two partitions, interleaved: each gets its offset, dense per
// partition in request order; fetched back from the leader they are the
// records sent, and ListOffsets agrees.
func TestProduceFetchListOffsets(t *testing.T) {
	c, f := fakeCluster(t)
	ctx := context.Background()
	var recs []server.ProduceRecord
	for i := range 6 {
		recs = append(recs, server.ProduceRecord{Partition: int32(i % 2), Record: records.Record{
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)), Timestamp: 1700000000000 + int64(i),
			Headers: []records.Header{{Key: "h", Value: []byte("x")}}}})
	}
	out := make([]server.ForwardOutcome, len(recs))
	f.Produce(ctx, "t", recs, 10*time.Second, out)
	for i, o := range out {
		if o.Err != nil || o.Offset != int64(i/2) {
			t.Fatalf("record %d: %+v, want offset %d", i, o, i/2)
		}
	}
	lead := leaders(t, c)
	res, err := f.Fetch(ctx, lead[1], server.FetchRequest{Topic: "t", Partition: 1, Offset: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = records.Decode(res.Data, 1, 1<<20, func(r records.Record) bool {
		if r.Offset >= 1 {
			got = append(got, fmt.Sprintf("%d:%s=%s@%d %s", r.Offset, r.Key, r.Value, r.Timestamp, r.Headers[0].Value))
		}
		return true
	})
	if want := "[1:k3=v3@1700000000003 x 2:k5=v5@1700000000005 x]"; err != nil || fmt.Sprint(got) != want || res.HighWatermark != 3 {
		t.Fatalf("fetched %v (hw %d, err %v), want %s", got, res.HighWatermark, err, want)
	}
	if off, _, err := f.ListOffset(ctx, lead[0], "t", 0, server.OffsetLatest); err != nil || off != 3 {
		t.Fatalf("latest of t-0: %d %v, want 3", off, err)
	}
	if off, _, err := f.ListOffset(ctx, lead[0], "t", 0, server.OffsetEarliest); err != nil || off != 0 {
		t.Fatalf("earliest of t-0: %d %v, want 0", off, err)
	}
	// Beyond the log: OFFSET_OUT_OF_RANGE is the core's.
	if _, err := f.Fetch(ctx, lead[0], server.FetchRequest{Topic: "t", Partition: 0, Offset: 99, MaxBytes: 1 << 20}, nil); !errors.Is(err, server.ErrOffsetOutOfRange) {
		t.Fatalf("fetch beyond the log: %v, want ErrOffsetOutOfRange", err)
	}
	// From a broker that does not lead it: a leadership error, which the
	// caller retries elsewhere.
	other := map[int32]int32{0: 1, 1: 0}[lead[0]]
	if _, err := f.Fetch(ctx, other, server.FetchRequest{Topic: "t", Partition: 0, Offset: 0, MaxBytes: 1 << 20}, nil); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("fetch from a follower: %v, want ErrLeaderNotAvailable", err)
	}
	if _, err := f.Fetch(ctx, 77, server.FetchRequest{Topic: "t", Partition: 0, MaxBytes: 1}, nil); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("fetch from an unknown broker: %v, want ErrLeaderNotAvailable", err)
	}
}

// With no broker to reach, Produce returns by its timeout and reports
// every record not acknowledged.
func TestProduceReturnsByItsTimeout(t *testing.T) {
	addr := closedAddr(t)
	port, _ := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	f, err := New(Config{BrokerID: 1, Self: []string{closedAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.LiveBrokers([]server.ClusterBroker{{ID: 1}, {ID: 2, Host: "127.0.0.1", Port: int32(port)}})
	out := make([]server.ForwardOutcome, 3)
	start := time.Now()
	f.Produce(context.Background(), "t", make([]server.ProduceRecord, 3), 300*time.Millisecond, out)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Produce took %v with a 300ms timeout", took)
	}
	for i, o := range out {
		if !errors.Is(o.Err, server.ErrRequestTimedOut) || o.Offset != -1 {
			t.Fatalf("record %d: %+v, want ErrRequestTimedOut", i, o)
		}
	}
}
