package forward

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// dialLog records the addresses a client dialled.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (l *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	l.mu.Lock()
	l.addrs = append(l.addrs, addr)
	l.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (l *dialLog) dialled(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.addrs, addr)
}

// The forwarder of one of three brokers (kfake's broker 0) carries
// produce, fetch, ListOffsets, admin and coordinator requests to the other
// two, and franz-go refreshes its metadata from the brokers it knows in
// turn, yet it never dials its own broker over the network: franz-go's
// own choices of it (metadata, records of a partition it leads) go to
// DialSelf (here a TCP dial standing in for ferry's pipe), and a request
// addressed to it is refused, its callers serving those in process.
func TestForwarderNeverDialsItsOwnBroker(t *testing.T) {
	// kfake places leaders at random: broker 0 leads none of six
	// partitions in one cluster of eleven, so a cluster where it leads
	// one is made.
	var c *kfake.Cluster
	for attempt := 0; ; attempt++ {
		var err error
		if c, err = kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "t")); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(slices.Collect(maps.Values(leaders(t, c))), 0) || attempt == 20 {
			break
		}
		c.Close()
	}
	defer c.Close()
	view := clusterView(t, c.ListenAddrs())
	i := slices.IndexFunc(view, func(b server.ClusterBroker) bool { return b.ID == 0 })
	self := net.JoinHostPort(view[i].Host, fmt.Sprint(view[i].Port))
	var log, selfLog dialLog
	f, err := New(Config{BrokerID: 0, Self: []string{self}, Dial: log.dial, DialSelf: selfLog.dial, ClientID: "self-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.LiveBrokers(view)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lead := leaders(t, c)
	var recs []server.ProduceRecord
	ledHere := false
	for p, l := range lead {
		recs = append(recs, server.ProduceRecord{Partition: p, Record: records.Record{Value: []byte("v"), Timestamp: 1}})
		ledHere = ledHere || l == 0
	}
	if !ledHere {
		t.Fatalf("kfake's broker 0 leads none of t's partitions: %v", lead)
	}
	out := make([]server.ForwardOutcome, len(recs))
	f.Produce(ctx, "t", recs, 10*time.Second, out)
	for i, o := range out {
		if o.Err != nil {
			t.Fatalf("record %d to t-%d: %v", i, recs[i].Partition, o.Err)
		}
	}
	p := recs[slices.IndexFunc(recs, func(r server.ProduceRecord) bool { return lead[r.Partition] != 0 })].Partition
	if _, err := f.Fetch(ctx, lead[p], server.FetchRequest{Topic: "t", Partition: p, MaxBytes: 1 << 20}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.ListOffset(ctx, lead[p], "t", p, server.OffsetLatest); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LogDirSizes(ctx, lead[p], []controller.TopicPartition{{Topic: "t", Partition: p}}); err != nil {
		t.Fatal(err)
	}
	// Refreshes go to the brokers franz-go knows, its own among them, in
	// turn: six of them pass each broker at least twice.
	for range 6 {
		if _, err := f.cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("metadata refresh: %v", err)
		}
	}
	for _, other := range []int32{1, 2} {
		if _, err := f.Request(ctx, other, kmsg.NewPtrListGroupsRequest()); err != nil {
			t.Fatalf("request to broker %d: %v", other, err)
		}
	}
	// Addressed to itself: refused without a dial.
	if _, err := f.Request(ctx, 0, kmsg.NewPtrListGroupsRequest()); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("a request to this broker: %v, want ErrLeaderNotAvailable", err)
	}
	if _, err := f.Fetch(ctx, 0, server.FetchRequest{Topic: "t", Partition: p, MaxBytes: 1}, nil); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("a fetch from this broker: %v, want ErrLeaderNotAvailable", err)
	}
	if log.dialled(self) {
		t.Fatalf("the forwarder dialled its own broker at %s (dials: %v)", self, log.addrs)
	}
	if !selfLog.dialled(self) || slices.ContainsFunc(selfLog.addrs, func(a string) bool { return a != self }) {
		t.Fatalf("dials in process: %v, want only %s, at least once", selfLog.addrs, self)
	}
	for _, b := range view {
		if addr := net.JoinHostPort(b.Host, fmt.Sprint(b.Port)); b.ID != 0 && !log.dialled(addr) {
			t.Fatalf("broker %d at %s was never dialled (dials: %v)", b.ID, addr, log.addrs)
		}
	}
}

// The seeds follow the views' live peers; a broker that left the view
// is refused at once, and its seed is gone.
func TestSeedsFollowTheLivePeers(t *testing.T) {
	f, err := New(Config{BrokerID: 1, Self: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	peer := func(id int32, port int32) server.ClusterBroker {
		return server.ClusterBroker{ID: id, Host: "127.0.0.1", Port: port,
			Endpoints: []server.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}, {Listener: "BROKER", Host: "127.0.0.1", Port: port + 1}}}
	}
	f2, err := New(Config{BrokerID: 1, Self: []string{"127.0.0.1:1"}, Listener: "BROKER"})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	for _, c := range []struct {
		view      []server.ClusterBroker
		want      []string
		wantOther []string
	}{
		{[]server.ClusterBroker{peer(1, 10), peer(2, 20), peer(3, 30)}, []string{"127.0.0.1:20", "127.0.0.1:30"}, []string{"127.0.0.1:21", "127.0.0.1:31"}},
		{[]server.ClusterBroker{peer(1, 10), peer(3, 30)}, []string{"127.0.0.1:30"}, []string{"127.0.0.1:31"}},
		// Alone: the last peers stay seeds (the guard refuses them now).
		{[]server.ClusterBroker{peer(1, 10)}, []string{"127.0.0.1:30"}, []string{"127.0.0.1:31"}},
	} {
		f.LiveBrokers(c.view)
		f2.LiveBrokers(c.view)
		if got := f.peers.seeds; !slices.Equal(got, c.want) || len(f.cl.SeedBrokers()) != len(c.want) {
			t.Fatalf("view %v: seeds %v (%d in the client), want %v", c.view, got, len(f.cl.SeedBrokers()), c.want)
		}
		if got := f2.peers.seeds; !slices.Equal(got, c.wantOther) {
			t.Fatalf("view %v on listener BROKER: seeds %v, want %v", c.view, got, c.wantOther)
		}
	}
	ctx := context.Background()
	if _, err := f.Request(ctx, 2, kmsg.NewPtrListGroupsRequest()); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("a request to a broker no longer live: %v", err)
	}
	// This broker's addresses, configured or from a view, are refused as
	// a dial error (franz-go moves to the next broker).
	for _, addr := range []string{"127.0.0.1:1", "127.0.0.1:10", "127.0.0.1:11"} {
		_, err := f.guard.Dial(ctx, "tcp", addr)
		var oe *net.OpError
		if !errors.Is(err, errSelfDial) || !errors.As(err, &oe) || oe.Op != "dial" {
			t.Fatalf("dial to this broker's %s: %v", addr, err)
		}
	}
}
