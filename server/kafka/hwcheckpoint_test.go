package kafka

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// A follower that restarts resumes from the high watermark it had
// (replication-offset-checkpoint): made leader before any follower
// fetches from it, it serves consumers every record that was committed,
// where a high watermark restarting at 0 would hide them all until its
// followers caught up.
func TestRestartedFollowerLeadsFromItsCheckpointedHighWatermark(t *testing.T) {
	b1 := clusterBroker(t, 1)
	b2 := newTestServerWith(t, func(c *server.Config) { c.BrokerID, c.AwaitRoles = 2, true },
		func(c *Config) { c.InterBroker = true })
	for _, b := range []*testServer{b1, b2} {
		createTopic(t, b, "hw", 1)
		if resp := sendLeaderAndIsr(t, b, leaderAndIsr(1, "hw", 1, 1, []int32{1, 2}, b1)); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d: LeaderAndIsr answered %+v", b.broker.BrokerID(), resp)
		}
	}
	c1 := b1.dial(t)
	for _, v := range []string{"a", "b", "c"} {
		if p := produceOneAcks(c1, "hw", -1, v); p.ErrorCode != 0 {
			t.Fatalf("acks=all %q: error %d", v, p.ErrorCode)
		}
	}
	follower := func() server.Partition {
		p, err := b2.broker.Partition("hw", 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	harness.WaitFor(t, "the follower to learn the high watermark 3", 10*time.Second, func() bool { return follower().HighWatermark() == 3 })

	b2.stop(t)
	b2.start(t, slog.New(slog.NewTextHandler(b2.logs, nil)), func(c *Config) { c.InterBroker = true })
	if p := follower(); p.HighWatermark() != 3 || p.LogEndOffset() != 3 {
		t.Fatalf("restarted follower: high watermark %d, log end %d; want 3, 3", p.HighWatermark(), p.LogEndOffset())
	}
	// Broker 2 leads epoch 2 with broker 1 still in its ISR, which has not
	// fetched from it: nothing may move the high watermark but the
	// checkpoint.
	if resp := sendLeaderAndIsr(t, b2, leaderAndIsr(2, "hw", 2, 2, []int32{2, 1}, b2)); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("broker 2, epoch 2: %+v", resp)
	}
	c2 := b2.dial(t)
	lo := do[*kmsg.ListOffsetsResponse](c2, listOffsetsReq("hw", -1), 7).Topics[0].Partitions[0]
	if lo.ErrorCode != 0 || lo.Offset != 3 {
		t.Fatalf("ListOffsets latest on the new leader: error %d offset %d, want 3", lo.ErrorCode, lo.Offset)
	}
	fp := do[*kmsg.FetchResponse](c2, fetchReq("hw", 0, 0, 0, 0), 11).Topics[0].Partitions[0]
	if got := fetchValues(t, fp, 0); fp.ErrorCode != 0 || fp.HighWatermark != 3 || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("fetch from the new leader: error %d high watermark %d values %v", fp.ErrorCode, fp.HighWatermark, got)
	}
}
