package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// staticMember is a franz-go consumer with a group.instance.id that
// records what it owns and how often it lost partitions.
type staticMember struct {
	cl      *kgo.Client
	mu      sync.Mutex
	owned   map[int32]bool
	revoked atomic.Int32
}

func startStaticMember(t *testing.T, node *harness.Node, group, topic, instance string) *staticMember {
	t.Helper()
	m := &staticMember{owned: map[int32]bool{}}
	lose := func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range lost[topic] {
			delete(m.owned, p)
		}
		if len(lost[topic]) > 0 {
			m.revoked.Add(1)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.InstanceID(instance), kgo.ClientID("client-"+instance), kgo.SessionTimeout(30*time.Second),
		kgo.Balancers(kgo.RangeBalancer()), // eager: any rebalance revokes everything
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(lose), kgo.OnPartitionsLost(lose))
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	return m
}

func (m *staticMember) ownedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.owned)
}

type describedGroup struct {
	State      string `json:"state"`
	Generation int32  `json:"generation"`
	Members    []struct {
		MemberID   string `json:"member_id"`
		InstanceID string `json:"instance_id"`
		ClientID   string `json:"client_id"`
		ClientHost string `json:"client_host"`
	} `json:"members"`
}

func describeGroup(t *testing.T, node *harness.Node, group string) describedGroup {
	t.Helper()
	var d describedGroup
	if err := json.Unmarshal(mustRest(t, 200, "GET", node.URL+"/groups/"+group, ""), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// KIP-345 against a real `ferry serve`: a static member that restarts (it
// does not leave on close) gets its partitions back in the same
// generation, and the other member is never revoked. Members are named
// after their instance id and /groups reports client id and host.
func TestStaticMemberRestartKeepsPartitionsWithoutRebalance(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "static", 4)
	a := startStaticMember(t, node, "static-g", "static", "a")
	harness.WaitFor(t, "the first member to own every partition", 30*time.Second, func() bool { return a.ownedCount() == 4 })
	// b joining is a second generation, whose join metadata says what each
	// member owned: a restarted member's differs (it owns nothing yet).
	b := startStaticMember(t, node, "static-g", "static", "b")
	defer b.cl.Close()
	harness.WaitFor(t, "both members to own two partitions", 30*time.Second, func() bool {
		return a.ownedCount() == 2 && b.ownedCount() == 2 && describeGroup(t, node, "static-g").State == "Stable"
	})
	before := describeGroup(t, node, "static-g")
	for _, m := range before.Members {
		if !strings.HasPrefix(m.MemberID, m.InstanceID+"-") || m.ClientID != "client-"+m.InstanceID || m.ClientHost != "/127.0.0.1" {
			t.Fatalf("member %+v: want an id starting with its instance id, client id client-<instance>, host /127.0.0.1", m)
		}
	}
	revokedBefore := b.revoked.Load()

	a.cl.Close() // a static member does not leave the group on close
	a2 := startStaticMember(t, node, "static-g", "static", "a")
	defer a2.cl.Close()
	harness.WaitFor(t, "the restarted member to own its two partitions", 30*time.Second, func() bool { return a2.ownedCount() == 2 })
	after := describeGroup(t, node, "static-g")
	if after.Generation != before.Generation || after.State != "Stable" || len(after.Members) != 2 {
		t.Fatalf("after the restart: %+v, want generation %d, Stable, 2 members", after, before.Generation)
	}
	if n := b.revoked.Load() - revokedBefore; n != 0 || b.ownedCount() != 2 {
		t.Fatalf("the other member was revoked %d times and owns %d partitions; want 0 and 2", n, b.ownedCount())
	}
}
