package api

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// produceZstdBatches writes n one-record zstd batches, each a value of
// size bytes, as a Kafka client would: tiny on disk, large decompressed.
func produceZstdBatches(t *testing.T, b *server.Broker, topic string, n, size int) {
	t.Helper()
	if err := b.CreateTopic(server.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var bld records.Builder
	value := bytes.Repeat([]byte("a"), size)
	for i := 0; i < n; i++ {
		bld.Reset()
		bld.Add(records.Record{Value: value, Timestamp: 1})
		batch, err := bld.AppendBatch(nil, records.BatchOptions{Codec: records.Zstd})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AppendBatch(context.Background(), server.BatchProduce{Topic: topic, Batches: batch}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadIsBoundedInDecompressedBytes(t *testing.T) {
	e := newTestEnv(t)
	const size = 4 << 20
	produceZstdBatches(t, e.broker, "big", 20, size)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"max_records=500", 1},                    // default 1 MiB: the first record only
		{"max_records=500&max_bytes=10", 1},       // never fewer than one
		{"max_records=500&max_bytes=10485760", 2}, // 10 MiB: two 4 MiB values, a third would pass it
	} {
		a := e.do(t, "GET", "/kafka/big/partitions/0/records?"+tc.query, "", "")
		var ans readAnswer
		a.decode(t, &ans)
		if len(ans.Records) != tc.want || ans.NextOffset != int64(tc.want) {
			t.Errorf("%s: %d records, next_offset %d; want %d", tc.query, len(ans.Records), ans.NextOffset, tc.want)
		}
		if len(a.body) > tc.want*(size+1024) {
			t.Errorf("%s: answer of %d bytes", tc.query, len(a.body))
		}
	}
	a := e.do(t, "GET", fmt.Sprintf("/kafka/big/partitions/0/records?max_bytes=%d", 1<<30), "", "")
	a.wantError(t, 400, codeBadParam)
}

// The REST consumer's answers are bounded by max_bytes the same way: a
// poll over twenty 1.5 MiB values returns about one of them at a time.
func TestRestConsumerReadIsBoundedInDecompressedBytes(t *testing.T) {
	e := newGroupsEnv(t)
	const size = 3 << 19 // 1.5 MiB: over the 1 MiB default budget, so one record per answer
	produceZstdBatches(t, e.broker, "big", 20, size)
	ci := e.newInstance(t, "g", `{"name":"c","format":"binary","auto.offset.reset":"earliest"}`)
	e.subscribe(t, "g", ci.InstanceID, `["big"]`)
	total := 0
	// Bounded by polls, not by time: -race on a busy 2-core machine
	// decompresses slowly.
	for polls := 0; total < 20 && polls < 200; polls++ {
		a := e.get(t, "/consumers/g/instances/c/records?timeout=500", typeRestBinary, "")
		var batch []restRecord
		a.decode(t, &batch)
		if len(batch) > 2 || len(a.body) > 2*(size*4/3+1024) {
			t.Fatalf("one answer has %d records, %d bytes; want at most the budget and one record", len(batch), len(a.body))
		}
		total += len(batch)
	}
	if total != 20 {
		t.Errorf("read %d records of 20", total)
	}
}
