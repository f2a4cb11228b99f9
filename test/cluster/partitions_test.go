package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// Partitions added to a replicated topic work as on Kafka: added with
// kadm through one broker (the request goes to the controller), then over
// HTTP on a broker that is not the controller, each new partition gets a
// leader and all three replicas in its ISR in the Metadata and GET
// /topics/{t} of every broker, takes acks=all writes, and gives every
// record back. Adding fewer partitions than the topic has, to an internal
// topic, or with too few live brokers for the replicas is refused with
// Kafka's error codes and a message.
func TestAddPartitionsOnACluster(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, _ := replicatedProducer(t, nodes, "grow")
	produceNumbered(t, cl, 0, 5)

	_, one := brokerClient(t, nodes[0])
	adm := kadm.NewClient(oneBrokerClient(t, nodes[0]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	added, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || added["grow"].Err != nil {
		t.Fatalf("add 2 partitions through broker 1: %v %+v", err, added)
	}
	waitReplicated(t, nodes, "grow", 3)
	produceToEach(t, nodes, "grow", 3)
	readAll(t, nodes, "grow", map[int32]int{0: 5 + 3, 1: 3, 2: 3})

	ctl := controllerOf(t, nodes)
	other := nodes[ctl%3] // the next broker: not the controller
	res, err := http.Post(other.URL+"/topics/grow/partitions", "application/json", strings.NewReader(`{"partitions":5}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /topics/grow/partitions on broker %d: %s", brokerIDOf(nodes, other), res.Status)
	}
	waitReplicated(t, nodes, "grow", 5)
	produceToEach(t, nodes, "grow", 5)
	readAll(t, nodes, "grow", map[int32]int{0: 5 + 3 + 3, 1: 3 + 3, 2: 3 + 3, 3: 3, 4: 3})

	fewer, err := adm.UpdatePartitions(ctx, 4, "grow")
	if err != nil || !errors.Is(fewer["grow"].Err, kerr.InvalidPartitions) || !strings.Contains(fewer["grow"].ErrMessage, "5") {
		t.Fatalf("4 partitions for a topic of 5: %v %+v, want INVALID_PARTITIONS naming 5", err, fewer)
	}
	internal := createPartitionsAt(t, one, "__consumer_offsets", 100)
	if internal.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("adding partitions to __consumer_offsets: error %d, want INVALID_TOPIC_EXCEPTION", internal.ErrorCode)
	}

	// With a broker gone, three replicas per partition cannot be placed.
	// The one stopped is neither broker 1, which is asked, nor the
	// controller, so no election slows the test.
	for i, n := range nodes[1:] {
		if int32(i+2) != ctl {
			n.Stop()
			break
		}
	}
	var refused kmsg.CreatePartitionsResponseTopic
	harness.WaitFor(t, "adding a partition is refused for want of brokers", 20*time.Second, func() bool {
		refused = createPartitionsAt(t, one, "grow", 6)
		return refused.ErrorCode == kerr.InvalidReplicationFactor.Code
	})
	if msg := deref(refused.ErrorMessage); !strings.Contains(msg, "3") || !strings.Contains(msg, "2") {
		t.Fatalf("INVALID_REPLICATION_FACTOR's message %q does not name 3 replicas and 2 brokers", msg)
	}
}

// oneBrokerClient is a client that knows only node as its seed.
func oneBrokerClient(t *testing.T, node *harness.Node) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createPartitionsAt sends CreatePartitions for topic, to count in all,
// to one broker itself (not routed to the controller).
func createPartitionsAt(t *testing.T, br *kgo.Broker, topic string, count int32) kmsg.CreatePartitionsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("CreatePartitions %s to %d: %v", topic, count, err)
	}
	return resp.Topics[0]
}

// waitReplicated waits until every broker, asked itself, describes want
// partitions of topic, each with a leader and the three replicas in its
// ISR, in Metadata and in GET /topics/{t}.
func waitReplicated(t *testing.T, nodes []*harness.Node, topic string, want int) {
	t.Helper()
	for _, n := range nodes {
		_, br := brokerClient(t, n)
		harness.WaitFor(t, fmt.Sprintf("broker %d describes %d replicated partitions of %s", brokerIDOf(nodes, n), want, topic),
			20*time.Second, func() bool { return metadataReplicated(br, topic, want) && httpReplicated(n, topic, want) })
	}
}

func metadataReplicated(br *kgo.Broker, topic string, want int) bool {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != want {
		return false
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Leader < 1 || len(p.ISR) != 3 || len(p.Replicas) != 3 {
			return false
		}
	}
	return true
}

func httpReplicated(n *harness.Node, topic string, want int) bool {
	var info struct {
		Partitions []topicPartition `json:"partitions"`
	}
	if getJSONQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) != want {
		return false
	}
	for _, p := range info.Partitions {
		if p.Leader < 1 || len(p.ISR) != 3 || !p.Local {
			return false
		}
	}
	return true
}

// produceToEach writes three records acks=all to each of topic's
// partitions, valued "<partition>-<i>", with an idempotent producer: each
// call is a new client, which may ask another broker for its producer id
// (ids are unique across the cluster, /latest_producer_id_block).
func produceToEach(t *testing.T, nodes []*harness.Node, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range 3 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("acks=all to every partition of %s: %v", topic, err)
	}
}

// readAll reads every partition of topic from its start until each has
// given want[p] records, and checks that the records produceToEach wrote
// are in the partition they were written to.
func readAll(t *testing.T, nodes []*harness.Node, topic string, want map[int32]int) {
	t.Helper()
	from := map[int32]kgo.Offset{}
	for p := range want {
		from[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32]int{}
	done := func() bool {
		for p, n := range want {
			if got[p] < n {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got[r.Partition]++
			if i := bytes.IndexByte(r.Value, '-'); i > 0 && string(r.Value[:i]) != fmt.Sprint(r.Partition) {
				t.Errorf("partition %d holds %q", r.Partition, r.Value)
			}
		})
	}
	for p, n := range want {
		if got[p] != n {
			t.Fatalf("partition %d of %s: read %d records, want %d (all: %v); the brokers describe it so:\n%s",
				p, topic, got[p], n, got, describeAll(nodes, topic))
		}
	}
}

// describeAll is every live broker's GET /topics/{t}, for a failure's
// message.
func describeAll(nodes []*harness.Node, topic string) string {
	var out strings.Builder
	for i, n := range nodes {
		var info json.RawMessage
		err := getJSONQuiet(n.URL+"/topics/"+topic, &info)
		fmt.Fprintf(&out, "broker %d: %s %v\n", i+1, info, err)
	}
	return out.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
