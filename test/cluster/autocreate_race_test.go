package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// Three nodes asked to produce to a topic none of them has: each creates
// it on its own, one creation wins in ZooKeeper, and the others must take
// the winner's topic (its id, its assignment), not keep their own. Even
// rounds ask all three at once; odd rounds ask node 1 first and the other
// two as soon as its topic znode exists, before the controller has told
// them of it (the window where a late create found the znode and kept its
// own topic). Every produce is answered with offsets, every broker
// describes the topic with one id, and every record is stored once.
func TestConcurrentAutoCreateOnEveryNodeMakesOneTopic(t *testing.T) {
	nodes := startCluster(t, 3)
	zk := zkOf(t, nodes[0])
	const rounds = 8
	for round := range rounds {
		topic := fmt.Sprintf("raced-%d", round)
		first, rest := make(chan struct{}), make(chan struct{})
		answers := make([][]producedOffset, len(nodes))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 0 {
					<-first
				} else {
					<-rest
				}
				a, err := post(n.URL+"/kafka/"+topic, "application/json", fmt.Sprintf(`{"from":"node %d"}`, i+1))
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("%d %s", a.status, a.body)
				}
				var out struct{ Offsets []producedOffset }
				if err == nil {
					err = json.Unmarshal(a.body, &out)
				}
				answers[i], errs[i] = out.Offsets, err
			}()
		}
		close(first)
		if round%2 == 1 {
			harness.WaitFor(t, topic+"'s znode is written", 10*time.Second, func() bool {
				_, err := zk.Topic(topic)
				return err == nil
			})
		}
		close(rest)
		wg.Wait()
		positions := map[string]int{}
		for i := range nodes {
			if errs[i] != nil || len(answers[i]) != 1 || answers[i][0].ErrorCode != nil || answers[i][0].Offset < 0 {
				t.Fatalf("%s: node %d answered %+v, %v", topic, i+1, answers[i], errs[i])
			}
			o := answers[i][0]
			key := fmt.Sprintf("%d/%d", o.Partition, o.Offset)
			if prev, dup := positions[key]; dup {
				t.Fatalf("%s: nodes %d and %d were both answered partition/offset %s", topic, prev, i+1, key)
			}
			positions[key] = i + 1
		}

		ids := map[[16]byte][]int{}
		for i, n := range nodes {
			id := topicIDAt(t, n.KafkaAddr, topic)
			ids[id] = append(ids[id], i+1)
		}
		if len(ids) != 1 {
			t.Fatalf("%s: the brokers describe different topics: %v (topic id → brokers)", topic, ids)
		}
		perPartition := map[int32]int{}
		for key := range positions {
			var p int32
			fmt.Sscanf(key, "%d/", &p)
			perPartition[p]++
		}
		for _, reader := range nodes {
			for p, n := range perPartition {
				for _, r := range readHTTP(t, reader, topic, p, n) {
					node, ok := positions[fmt.Sprintf("%d/%d", p, r.Offset)]
					if !ok || string(r.Value) != fmt.Sprintf(`{"from":"node %d"}`, node) {
						t.Fatalf("%s: partition %d offset %d read on %s holds %s, answered to node %d (%v)", topic, p, r.Offset, reader.URL, r.Value, node, ok)
					}
				}
			}
		}
	}
}

// topicIDAt asks the broker at addr itself (not whichever broker a client
// picks) for topic's id.
func topicIDAt(t *testing.T, addr, topic string) [16]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	raw, err := cl.SeedBrokers()[0].Request(ctx, req)
	resp, _ := raw.(*kmsg.MetadataResponse)
	if err != nil || resp == nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("Metadata of %s from %s: %+v %v", topic, addr, resp, err)
	}
	return resp.Topics[0].TopicID
}
