package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// The HTTP views of a cluster show the cluster's state, not one node's:
// GET /topics/{t} on a broker that does not lead the partition gives its
// leader, replicas and ISR as the controller has them; /brokers and
// /cluster list the live brokers and the controller. A follower frozen
// (SIGSTOP, for less than its session timeout, so the controller does not
// see it die) while records arrive falls out of the ISR by the leader's own
// decision after replica.lag.time.max.ms: the leader's GET /topics/{t},
// /cluster and metrics show the shrink at once, another broker's once the
// controller has spread it; thawed, the follower catches up and the ISR
// expands back the same way.
func TestViewsFollowISRShrinkAndExpand(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("replica.lag.time.max.ms=1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := startCluster(t, 3, "--config", props, "--zookeeper-session-timeout-ms", "20000")
	cl, adm := replicatedProducer(t, nodes, "views")
	next := produceNumbered(t, cl, 0, 5)
	leader := leaderOf(t, adm, "views")
	controller := controllerOf(t, nodes)
	// Freeze a follower that is not the controller, so ISR change
	// notifications still reach the other brokers; the bystander is the
	// remaining broker that does not lead.
	var frozen, bystander *harness.Node
	for i, n := range nodes {
		id := int32(i + 1)
		switch {
		case id != leader && id != controller && frozen == nil:
			frozen = n
		case id != leader:
			bystander = n
		}
	}
	frozenID := brokerIDOf(nodes, frozen)
	leaderNode := nodes[leader-1]
	all := []int32{1, 2, 3}

	harness.WaitFor(t, "a broker that does not lead describes the partition with its leader and an ISR of 3", 20*time.Second, func() bool {
		p, ok := partitionOf(bystander, "views")
		return ok && p.Leader == leader && sameSet(p.Replicas, all) && sameSet(p.ISR, all) && !p.UnderReplicated && p.Local
	})
	var brokers struct {
		Brokers []struct {
			BrokerID   int32 `json:"broker_id"`
			Port       int   `json:"port"`
			Controller bool  `json:"controller"`
		} `json:"brokers"`
	}
	getJSON(t, bystander.URL+"/brokers", &brokers)
	var ids []int32
	for _, b := range brokers.Brokers {
		ids = append(ids, b.BrokerID)
		if b.Controller != (b.BrokerID == controller) || b.Port == 0 {
			t.Fatalf("GET /brokers: %+v; the controller is %d", brokers.Brokers, controller)
		}
	}
	if !slices.Equal(ids, all) {
		t.Fatalf("GET /brokers lists %v, want %v", ids, all)
	}
	if c := clusterOf(t, bystander); c.BrokerCount != 3 || c.ControllerID != controller || c.UnderReplicated != 0 || c.Offline != 0 || c.Partitions < 1 {
		t.Fatalf("GET /cluster: %+v; the controller is %d", c, controller)
	}

	shrinks := metricValue(scrape(leaderNode), "ferry_isr_shrinks_total")
	expands := metricValue(scrape(leaderNode), "ferry_isr_expands_total")
	frozen.Freeze()
	// acks=all: answered once the leader has dropped the frozen follower.
	next = produceNumbered(t, cl, next, 3)
	without := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == frozenID })
	harness.WaitFor(t, "the leader's GET /topics/views shows the ISR shrunk without the frozen follower", 10*time.Second, func() bool {
		p, ok := partitionOf(leaderNode, "views")
		return ok && sameSet(p.ISR, without) && sameSet(p.Replicas, all) && p.UnderReplicated
	})
	if m := scrape(leaderNode); metricValue(m, "ferry_under_replicated_partitions") < 1 || metricValue(m, "ferry_isr_shrinks_total") <= shrinks {
		t.Fatalf("after the shrink the leader reports ferry_under_replicated_partitions %v, ferry_isr_shrinks_total %v (was %v)",
			metricValue(m, "ferry_under_replicated_partitions"), metricValue(m, "ferry_isr_shrinks_total"), shrinks)
	}
	if c := clusterOf(t, leaderNode); c.UnderReplicated < 1 {
		t.Fatalf("GET /cluster on the leader after the shrink: %+v", c)
	}
	harness.WaitFor(t, "the bystander's GET /topics/views shows the shrunk ISR (the controller spread it)", 20*time.Second, func() bool {
		p, ok := partitionOf(bystander, "views")
		return ok && p.Leader == leader && sameSet(p.ISR, without) && p.UnderReplicated
	})

	frozen.Thaw()
	produceNumbered(t, cl, next, 3)
	harness.WaitFor(t, "the leader's GET /topics/views shows the ISR expanded back to 3", 15*time.Second, func() bool {
		p, ok := partitionOf(leaderNode, "views")
		return ok && sameSet(p.ISR, all) && !p.UnderReplicated
	})
	if m := scrape(leaderNode); metricValue(m, "ferry_under_replicated_partitions") != 0 || metricValue(m, "ferry_isr_expands_total") <= expands {
		t.Fatalf("after the expansion the leader reports ferry_under_replicated_partitions %v, ferry_isr_expands_total %v (was %v)",
			metricValue(m, "ferry_under_replicated_partitions"), metricValue(m, "ferry_isr_expands_total"), expands)
	}
	harness.WaitFor(t, "the bystander's GET /topics/views shows the ISR of 3 again", 20*time.Second, func() bool {
		p, ok := partitionOf(bystander, "views")
		return ok && sameSet(p.ISR, all) && !p.UnderReplicated
	})
}

