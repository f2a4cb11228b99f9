package kafka

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

// A follower's fetch counts its offset in every partition it asks for,
// before any is read: a partition listed after one whose batch used up the
// response's bytes moves its high watermark all the same (it was left
// uncounted, so an acks=all produce waited for the follower's next fetch),
// while a partition asked for in a fenced leader epoch is answered
// FENCED_LEADER_EPOCH and not counted.
func TestFollowerFetchCountsEveryPartitionFirst(t *testing.T) {
	b1 := clusterBroker(t, 1)
	for _, topic := range []string{"big", "small", "fenced"} {
		createTopic(t, b1, topic, 1)
		resp := sendLeaderAndIsr(t, b1, leaderAndIsr(1, topic, 1, 1, []int32{1, 2}, b1))
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("LeaderAndIsr for %s: %+v", topic, resp)
		}
	}
	c := b1.dial(t)
	if p := produceOneAcks(c, "big", 1, strings.Repeat("x", 4096)); p.ErrorCode != 0 {
		t.Fatalf("produce to big: %d", p.ErrorCode)
	}
	for _, topic := range []string{"small", "fenced"} {
		if p := produceOneAcks(c, topic, 1, "a"); p.ErrorCode != 0 {
			t.Fatalf("produce to %s: %d", topic, p.ErrorCode)
		}
	}

	// Broker 2 has nothing of big (it asks from 0), and small's and
	// fenced's one record (it asks from 1); big's batch is over the
	// response's MaxBytes, so it is all the response carries.
	req := fetchReq("big", 0, 0, 0, 0)
	req.ReplicaID, req.MaxBytes = 2, 1024
	for _, topic := range []string{"small", "fenced"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1, 1<<20, 1
		if topic == "fenced" {
			rp.CurrentLeaderEpoch = 0
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := do[*kmsg.FetchResponse](c, req, 12)
	if big := resp.Topics[0].Partitions[0]; big.ErrorCode != 0 || len(big.RecordBatches) < 4096 {
		t.Fatalf("big: error %d, %d bytes", big.ErrorCode, len(big.RecordBatches))
	}
	if fenced := resp.Topics[2].Partitions[0]; fenced.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fenced: error %d, want FENCED_LEADER_EPOCH", fenced.ErrorCode)
	}
	for topic, want := range map[string]int64{"big": 0, "small": 1, "fenced": 0} {
		if hw := highWatermark(t, b1.broker, topic); hw != want {
			t.Errorf("%s: high watermark %d, want %d", topic, hw, want)
		}
	}
}

func highWatermark(t *testing.T, b *server.Broker, topic string) int64 {
	t.Helper()
	p, err := b.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.HighWatermark()
}

// A follower learns the high watermark from the leader's answers, and
// serves reads below it (the gateway on every node): an answer whose high
// watermark is news goes within server.FollowerTellWithin, records or not,
// and a parked fetch answers once the high watermark passes what its
// follower was told (Kafka's DelayedFetch case H). Before, both waited for the next append
// or replica.fetch.wait.max.ms, however long. Fetches that have nothing
// new to tell still park. The fetches ask to wait 60 s; the client gives
// up reading after 10.
func TestFollowerFetchAnswersWithANewHighWatermark(t *testing.T) {
	b1 := clusterBroker(t, 1)
	createTopic(t, b1, "hw", 1)
	req := leaderAndIsr(1, "hw", 1, 1, []int32{1, 2, 3}, b1)
	req.TopicStates[0].PartitionStates[0].Replicas = []int32{1, 2, 3}
	if resp := sendLeaderAndIsr(t, b1, req); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", resp)
	}
	producer, f2, f3 := b1.dial(t), b1.dial(t), b1.dial(t)
	fetch := func(replica int32, offset int64, maxWait int32) *kmsg.FetchRequest {
		r := fetchReq("hw", 0, offset, maxWait, 1)
		r.ReplicaID = replica
		r.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
		return r
	}
	answer := func(c *client, corr int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		c.recv(corr, resp)
		return resp.Topics[0].Partitions[0]
	}
	parked := func(n int) {
		t.Helper()
		harness.WaitFor(t, fmt.Sprintf("%d fetches parked", n), 10*time.Second, func() bool { return b1.broker.WaitingFetches("hw", 0) == n })
	}

	if p := produceOneAcks(producer, "hw", 1, "a"); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	for id, c := range map[int32]*client{2: f2, 3: f3} {
		if p := do[*kmsg.FetchResponse](c, fetch(id, 0, 0), 12).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 0 {
			t.Fatalf("a follower's first fetch: error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	}
	// 2 has the record and was told high watermark 0: nothing new, it parks.
	corr2 := f2.send(withVersion(fetch(2, 1, 60000), 12))
	parked(1)
	// 3's fetch moves the high watermark to 1: news, answered without
	// waiting for another record.
	if p := do[*kmsg.FetchResponse](f3, fetch(3, 1, 60000), 12).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) != 0 {
		t.Fatalf("the fetch that moved the high watermark: error %d, high watermark %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
	// 2's parked fetch answers with it.
	if p := answer(f2, corr2); p.ErrorCode != 0 || p.HighWatermark != 1 {
		t.Fatalf("the parked fetch: error %d, high watermark %d", p.ErrorCode, p.HighWatermark)
	}
	// Told 1 both, they park again until the next record.
	corr2 = f2.send(withVersion(fetch(2, 1, 60000), 12))
	corr3 := f3.send(withVersion(fetch(3, 1, 60000), 12))
	parked(2)
	if p := produceOneAcks(producer, "hw", 1, "b"); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	for c, corr := range map[*client]int32{f2: corr2, f3: corr3} {
		if p := answer(c, corr); p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
			t.Fatalf("the next record: error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	}
}
