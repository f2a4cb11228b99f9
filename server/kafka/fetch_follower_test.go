package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
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
