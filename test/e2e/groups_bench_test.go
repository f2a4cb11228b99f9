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
const subscriptionChanges = 10

// BenchmarkSubscriptionChangeVsKfake measures join → assignment: franz-go
// group consumers (all of them or only the first changing) change their
// subscription subscriptionChanges times — "add" a topic, "replace" the
// previous one, or "reopen": close the client and start a new one on the
// new topic, as tools built on one-shot consumers do — and wait each time
// until the new topic is assigned, against a real `ferry serve` and, in
// the same round, against franz-go's kfake (the reference broker of
// scripts/bench-kafka.sh). Each iteration is one round on both; it reports
// the median over rounds of the first join and of the time per change, and
// the ratio of the changes. Run:
//
//	go test -run '^$' -bench SubscriptionChangeVsKfake -benchtime 3x ./test/e2e/
//
// (-bench 'SubscriptionChangeVsKfake/members=1/changing=1/reopen' for one case.)
func BenchmarkSubscriptionChangeVsKfake(b *testing.B) {
	node := harness.Start(b)
	node.WaitKafka()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	for _, c := range []struct{ members, changers int }{{1, 1}, {2, 2}, {2, 1}} {
		for _, mode := range []string{"add", "replace", "reopen"} {
			name := fmt.Sprintf("members=%d/changing=%d/%s", c.members, c.changers, mode)
			b.Run(name, func(b *testing.B) {
				benchSubscriptionChange(b, []string{node.KafkaAddr, cluster.ListenAddrs()[0]}, c.members, c.changers, mode)
			})
		}
	}
}

func benchSubscriptionChange(b *testing.B, addrs []string, members, changers int, mode string) {
	var first, perChange [2][]time.Duration
	for round := 0; b.Loop(); round++ {
		for i, addr := range addrs {
			prefix := fmt.Sprintf("bench-m%d-c%d-%s-%d", members, changers, mode, round)
			j, d, err := subscriptionChangeRound(addr, prefix, members, changers, subscriptionChanges, mode)
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
func subscriptionChangeRound(addr, prefix string, members, changers, n int, mode string) (firstJoin, changes time.Duration, err error) {
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
	open := func(i int, topic string) (*kgo.Client, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(prefix+"-group"), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("bench-%d", i)), kgo.OnPartitionsAssigned(a.onAssigned))
		if err != nil {
			return nil, err
		}
		go func() { // the group is driven by polling
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		return cl, nil
	}
	start := time.Now()
	cls := make([]*kgo.Client, members)
	defer func() {
		for _, cl := range cls {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	for i := range cls {
		if cls[i], err = open(i, topics[0]); err != nil {
			return 0, 0, err
		}
	}
	if err := a.wait(ctx, topics[0]); err != nil {
		return 0, 0, err
	}
	firstJoin = time.Since(start)
	start = time.Now()
	for i, t := range topics[1:] {
		for j, cl := range cls[:changers] {
			switch mode {
			case "reopen":
				cl.Close() // leaves the group
				if cls[j], err = open(j, t); err != nil {
					return 0, 0, err
				}
				continue
			case "replace":
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
