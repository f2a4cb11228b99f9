package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// failoverSessionTimeout is the --zookeeper-session-timeout-ms the brokers
// run with (startBrokers'): ferry's default, zookeeper.session.timeout.ms
// = 18 s, so the figures are those of default settings. A broker frozen
// or cut off is dead to the cluster only once its session expires; one
// killed is fenced sooner, on its refused connections (docs/replication.md,
// "Fencing a dead broker").
const failoverSessionTimeout = 18 * time.Second

// BenchmarkFailoverAfterKill measures how long an acks=all producer stalls
// when the leader of its RF3 partition is killed (kill -9): the
// controller's probes finding its listener refusing connections (or, when
// it was the controller too, the other brokers' probes deposing it and a
// new controller's probes), the election and LeaderAndIsr, and the
// client's metadata refresh. Target (issue 23): median ≤ 3 s, max ≤ 5 s.
// Run it with `-benchtime 3x`: each iteration is one failover and a
// restart (the restarted broker waits for its old session to expire before
// it registers again, so an iteration takes about 20 s more).
func BenchmarkFailoverAfterKill(b *testing.B) {
	benchmarkFailover(b, leaderVictim, (*harness.Node).Kill, (*harness.Node).Restart)
}

// BenchmarkFailoverAfterFollowerKill kills an in-sync follower instead:
// acks=all waits for it until it leaves the ISR, which the controller's
// fencing does on its refused connections (before issue 23: its session
// expiry). Its "failover" is that stall.
func BenchmarkFailoverAfterFollowerKill(b *testing.B) {
	benchmarkFailover(b, followerVictim, (*harness.Node).Kill, (*harness.Node).Restart)
}

// BenchmarkFailoverAfterFreeze is the same with SIGSTOP: a frozen broker
// keeps its sockets (the kernel still accepts connections for it), so no
// evidence of its death exists and the failover waits for its session to
// expire, as for a broker partitioned away. Its figure is the session
// timeout plus the election. After the failover the broker is thawed,
// finds its session gone and rejoins.
func BenchmarkFailoverAfterFreeze(b *testing.B) {
	benchmarkFailover(b, leaderVictim, (*harness.Node).Freeze, (*harness.Node).Thaw)
}

// BenchmarkFailoverAfterControlledShutdown is the same with SIGTERM: the
// leader asks the controller to move its leaderships before it exits, so
// nothing waits for a session to expire. Target: under 1 s.
func BenchmarkFailoverAfterControlledShutdown(b *testing.B) {
	benchmarkFailover(b, leaderVictim, func(n *harness.Node) {
		done := strings.Count(n.Logs(), "controlled shutdown: no partition led here any more")
		n.Stop()
		if strings.Count(n.Logs(), "controlled shutdown: no partition led here any more") == done {
			b.Fatalf("the leader stopped without a completed controlled shutdown:\n%s", n.Logs())
		}
	}, (*harness.Node).Restart)
}

// leaderVictim and followerVictim choose the broker a failover benchmark
// takes down: the partition's leader, or an in-sync follower.
func leaderVictim(leader int32, _ []int32) int32 { return leader }

func followerVictim(leader int32, isr []int32) int32 {
	for _, id := range isr {
		if id != leader {
			return id
		}
	}
	return -1
}

// benchmarkFailover runs three brokers and one producer writing one record
// at a time, and per iteration takes the broker victim chooses (the
// partition's leader, or a follower) down with takeDown, waits for the producer's first ack after that, then (untimed)
// brings the broker back with bringBack and waits for it to rejoin the
// ISR.
//
// The failover time is the longest gap between consecutive acks from the
// last ack before takeDown to that first ack: for kill -9 it is exactly
// "first ack after − last ack before"; a controlled shutdown moves the
// leadership while the process still runs, so the stall can end before the
// process does, and the longest gap is the stall the producer saw.
func benchmarkFailover(b *testing.B, victimOf func(leader int32, isr []int32) int32, takeDown, bringBack func(*harness.Node)) {
	const topic = "failover"
	nodes := startBrokers(b, 3)
	cl := failoverProducer(b, nodes, topic)
	adm := kadm.NewClient(cl)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	acks := &ackLog{}
	producing := make(chan struct{})
	go func() { defer close(producing); acks.produce(ctx, cl) }()
	defer func() { cancel(); <-producing }()

	var failovers []time.Duration
	for b.Loop() {
		leader, isr := leaderAndISR(adm, topic)
		down := victimOf(leader, isr)
		if leader < 1 || down < 1 {
			b.Fatalf("no leader or follower to take down for %s (leader %d, ISR %v)", topic, leader, isr)
		}
		victim := nodes[down-1]
		wasController := strings.Contains(scrape(victim), "\nferry_controller_active 1\n")
		acks.waitAfter(b, time.Now(), 30*time.Second) // the producer is writing to the current leader

		downAt := time.Now()
		takeDown(victim)
		goneAt := time.Now()
		first := acks.waitAfter(b, goneAt, 2*time.Minute)
		stall := acks.longestGap(downAt, first)

		b.StopTimer()
		failovers = append(failovers, stall)
		b.Logf("broker %d (leader: %v, controller: %v) down in %v; producer stalled %v",
			down, down == leader, wasController, goneAt.Sub(downAt).Round(time.Millisecond), stall.Round(time.Millisecond))
		bringBack(victim)
		harness.WaitFor(b, fmt.Sprintf("broker %d back in the ISR", down), 2*time.Minute, func() bool {
			_, isr := leaderAndISR(adm, topic)
			return len(isr) == 3
		})
		b.StartTimer()
	}
	if err := acks.failure(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(failovers)
	b.ReportMetric(millis(median(failovers)), "failover-ms-median")
	b.ReportMetric(millis(failovers[len(failovers)-1]), "failover-ms-max")
	b.ReportMetric(millis(failoverSessionTimeout), "session-timeout-ms")
}

// failoverProducer creates topic (one partition, replication factor 3),
// waits for its leader, and returns an idempotent acks=all producer on it.
// Its metadata may be refreshed every 250 ms rather than franz-go's default
// 5 s: a producer told NOT_LEADER or unable to reach the leader asks for
// metadata again, and with the default it would keep asking the dead
// leader's address for up to 5 s after the new leader is known, which
// measures the client rather than the cluster (with the default, a
// controlled shutdown stalled this producer 5.0 s, a kill -9 10.3 s).
// franz-go's retry backoff (250 ms, doubling) is left as it is: a
// client's own.
func failoverProducer(tb testing.TB, nodes []*harness.Node, topic string) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RecordDeliveryTimeout(90*time.Second), kgo.RetryTimeout(90*time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		tb.Fatalf("create topic: %v", err)
	}
	harness.WaitFor(tb, "the topic has a leader and a full ISR", 30*time.Second, func() bool {
		leader, isr := leaderAndISR(kadm.NewClient(cl), topic)
		return leader > 0 && len(isr) == 3
	})
	return cl
}

