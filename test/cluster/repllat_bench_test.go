package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkReplicatedWriteLatency: how long one write waits for its
// acknowledgement, alone on the connection (one franz-go producer, one
// 100-byte record at a time, no idempotence, no linger), on three brokers:
// a partition of replication factor 1 at acks=1, one of factor 3 at
// acks=1 and at acks=all, and last the acks=all writes again once the
// followers also copy 60 idle partitions. acks=all minus acks=1 on the same partition is
// what replication adds to every acknowledged write (the follower's fetch
// woken by the append, its next fetch reporting its log end, the high
// watermark moving and completing the produce), which a transaction pays
// several times in series. The three are measured in turns, three rounds
// of FERRY_BENCH_WINDOW each (5 s), so a neighbour's load falls on all of
// them alike; reports p50, p90 and p99 in microseconds.
func BenchmarkReplicatedWriteLatency(b *testing.B) {
	for range b.N {
		nodes := startTxnBrokers(b)
		adm := txnAdmin(b, nodes)
		ctx := context.Background()
		for topic, rf := range map[string]int16{"lat-rf1": 1, "lat-rf3": 3} {
			if _, err := adm.CreateTopic(ctx, 1, rf, nil, topic); err != nil {
				b.Fatal(err)
			}
			harness.WaitFor(b, topic+"'s replicas in sync", 30*time.Second, func() bool {
				leader, isr := leaderAndISR(adm, topic)
				return leader > 0 && len(isr) == int(rf)
			})
		}
		leader := leaderOfPartition(adm, "lat-rf3", 0)
		cases := []struct {
			name  string
			topic string
			acks  kgo.Acks
		}{
			{"rf=1 acks=1", "lat-rf1", kgo.LeaderAck()},
			{"rf=3 acks=1", "lat-rf3", kgo.LeaderAck()},
			{"rf=3 acks=all", "lat-rf3", kgo.AllISRAcks()},
		}
		clients := make([]*kgo.Client, len(cases))
		for i, c := range cases {
			clients[i] = benchClient(b, nodes, c.topic, kgo.RequiredAcks(c.acks), kgo.DisableIdempotentWrite(),
				kgo.ProducerLinger(0))
		}
		lat := make([][]time.Duration, len(cases))
		value := make([]byte, 100)
		for range 3 {
			for i := range cases {
				lat[i] = append(lat[i], writeOneByOne(b, clients[i], value, benchWindow())...)
			}
		}
		// Then the same acks=all writes while the followers also copy 60
		// idle partitions (the internal topics' and other topics' in a real
		// cluster): each replica fetch names every partition the follower
		// copies from that leader, and each answer lists them all.
		createIdlePartitions(b, adm, "lat-idle", 60)
		cases = append(cases, cases[2])
		cases[3].name = "rf=3 acks=all, +60 idle partitions"
		lat = append(lat, nil)
		for range 3 {
			lat[3] = append(lat[3], writeOneByOne(b, clients[2], value, benchWindow())...)
		}
		b.Logf("rf=3 partition led by broker %d", leader)
		for i, c := range cases {
			slices.Sort(lat[i])
			q := func(f float64) time.Duration { return lat[i][int(f*float64(len(lat[i])-1))] }
			b.Logf("%-34s p50 %4d us  p90 %4d us  p99 %4d us  (%d writes)", c.name,
				q(0.50).Microseconds(), q(0.90).Microseconds(), q(0.99).Microseconds(), len(lat[i]))
			for _, f := range []float64{0.50, 0.90, 0.99} {
				b.ReportMetric(float64(q(f).Microseconds()), fmt.Sprintf("%s-p%.0f-us", slug(c.name), f*100))
			}
		}
	}
}

// createIdlePartitions creates a topic of n partitions, replication
// factor 3, and waits for every ISR to be whole.
func createIdlePartitions(b *testing.B, adm *kadm.Client, topic string, n int32) {
	b.Helper()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, n, 3, nil, topic); err != nil {
		b.Fatal(err)
	}
	harness.WaitFor(b, topic+"'s replicas in sync", 60*time.Second, func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil || len(md.Topics[topic].Partitions) != int(n) {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
}

// writeOneByOne produces value one record at a time for window, each
// after the previous one is acknowledged, and returns each one's wait.
// The first writes warm the connection up and are not counted.
func writeOneByOne(b *testing.B, cl *kgo.Client, value []byte, window time.Duration) []time.Duration {
	b.Helper()
	const warmUp = 50
	ctx := context.Background()
	var lat []time.Duration
	start := time.Now()
	for n := 0; time.Since(start) < window; n++ {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if n >= warmUp {
			lat = append(lat, time.Since(sent))
		}
	}
	if len(lat) == 0 {
		b.Fatalf("no write acknowledged within %v", window)
	}
	return lat
}

// slug turns "rf=3 acks=all, +60 idle partitions" into
// "rf3-acksall-60-idle-partitions" for a metric's unit.
func slug(name string) string {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c != '=' && len(out) > 0 && out[len(out)-1] != '-':
			out = append(out, '-')
		}
	}
	return string(out)
}
