package cluster_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// failPreferred kills topic's preferred leader (its first replica), lets
// another take over, and brings it back into the ISR; it returns the
// preferred replica's id.
func failPreferred(t *testing.T, nodes []*harness.Node, topic string) int32 {
	t.Helper()
	md, err := metadataFrom(t, nodes, topic)
	if err != nil {
		t.Fatal(err)
	}
	preferred := md.Topics[topic].Partitions[0].Replicas[0]
	nodes[preferred-1].Kill()
	harness.WaitFor(t, "another replica leads", 30*time.Second, func() bool {
		l, _ := partitionState(t, nodes, topic)
		return l > 0 && l != preferred
	})
	nodes[preferred-1].Restart()
	harness.WaitFor(t, "the preferred replica is back in the ISR", 60*time.Second, func() bool {
		_, isr := partitionState(t, nodes, topic)
		return slices.Contains(isr, preferred)
	})
	return preferred
}

// After a failover the preferred replica returns as a follower; a
// preferred election (Kafka's ElectLeaders, here through franz-go's kadm,
// then over HTTP and the CLI) gives it its leadership back, and asking
// again says it is not needed.
func TestPreferredLeaderElectionAfterFailover(t *testing.T) {
	nodes := startCluster(t, 3, "--auto-leader-rebalance-enable=false")
	cl, _ := replicatedProducer(t, nodes, "pref")
	next := produceNumbered(t, cl, 0, 10)
	preferred := failPreferred(t, nodes, "pref")
	if l, _ := partitionState(t, nodes, "pref"); l == preferred {
		t.Fatal("the preferred replica leads again without an election (auto rebalance is off)")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add("pref", 0)
	res, err := kadm.NewClient(adminOn(t, nodes)).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["pref"][0]; r.Err != nil {
		t.Fatalf("preferred election: %v %s", r.Err, r.ErrMessage)
	}
	harness.WaitFor(t, "the preferred replica leads", 10*time.Second, func() bool {
		l, _ := partitionState(t, nodes, "pref")
		return l == preferred
	})
	produceNumbered(t, cl, next, 10)

	// Over HTTP, on a broker that is not the controller: not needed now.
	md, err := metadataFrom(t, nodes)
	if err != nil {
		t.Fatal(err)
	}
	other := nodes[md.Controller%3]
	resp, err := http.Post(other.URL+"/admin/preferred-leader-election", "application/json",
		strings.NewReader(`{"partitions":[{"topic":"pref","partition":0},{"topic":"nope","partition":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Results []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Elected   bool   `json:"elected"`
			ErrorCode int16  `json:"error_code"`
		} `json:"results"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(answer.Results) != 2 {
		t.Fatalf("POST /admin/preferred-leader-election: %d %+v %v", resp.StatusCode, answer, err)
	}
	for _, r := range answer.Results {
		want := kerr.ElectionNotNeeded.Code
		if r.Topic == "nope" {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if r.Elected || r.ErrorCode != want {
			t.Fatalf("HTTP election result %+v, want error code %d", r, want)
		}
	}

	// The CLI, as kafka-leader-election.sh.
	out, err := exec.Command(harness.Binary(t), "leader-election", "--bootstrap", nodes[0].KafkaAddr,
		"--election-type", "preferred", "--all-topic-partitions").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Valid replica already elected for partitions") || !strings.Contains(string(out), "pref-0") {
		t.Fatalf("ferry leader-election: %v\n%s", err, out)
	}
}

// With auto.leader.rebalance.enable the controller's imbalance check gives
// the leadership back by itself once the preferred replica is in sync.
func TestAutoLeaderRebalanceRestoresPreferredLeaders(t *testing.T) {
	nodes := startCluster(t, 3, "--leader-imbalance-check-interval-seconds", "1")
	cl, _ := replicatedProducer(t, nodes, "auto")
	produceNumbered(t, cl, 0, 10)
	preferred := failPreferred(t, nodes, "auto")
	harness.WaitFor(t, "the imbalance check elects the preferred replica", 20*time.Second, func() bool {
		l, _ := partitionState(t, nodes, "auto")
		return l == preferred
	})
}

// adminOn is a client over the live brokers, for admin requests that go
// to the controller.
func adminOn(t testing.TB, nodes []*harness.Node) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
