package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// fencingSessionTimeout is long enough that only the fast path (a dead
// broker's refused connections) explains a move within half of it.
const fencingSessionTimeout = 30 * time.Second

// A killed leader is fenced on its refused connections, not on its
// session's expiry: with a 30 s session timeout the partition has a new
// leader within 15 s, the producer goes on, and nothing acknowledged is
// lost. The restarted broker (which waits for its old session to expire
// before it registers again) rejoins the ISR as a follower. Then the
// controller is killed: the other brokers depose it on the same evidence
// and elect a new one, again within half the session timeout.
func TestKilledBrokersAreFencedBeforeTheirSessionsExpire(t *testing.T) {
	nodes := startCluster(t, 3, "--zookeeper-session-timeout-ms", strconv.Itoa(int(fencingSessionTimeout.Milliseconds())))
	cl, adm := replicatedProducer(t, nodes, "fenced")
	acked := 0
	produce := func(count int) { acked = produceNumbered(t, cl, acked, count) }
	produce(30)

	old := leaderOf(t, adm, "fenced")
	victim := nodes[old-1]
	victim.Kill()
	harness.WaitFor(t, "a new leader, before the killed one's session expires", fencingSessionTimeout/2, func() bool {
		l := leaderOf(t, adm, "fenced")
		return l > 0 && l != old
	})
	if !anyLogs(nodes, "fencing it before its session expires") {
		t.Fatal("no controller logged fencing the killed broker")
	}
	produce(30)

	victim.ReadyTimeout = 2*fencingSessionTimeout + 10*time.Second
	victim.Restart()
	harness.WaitFor(t, "the restarted broker back in the ISR", time.Minute, func() bool {
		_, isr := leaderAndISR(adm, "fenced")
		return len(isr) == 3
	})
	produce(30)

	ctl := controllerNode(t, nodes)
	ctl.Kill()
	harness.WaitFor(t, "a new controller, before the killed one's session expires", fencingSessionTimeout/2, func() bool {
		for _, n := range nodes {
			if n != ctl && strings.Contains(scrape(n), "\nferry_controller_active 1\n") {
				return true
			}
		}
		return false
	})
	if !anyLogs(nodes, "deposed it before its session expires") {
		t.Fatal("no broker logged deposing the killed controller")
	}
	produce(30) // whatever the killed controller led moved too

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offs.Lookup("fenced", 0); end.Offset != int64(acked) {
		t.Fatalf("log end %d after %d acknowledged records (idempotent producer: no loss, no duplicates)", end.Offset, acked)
	}
	checkNumbered(t, nodes, "fenced", acked)
}

// controllerNode is the broker reporting ferry_controller_active 1.
func controllerNode(t *testing.T, nodes []*harness.Node) *harness.Node {
	t.Helper()
	var ctl *harness.Node
	harness.WaitFor(t, "a controller", 30*time.Second, func() bool {
		for _, n := range nodes {
			if strings.Contains(scrape(n), "\nferry_controller_active 1\n") {
				ctl = n
				return true
			}
		}
		return false
	})
	return ctl
}

func anyLogs(nodes []*harness.Node, s string) bool {
	for _, n := range nodes {
		if strings.Contains(n.Logs(), s) {
			return true
		}
	}
	return false
}

// checkNumbered reads topic's partition 0 from the start and checks it
// holds 0, 1, … count-1 at offsets 0 … count-1 (produceNumbered's values).
func checkNumbered(t *testing.T, nodes []*harness.Node, topic string, count int) {
	t.Helper()
	var live []*harness.Node
	for _, n := range nodes {
		if n.Running() {
			live = append(live, n)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(live)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := 0
	for next < count && ctx.Err() == nil {
		for _, r := range consumer.PollFetches(ctx).Records() {
			if want := strconv.Itoa(next); r.Offset != int64(next) || string(r.Value) != want {
				t.Fatalf("offset %d holds %q, want offset %d holding %q", r.Offset, r.Value, next, want)
			}
			next++
		}
	}
	if next < count {
		t.Fatalf("read %d of %d acknowledged records", next, count)
	}
}
