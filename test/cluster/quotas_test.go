package cluster_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

type quotaThrottleHook struct{ throttled atomic.Int32 }

func (h *quotaThrottleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.throttled.Add(1)
	}
}

// A client quota set through broker 1 reaches broker 3 through
// ZooKeeper's change notifications, without a restart: broker 3 lists it
// and holds a producer of a partition it leads near the quota.
func TestClientQuotaSetOnOneBrokerHeldByAnother(t *testing.T) {
	nodes := startCluster(t, 3)
	createOn(t, nodes, "q-cluster", 3)
	const rate = 256 << 10

	_, br1 := brokerClient(t, nodes[0])
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("slow")}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: rate}}
	alter.Entries = append(alter.Entries, entry)
	resp, err := alter.RequestWith(context.Background(), br1)
	if err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter through broker 1: %v %+v", err, resp)
	}
	_, br3 := brokerClient(t, nodes[2])
	harness.WaitFor(t, "broker 3 lists the quota", 20*time.Second, func() bool {
		d := kmsg.NewPtrDescribeClientQuotasRequest()
		resp, err := d.RequestWith(context.Background(), br3)
		return err == nil && len(resp.Entries) == 1 && len(resp.Entries[0].Values) == 1 && resp.Entries[0].Values[0].Value == rate
	})

	// The producer asks broker 3 alone for metadata: a topic it does not
	// list yet would hold the producer back for franz-go's metadata
	// refresh (5 s), the whole window.
	harness.WaitFor(t, "broker 3 names itself leader of q-cluster", 20*time.Second, func() bool {
		return strings.HasPrefix(metadataLine(nodes[2].KafkaAddr, "q-cluster"), "leader 3 ")
	})
	var h quotaThrottleHook
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].KafkaAddr), kgo.ClientID("slow"), kgo.WithHooks(&h),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedRecords(64), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 16<<10)
	rand.Read(value)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	from := time.Now().Add(time.Second)
	var acked atomic.Int64
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: "q-cluster", Value: value}, func(r *kgo.Record, err error) {
			if err == nil && time.Now().After(from) {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	got := float64(acked.Load()) / time.Since(from).Seconds()
	t.Logf("broker 3 held client id slow to %.0f B/s (quota %d), %d throttled responses", got, rate, h.throttled.Load())
	if got < 0.75*rate || got > 1.25*rate || h.throttled.Load() == 0 {
		t.Fatalf("broker 3: %.0f B/s with %d throttled responses; want %d ±25%% and throttled", got, h.throttled.Load(), rate)
	}
}
