package partition_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/jepsen"
)

// BenchmarkFailoverAfterPartition measures how long an acks=all idempotent
// producer, writing one record at a time, stalls when the leader of its
// RF3 partition is cut from its followers and ZooKeeper (clients still
// reach it): from its last ack before the cut to its first ack after,
// which only the majority side can give (the cut leader's followers no
// longer fetch from it, and its ISR shrink cannot reach ZooKeeper). The
// goal is the session timeout + 3 s. Each iteration is one cut; the heal
// and the wait for a whole ISR are untimed. Run it with `-benchtime 3x`
// (scripts/bench-cluster.sh does, next to test/cluster's kill -9 and
// controlled-shutdown failovers).
func BenchmarkFailoverAfterPartition(b *testing.B) {
	const topic = "failover"
	c := startCluster(b)
	c.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RecordDeliveryTimeout(90*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	history := &jepsen.History{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		jepsen.ProduceKafka(ctx, history, cl, jepsen.Producer{Name: "bench", Node: "any", Topic: topic, Timeout: 2 * time.Minute})
	}()
	defer func() { cancel(); <-done }()

	var stalls []time.Duration
	for b.Loop() {
		leader := c.leader(topic, 0)
		lastBefore := firstAckAfter(b, history, time.Now(), 30*time.Second) // writing to the current leader
		// cutAt is when every host's rules are in place: a write sent
		// while they were being written could still be replicated.
		mustOK(c, c.net.Isolate(c.host(leader)))
		cutAt := time.Now()
		for _, w := range history.Writes() {
			if w.Outcome == jepsen.Acked && w.End.Before(cutAt) && w.End.After(lastBefore) {
				lastBefore = w.End
			}
		}
		firstAfter := firstAckAfter(b, history, cutAt, 2*time.Minute)

		b.StopTimer()
		stall := firstAfter.Sub(lastBefore)
		stalls = append(stalls, stall)
		b.Logf("broker %d (leader) cut at %s; producer stalled %v; new leader %d",
			leader, cutAt.Format("15:04:05.000"), stall.Round(time.Millisecond), c.leader(topic, 0))
		mustOK(c, c.net.Heal())
		c.waitFullISR(topic, 1, 2*time.Minute)
		b.StartTimer()
	}
	cancel()
	<-done
	for _, w := range history.Writes() {
		if w.Outcome != jepsen.Acked {
			b.Logf("a write was not acknowledged: %+v", w)
		}
	}
	slices.Sort(stalls)
	median := stalls[len(stalls)/2]
	if len(stalls)%2 == 0 {
		median = (stalls[len(stalls)/2-1] + median) / 2
	}
	b.ReportMetric(millis(median), "failover-ms-median")
	b.ReportMetric(millis(stalls[len(stalls)-1]), "failover-ms-max")
	b.ReportMetric(millis(sessionTimeout), "session-timeout-ms")
}

// firstAckAfter is the end of the first acknowledged write that started
// after t (so it was sent after t), waiting up to timeout for one.
func firstAckAfter(tb testing.TB, h *jepsen.History, t time.Time, timeout time.Duration) time.Time {
	tb.Helper()
	var first time.Time
	harness.WaitFor(tb, "an acknowledged write after "+t.Format("15:04:05.000"), timeout, func() bool {
		for _, w := range h.Writes() {
			if w.Outcome == jepsen.Acked && w.Start.After(t) && (first.IsZero() || w.End.Before(first)) {
				first = w.End
			}
		}
		return !first.IsZero()
	})
	return first
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