// A topic with one replica is described on every broker: where the
// replica is, with its offsets; elsewhere with its leader and no offsets
// (local false), also on a broker that has never held any of the topic.
func TestViewsDescribeTopicsHeldElsewhere(t *testing.T) {
	nodes := startCluster(t, 3)
	_, adm := replicatedProducer(t, nodes, "held")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "single"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	harness.WaitFor(t, "single has a leader", 30*time.Second, func() bool { return leaderOf(t, adm, "single") > 0 })
	leader := leaderOf(t, adm, "single")
	for i, n := range nodes {
		id := int32(i + 1)
		harness.WaitFor(t, fmt.Sprintf("broker %d lists and describes single", id), 20*time.Second, func() bool {
			var names []string
			if getJSONQuiet(n.URL+"/topics", &names) != nil || !slices.Contains(names, "single") {
				return false
			}
			raw := map[string]any{}
			if getJSONQuiet(n.URL+"/topics/single", &raw) != nil {
				return false
			}
			parts, _ := raw["partitions"].([]any)
			if len(parts) != 1 {
				return false
			}
			p := parts[0].(map[string]any)
			_, hasHW := p["high_watermark"]
			local := id == leader
			return p["leader"] == float64(leader) && p["local"] == local && hasHW == local
		})
	}
}

// topicPartition is a partition of GET /topics/{t}.
type topicPartition struct {
	Leader          int32   `json:"leader"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	UnderReplicated bool    `json:"under_replicated"`
	Local           bool    `json:"local"`
}

// partitionOf is partition 0 of topic as n's GET /topics/{t} describes it.
func partitionOf(n *harness.Node, topic string) (topicPartition, bool) {
	var info struct {
		Partitions []topicPartition `json:"partitions"`
	}
	if getJSONQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) == 0 {
		return topicPartition{}, false
	}
	return info.Partitions[0], true
}

type clusterSummary struct {
	BrokerCount int `json:"broker_count"`
	Brokers     []struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"brokers"`
	ControllerID    int32 `json:"controller_id"`
	Partitions      int   `json:"partitions"`
	UnderReplicated int   `json:"under_replicated_partitions"`
	Offline         int   `json:"offline_partitions"`
}

func clusterOf(t *testing.T, n *harness.Node) clusterSummary {
	t.Helper()
	var c clusterSummary
	getJSON(t, n.URL+"/cluster", &c)
	return c
}

// controllerOf is the broker id that reports ferry_controller_active 1,
// once exactly one does.
func controllerOf(t *testing.T, nodes []*harness.Node) int32 {
	t.Helper()
	var id int32
	harness.WaitFor(t, "exactly one broker reports ferry_controller_active 1", 30*time.Second, func() bool {
		id = 0
		for i, n := range nodes {
			if metricValue(scrape(n), "ferry_controller_active") == 1 {
				if id != 0 {
					return false
				}
				id = int32(i + 1)
			}
		}
		return id != 0
	})
	return id
}

func brokerIDOf(nodes []*harness.Node, n *harness.Node) int32 {
	return int32(slices.Index(nodes, n) + 1)
}

// metricValue is the value of an unlabelled series in a /metrics text, or
// -1 when it is not there.
func metricValue(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	if err := getJSONQuiet(url, v); err != nil {
		t.Fatal(err)
	}
}

func getJSONQuiet(url string, v any) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return json.NewDecoder(res.Body).Decode(v)
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
