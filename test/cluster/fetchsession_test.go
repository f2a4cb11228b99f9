package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// A franz-go consumer of six replicated partitions reads through
// incremental fetch sessions (its default) while their leaders move: a
// broker is killed (kill -9), its partitions join the consumer's sessions
// with the new leaders (an incremental fetch adding them), and once it is
// back with an empty session cache and leads again, they leave those
// sessions (ForgottenTopics) for a new one on it. Every record an acks=all
// producer had acknowledged is read, once.
func TestConsumerFetchSessionsAcrossFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, adm := replicatedProducer(t, nodes, "sess-one", kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "sess"); err != nil {
		t.Fatal(err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics("sess"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	var mu sync.Mutex
	seen := map[string]int{}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			fs := consumer.PollFetches(ctx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			mu.Unlock()
		}
	}()
	acked := 0
	produce := func(count int) {
		for i := acked; i < acked+count; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sess", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
		acked += count
	}
	readAll := func(what string) {
		t.Helper()
		harness.WaitFor(t, what+": every acknowledged record read", 60*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for i := range acked {
				if seen[fmt.Sprint(i)] == 0 {
					return false
				}
			}
			return true
		})
	}
	produce(60)
	readAll("before the kill")
	victim := leaderOfPartition(adm, "sess", 0)
	nodes[victim-1].Kill()
	produce(60)
	readAll("with a broker down")
	nodes[victim-1].Restart()
	harness.WaitFor(t, "the restarted broker back in the ISR", 60*time.Second, func() bool {
		_, isr := leaderAndISR(adm, "sess")
		return slices.Contains(isr, victim)
	})
	// Its leaderships back: the consumer fetches from it again.
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"sess": {0: {}, 1: {}, 2: {}, 3: {}, 4: {}, 5: {}}}); err != nil {
		t.Logf("preferred election: %v", err)
	}
	produce(60)
	readAll("after the broker came back")
	cancel()
	<-consumed
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}
}
