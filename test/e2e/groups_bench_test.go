package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// subscriptionChanges is how many times the benchmark's consumers change
// their subscription per round.
const subscriptionChanges = 20

// BenchmarkSubscriptionChangeVsKfake measures join → assignment: franz-go
// group consumers add a topic to their subscription subscriptionChanges
// times (and, in "replace", drop the previous one) and wait each time
// until the new topic is assigned, against a real `ferry serve` and, in
// the same round, against franz-go's kfake (the reference broker of
// scripts/bench-kafka.sh). Each iteration is one round on both; it reports
// the median over rounds of the first join and of the time per change, and
// the ratio of the changes. Run:
//
//	go test -run '^$' -bench SubscriptionChangeVsKfake -benchtime 3x ./test/e2e/
func BenchmarkSubscriptionChangeVsKfake(b *testing.B) {
	node := harness.Start(b)
	node.WaitKafka()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	for _, members := range []int{1, 2} {
		for _, replace := range []bool{false, true} {
			name := fmt.Sprintf("members=%d/add", members)
			if replace {
				name = fmt.Sprintf("members=%d/replace", members)
			}
			b.Run(name, func(b *testing.B) {
				benchSubscriptionChange(b, []string{node.KafkaAddr, cluster.ListenAddrs()[0]}, members, replace)
			})
		}
	}
}

func benchSubscriptionChange(b *testing.B, addrs []string, members int, replace bool) {
	var first, perChange [2][]time.Duration
	for round := 0; b.Loop(); round++ {
		for i, addr := range addrs {
			prefix := fmt.Sprintf("bench-m%d-%v-%d", members, replace, round)
			j, d, err := subscriptionChangeRound(addr, prefix, members, subscriptionChanges, replace)
			if err != nil {
				b.Fatalf("%s: %v", addr, err)
			}
			first[i] = append(first[i], j)
			perChange[i] = append(perChange[i], d/subscriptionChanges)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	f, k := median(perChange[0]), median(perChange[1])
	b.ReportMetric(ms(median(first[0])), "ferry-first-join-ms")
	b.ReportMetric(ms(median(first[1])), "kfake-first-join-ms")
	b.ReportMetric(ms(f), "ferry-ms/change")
	b.ReportMetric(ms(k), "kfake-ms/change")
	b.ReportMetric(float64(f)/float64(k), "ferry/kfake")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// assignedTopics is the union of the topics assigned to a group's members.
type assignedTopics struct {
	mu      sync.Mutex
	topics  map[string]bool
	changed chan struct{}
}

func (a *assignedTopics) onAssigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	a.mu.Lock()
	for t := range m {
		a.topics[t] = true
	}
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *assignedTopics) wait(ctx context.Context, topic string) error {
	for {
		a.mu.Lock()
		ok := a.topics[topic]
		a.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-a.changed:
		case <-ctx.Done():
			return fmt.Errorf("%s never assigned: %w", topic, ctx.Err())
		}
	}
}

// subscriptionChangeRound creates topics prefix-0..n (one partition each),
// starts the members on prefix-0 and returns how long until it is
// assigned, then has every member add one topic at a time and returns the
// time from the first change until the last topic is assigned.
func subscriptionChangeRound(addr, prefix string, members, n int, replace bool) (firstJoin, changes time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, 0, err
	}
	defer admin.Close()
	topics := make([]string, n+1)
	for i := range topics {
		topics[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		return 0, 0, err
	}
	a := &assignedTopics{topics: map[string]bool{}, changed: make(chan struct{}, 1)}
	start := time.Now()
	var cls []*kgo.Client
	for i := range members {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(prefix+"-group"), kgo.ConsumeTopics(topics[0]),
			kgo.ClientID(fmt.Sprintf("bench-%d", i)), kgo.OnPartitionsAssigned(a.onAssigned))
		if err != nil {
			return 0, 0, err
		}
		defer cl.Close()
		go func() { // the group is driven by polling
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		cls = append(cls, cl)
	}
	if err := a.wait(ctx, topics[0]); err != nil {
		return 0, 0, err
	}
	firstJoin = time.Since(start)
	start = time.Now()
	for i, t := range topics[1:] {
		for _, cl := range cls {
			if replace {
				cl.PurgeTopicsFromConsuming(topics[i])
			}
			cl.AddConsumeTopics(t)
		}
		if err := a.wait(ctx, t); err != nil {
			return 0, 0, err
		}
	}
	return firstJoin, time.Since(start), nil
}
