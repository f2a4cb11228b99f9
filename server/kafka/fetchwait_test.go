package kafka

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"

	"github.com/ferry-mq/ferry/test/harness"
)

func createTopic(t *testing.T, ts *testServer, name string, partitions int32) {
	t.Helper()
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
}

func logReads(t *testing.T, ts *testServer, topic string, partition int32) int64 {
	t.Helper()
	n, err := ts.broker.LogReads(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWaitingFetchReadsNothingUntilData: a Fetch with MinBytes=1 and
// MaxWait=5s on an empty partition reads the log 0 times while it waits and
// once when a produce arrives.
func TestWaitingFetchReadsNothingUntilData(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "idle", 1)
	c, other := ts.dial(t), ts.dial(t)
	corr := c.send(withVersion(fetchReq("idle", 0, 0, 5000, 1), 12))
	harness.WaitFor(t, "the fetch to wait", 10*time.Second, func() bool { return ts.broker.WaitingFetches("idle", 0) == 1 })
	if n := logReads(t, ts, "idle", 0); n != 0 {
		t.Fatalf("%d log reads while waiting on an empty partition, want 0", n)
	}
	produceOne(other, 9, "idle", batch(t, records.BatchOptions{}, "hello"))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.recv(corr, resp)
	if got := fetchValues(t, resp.Topics[0].Partitions[0], 0); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("got %q", got)
	}
	if n := logReads(t, ts, "idle", 0); n != 1 {
		t.Fatalf("%d log reads for one completed fetch, want 1", n)
	}
}

// TestWaitingFetchCountsBytesWithoutReading: with MinBytes above one
// batch, the appends below MinBytes are counted, not read; the fetch reads
// once, when the count passes MinBytes, and returns all of them. MaxWait is
// beyond the client's 10 s read deadline, so an answer on the deadline
// fails too.
func TestWaitingFetchCountsBytesWithoutReading(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "count", 1)
	c, other := ts.dial(t), ts.dial(t)
	one := batch(t, records.BatchOptions{}, "0123456789")
	corr := c.send(withVersion(fetchReq("count", 0, 0, 60_000, int32(3*len(one))), 12))
	harness.WaitFor(t, "the fetch to wait", 10*time.Second, func() bool { return ts.broker.WaitingFetches("count", 0) == 1 })
	for i := range 2 {
		produceOne(other, 9, "count", batch(t, records.BatchOptions{}, "0123456789"))
		if n := logReads(t, ts, "count", 0); n != 0 || ts.broker.WaitingFetches("count", 0) != 1 {
			t.Fatalf("after %d batches below MinBytes: %d log reads, %d waiting; want 0 reads, 1 waiting",
				i+1, n, ts.broker.WaitingFetches("count", 0))
		}
	}
	produceOne(other, 9, "count", batch(t, records.BatchOptions{}, "0123456789"))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.recv(corr, resp)
	if got := fetchValues(t, resp.Topics[0].Partitions[0], 0); len(got) != 3 {
		t.Fatalf("got %d records, want the 3 produced", len(got))
	}
	if n := logReads(t, ts, "count", 0); n != 1 {
		t.Fatalf("%d log reads, want 1", n)
	}
}

// TestWaitingFetchOverPartitionsReadsOnce: a fetch over two partitions,
// one holding less than MinBytes, reads that one once before waiting and
// once after; appends to the other do not make it re-read the first.
func TestWaitingFetchOverPartitionsReadsOnce(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "two", 2)
	c, other := ts.dial(t), ts.dial(t)
	small := batch(t, records.BatchOptions{}, "x")
	do[*kmsg.ProduceResponse](other, produceReq("two", 0, -1, small), 9)
	req := fetchReq("two", 0, 0, 60_000, int32(3*len(small)))
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 1, 1<<20
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	corr := c.send(withVersion(req, 12))
	harness.WaitFor(t, "the fetch to wait", 10*time.Second, func() bool { return ts.broker.WaitingFetches("two", 1) == 1 })
	do[*kmsg.ProduceResponse](other, produceReq("two", 1, -1, batch(t, records.BatchOptions{}, "y")), 9)
	if r0, r1 := logReads(t, ts, "two", 0), logReads(t, ts, "two", 1); r0 != 1 || r1 != 0 {
		t.Fatalf("while waiting: %d reads of partition 0 (want 1, before waiting), %d of 1 (want 0)", r0, r1)
	}
	do[*kmsg.ProduceResponse](other, produceReq("two", 1, -1, batch(t, records.BatchOptions{}, "z")), 9)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.recv(corr, resp)
	if n := len(fetchValues(t, resp.Topics[0].Partitions[1], 0)); n != 2 {
		t.Fatalf("partition 1: %d records, want 2", n)
	}
	if r0, r1 := logReads(t, ts, "two", 0), logReads(t, ts, "two", 1); r0 != 2 || r1 != 1 {
		t.Fatalf("after: %d reads of partition 0 (want 2), %d of 1 (want 1)", r0, r1)
	}
}

// TestWaitingFetchesStartNoGoroutines: fetches waiting on five connections
// run no goroutine beyond the connections' own.
func TestWaitingFetchesStartNoGoroutines(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "g", 1)
	var conns []*client
	for range 5 {
		c := ts.dial(t)
		do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 9) // its loops run
		conns = append(conns, c)
	}
	before := runtime.NumGoroutine()
	for _, c := range conns {
		c.send(withVersion(fetchReq("g", 0, 0, 10_000, 1), 12))
	}
	harness.WaitFor(t, "5 fetches to wait", 10*time.Second, func() bool { return ts.broker.WaitingFetches("g", 0) == 5 })
	if extra := runtime.NumGoroutine() - before; extra > 0 {
		t.Fatalf("5 waiting fetches added %d goroutines, want 0", extra)
	}
}