// startBrokers is startCluster for benchmarks too (startCluster takes a
// *testing.T): n brokers, ids 1..n, under a fresh chroot of the shared
// ZooKeeper, with the same session timeout.
func startBrokers(tb testing.TB, n int) []*harness.Node {
	tb.Helper()
	connect := zks.Require(tb).Addr() + "/" + tb.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	nodes := make([]*harness.Node, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			nodes[i] = harness.Start(tb, "--broker-id", strconv.Itoa(i+1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", strconv.Itoa(int(failoverSessionTimeout.Milliseconds())))
		})
	}
	wg.Wait()
	for _, node := range nodes {
		if node == nil {
			tb.FailNow() // a broker did not start; harness logged why
		}
	}
	return nodes
}

// leaderAndISR is the leader and ISR of topic's partition 0 in the
// cluster's metadata (leader -1 when it cannot be read).
func leaderAndISR(adm *kadm.Client, topic string) (leader int32, isr []int32) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1, nil
	}
	p, ok := md.Topics[topic].Partitions[0]
	if !ok || p.Err != nil {
		return -1, nil
	}
	return p.Leader, p.ISR
}

// ackLog holds the wall time of every acknowledged record, appended by
// the producing goroutine and read by the benchmark.
type ackLog struct {
	mu    sync.Mutex
	times []time.Time
	err   error // the produce that failed; the goroutine stops on it
}

// maxRecords bounds the producing loop by count, next to its context's
// deadline: a few failovers at a few ms per ack stay far below it.
const maxRecords = 2_000_000

// produce writes numbered records one at a time until ctx ends, a produce
// fails or maxRecords are acknowledged.
func (l *ackLog) produce(ctx context.Context, cl *kgo.Client) {
	for n := 0; n < maxRecords && ctx.Err() == nil; n++ {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr()
		cancel()
		if ctx.Err() != nil {
			return // the benchmark is over; a produce it cut short is no failure
		}
		l.mu.Lock()
		if err != nil {
			l.err = fmt.Errorf("produce %d: %w", n, err)
			l.mu.Unlock()
			return
		}
		l.times = append(l.times, time.Now())
		l.mu.Unlock()
	}
}

func (l *ackLog) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// waitAfter returns the time of the first ack after t, failing the
// benchmark if none comes within timeout or the producer has failed.
func (l *ackLog) waitAfter(tb testing.TB, t time.Time, timeout time.Duration) time.Time {
	tb.Helper()
	var first time.Time
	harness.WaitFor(tb, "an acknowledged record", timeout, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil {
			tb.Fatal(l.err)
		}
		if n := len(l.times); n > 0 && l.times[n-1].After(t) {
			i, _ := slices.BinarySearchFunc(l.times, t, func(at, t time.Time) int {
				if at.After(t) {
					return 1
				}
				return -1
			})
			first = l.times[i]
			return true
		}
		return false
	})
	return first
}

// longestGap is the longest time between consecutive acks from the last
// ack at or before from up to the ack at until.
func (l *ackLog) longestGap(from, until time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	prev := time.Time{}
	for _, at := range l.times {
		if at.After(until) {
			break
		}
		if !at.After(from) {
			prev = at
			continue
		}
		if !prev.IsZero() {
			longest = max(longest, at.Sub(prev))
		}
		prev = at
	}
	return longest
}

// median of sorted durations.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
