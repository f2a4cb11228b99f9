package api

import (
	"bufio"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"

	"github.com/ferry-mq/ferry/test/harness"
)

// pollUntil polls cond, failing after 10 s.
func reads(t *testing.T, b *server.Broker, topic string, partition int32) int64 {
	t.Helper()
	n, err := b.LogReads(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLongPollReadsNothingUntilData: GET …/records?timeout_ms on an empty
// partition reads the log 0 times while it waits and once when a record
// arrives.
func TestLongPollReadsNothingUntilData(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "lp", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	got := make(chan answer, 1)
	go func() { got <- e.do(t, "GET", "/kafka/lp/partitions/0/records?offset=0&timeout_ms=5000", "", "") }()
	harness.WaitFor(t, "the read to wait", 10*time.Second, func() bool { return e.broker.WaitingFetches("lp", 0) == 1 })
	if n := reads(t, e.broker, "lp", 0); n != 0 {
		t.Fatalf("%d log reads while waiting, want 0", n)
	}
	if a := e.do(t, "POST", "/kafka/lp", typeJSON, `{"n":1}`); a.status != 200 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	a := <-got
	var ra readAnswer
	a.decode(t, &ra)
	if a.status != 200 || len(ra.Records) != 1 {
		t.Fatalf("long poll: %d %s", a.status, a.body)
	}
	if n := reads(t, e.broker, "lp", 0); n != 1 {
		t.Fatalf("%d log reads for one completed long poll, want 1", n)
	}
}

// TestRestConsumerWaitReadsNothingUntilData: a REST consumer's records
// call waiting on two empty partitions reads neither and runs no goroutine
// of its own; a record on one makes it read that one once.
func TestRestConsumerWaitReadsNothingUntilData(t *testing.T) {
	e := newGroupsEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "rc", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	ci := e.newInstance(t, "rcg", `{"format":"json","auto.offset.reset":"earliest"}`)
	e.subscribe(t, "rcg", ci.InstanceID, `["rc"]`)
	path := "/consumers/rcg/instances/" + ci.InstanceID + "/records?timeout=10000"
	e.get(t, "/consumers/rcg/instances/"+ci.InstanceID+"/records?timeout=0", typeRestJSON, "") // joins; the connection stays open
	before := runtime.NumGoroutine()
	got := make(chan answer, 1)
	go func() { got <- e.get(t, path, typeRestJSON, "") }()
	harness.WaitFor(t, "the poll to wait on both partitions", 10*time.Second, func() bool {
		return e.broker.WaitingFetches("rc", 0) == 1 && e.broker.WaitingFetches("rc", 1) == 1
	})
	// The test's own goroutine and net/http's background read of the
	// request's connection; nothing per partition or per wait.
	extra := runtime.NumGoroutine() - before
	t.Logf("goroutines added by a waiting records call: %d", extra)
	if extra > 2 {
		t.Fatalf("a waiting records call added %d goroutines, want at most 2", extra)
	}
	if r0, r1 := reads(t, e.broker, "rc", 0), reads(t, e.broker, "rc", 1); r0+r1 != 0 {
		t.Fatalf("log reads while waiting: %d and %d, want 0", r0, r1)
	}
	e.produce(t, "rc", 1, 1)
	a := <-got
	var recs []restRecord
	a.decode(t, &recs)
	if a.status != http.StatusOK || len(recs) != 1 {
		t.Fatalf("records: %d %s", a.status, a.body)
	}
	if r0, r1 := reads(t, e.broker, "rc", 0), reads(t, e.broker, "rc", 1); r0 != 0 || r1 != 1 {
		t.Fatalf("log reads after the record: %d and %d, want 0 and 1", r0, r1)
	}
}

// TestStreamWaitReadsNothingUntilData: an SSE stream between sends waits
// for bytes beyond its position without reading; a record is read once and
// sent.
func TestStreamWaitReadsNothingUntilData(t *testing.T) {
	e := newGroupsEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "sse", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(e.url + "/kafka/sse/stream?group=sg&from=earliest&max_duration=20s&heartbeat_ms=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	harness.WaitFor(t, "the stream to wait", 10*time.Second, func() bool { return e.broker.WaitingFetches("sse", 0) == 1 })
	if n := reads(t, e.broker, "sse", 0); n != 0 {
		t.Fatalf("%d log reads while the stream waits, want 0", n)
	}
	e.produce(t, "sse", 0, 1)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && sc.Text() != "event: record" {
	}
	if sc.Err() != nil || sc.Text() != "event: record" {
		t.Fatalf("no record event: %v", sc.Err())
	}
	if n := reads(t, e.broker, "sse", 0); n != 1 {
		t.Fatalf("%d log reads for one record sent, want 1", n)
	}
}

// TestReadCommittedLongPollWaitsForTheCommit: GET …/records with
// isolation=read_committed at the last stable offset, held back by an
// open transaction, waits (it was answered at once, empty, while the
// transaction stayed open, so a client polled in a loop) and answers the
// records once the transaction commits.
func TestReadCommittedLongPollWaitsForTheCommit(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "rcw", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	appendTxn(t, e.broker, "rcw", 100, "t1", "t2")
	got := make(chan answer, 1)
	go func() {
		got <- e.do(t, "GET", "/kafka/rcw/partitions/0/records?offset=0&timeout_ms=30000&isolation=read_committed", "", "")
	}()
	harness.WaitFor(t, "the read to wait", 10*time.Second, func() bool { return e.broker.WaitingFetches("rcw", 0) == 1 })
	select {
	case a := <-got:
		t.Fatalf("answered before the commit: %d %s", a.status, a.body)
	default:
	}
	endTxn(t, e.broker, "rcw", 100, true)
	a := <-got
	var ra readAnswer
	a.decode(t, &ra)
	if a.status != 200 || len(ra.Records) != 2 {
		t.Fatalf("after the commit: %d %s", a.status, a.body)
	}
}
