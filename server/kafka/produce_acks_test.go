package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// The request's acks reach the core: acks=-1 to a partition with fewer
// in-sync replicas than min.insync.replicas is refused with
// NOT_ENOUGH_REPLICAS and writes nothing, acks=1 is appended, and a
// request spanning both topics answers each partition on its own.
func TestProduceAcksAllHonoursMinInsyncReplicas(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "strict", Partitions: 1,
		Configs: map[string]string{server.CfgMinInsyncReplicas: "2"}}); err != nil {
		t.Fatal(err)
	}
	createTopic(t, ts, "loose", 1)

	req := produceReq("strict", 0, -1, batch(t, records.BatchOptions{}, "a"))
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "loose"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch(t, records.BatchOptions{}, "b")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := do[*kmsg.ProduceResponse](c, req, 9)
	strict, loose := resp.Topics[0].Partitions[0], resp.Topics[1].Partitions[0]
	if strict.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 with min.insync.replicas=2 on one replica: error %d, want NOT_ENOUGH_REPLICAS", strict.ErrorCode)
	}
	if loose.ErrorCode != 0 || loose.BaseOffset != 0 {
		t.Fatalf("the other topic of the request: error %d, offset %d", loose.ErrorCode, loose.BaseOffset)
	}
	if p := produceOneAcks(c, "strict", 1, "c"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1: error %d, offset %d (want 0: the refused batch wrote nothing)", p.ErrorCode, p.BaseOffset)
	}
}

func produceOneAcks(c *client, topic string, acks int16, value string) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	resp := do[*kmsg.ProduceResponse](c, produceReq(topic, 0, acks, batch(c.t, records.BatchOptions{}, value)), 9)
	return resp.Topics[0].Partitions[0]
}

// A fetch that says it is a follower's (ReplicaID >= 0, or ReplicaState
// from v15) from a broker that is not an assigned replica is refused with
// NOT_LEADER_OR_FOLLOWER, at every version, and reads nothing.
func TestFollowerFetchFromANonReplicaIsRefused(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "solo", 1)
	if p := produceOneAcks(c, "solo", 1, "a"); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	id, err := ts.broker.TopicID("solo")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{4, 11, 12, 15} {
		req := fetchReq("solo", 0, 0, 0, 0)
		req.ReplicaID, req.ReplicaState.ID = 7, 7
		if v >= 13 {
			req.Topics[0].TopicID = id
		}
		fr := do[*kmsg.FetchResponse](c, req, v)
		p := fr.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code || len(p.RecordBatches) != 0 {
			t.Fatalf("v%d follower fetch from broker 7: error %d, %d bytes", v, p.ErrorCode, len(p.RecordBatches))
		}
	}
	if got := fetchValues(t, do[*kmsg.FetchResponse](c, fetchReq("solo", 0, 0, 0, 0), 11).Topics[0].Partitions[0], 0); len(got) != 1 {
		t.Fatalf("a consumer's fetch: %v", got)
	}
}
