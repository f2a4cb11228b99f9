package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestGroupConsumerResumesAcrossCompaction: a franz-go group consumer
// reads part of a compacted topic and commits; more updates follow, the
// cleaner compacts the log (the committed offset's own record, and
// records after it, may be gone); the consumer, restarted in the same
// group, resumes exactly at its commit: it reads every record that
// survived from the committed offset on, in order, and nothing below it.
func TestGroupConsumerResumesAcrossCompaction(t *testing.T) {
	node := harness.Start(t, "--log-cleaner-backoff-ms=100", "--group-initial-rebalance-delay-ms=0")
	node.WaitKafka()
	const topic, group = "table", "resumer"
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"`+topic+`","partitions":1,"configs":{`+
		`"cleanup.policy":"compact","segment.bytes":"1024","min.cleanable.dirty.ratio":"0.01"}}`, 201)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod := franz(t, node, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	produceRounds := func(from, to int) {
		for round := from; round < to; round++ {
			for k := 0; k < 10; k++ {
				r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte(fmt.Sprintf("v-%d-%d", k, round))}
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	produceRounds(0, 10)

	// First run: read 45 records, commit the offset after the last one.
	c1 := franz(t, node, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var read []*kgo.Record
	for len(read) < 45 {
		fs := c1.PollRecords(ctx, 45-len(read))
		if ctx.Err() != nil {
			t.Fatal("first consumer read too little")
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		read = append(read, fs.Records()...)
	}
	committed := read[len(read)-1].Offset + 1
	if err := c1.CommitRecords(ctx, read[len(read)-1]); err != nil {
		t.Fatal(err)
	}
	c1.Close() // leaves the group

	produceRounds(10, 30)
	// Done when the reads have held for a second, ten cleaner backoffs, so
	// no pass changes the log under the resumed consumer.
	var all []*kgo.Record
	var stableSince time.Time
	harness.WaitFor(t, "the cleaner to compact past the commit", 30*time.Second, func() bool {
		prev := all
		all = readAllFranz(t, node, topic)
		if len(all) != len(prev) || stableSince.IsZero() {
			stableSince = time.Now()
		}
		return len(all) < 300/3 && compactedAbove(all, committed) && time.Since(stableSince) >= time.Second
	})

	adm := kadm.NewClient(franz(t, node))
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != committed {
		t.Fatalf("committed offset after compaction: %+v, want %d", o, committed)
	}
	var want []*kgo.Record
	for _, r := range all {
		if r.Offset >= committed {
			want = append(want, r)
		}
	}
	c2 := franz(t, node, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []*kgo.Record
	for len(got) < len(want) {
		fs := c2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("resumed consumer read %d of %d", len(got), len(want))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != len(want) {
		t.Fatalf("resumed consumer read %d records, %d survive from the commit on", len(got), len(want))
	}
	for i := range want {
		if got[i].Offset != want[i].Offset || string(got[i].Key) != string(want[i].Key) || string(got[i].Value) != string(want[i].Value) {
			t.Fatalf("record %d: got %d %s=%s, want %d %s=%s", i, got[i].Offset, got[i].Key, got[i].Value,
				want[i].Offset, want[i].Key, want[i].Value)
		}
	}
	t.Logf("committed %d; after compaction %d records left, %d from the commit on, all read on resume starting at %d",
		committed, len(all), len(want), got[0].Offset)
}

// compactedAbove reports a gap in recs at or above offset: the cleaner
// removed records the resumed consumer would otherwise have read.
func compactedAbove(recs []*kgo.Record, offset int64) bool {
	n := int64(0)
	for _, r := range recs {
		if r.Offset >= offset {
			n++
		}
	}
	return len(recs) > 0 && n < recs[len(recs)-1].Offset+1-offset
}
