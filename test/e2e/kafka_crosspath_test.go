package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// httpPartitionForKey posts a record with key to a topic of n partitions
// (created on first use) and returns the partition the gateway chose.
func httpPartitionForKey(t *testing.T, node *harness.Node, n int, key string) string {
	t.Helper()
	topic := fmt.Sprintf("gateway-keys-%d", n)
	res, body, err := post(node.URL+"/topics", "application/json", fmt.Sprintf(`{"name":%q,"partitions":%d}`, topic, n))
	if err != nil || (res.StatusCode != 201 && res.StatusCode != 409) {
		t.Fatalf("create %s: %v %s", topic, err, body)
	}
	var ans struct{ Offsets []offset }
	data := mustPost(t, node.URL+"/kafka/"+topic, "application/json", fmt.Sprintf(`{"records":[{"key":%q,"value":1}]}`, key), 200)
	if err := json.Unmarshal(data, &ans); err != nil || len(ans.Offsets) != 1 {
		t.Fatalf("produce answer %s: %v", data, err)
	}
	return strconv.Itoa(int(ans.Offsets[0].Partition))
}

// TestKafkaCrossPathHTTPToKafka: records POSTed to /kafka/t are read by
// franz-go with the same partitions, offsets, keys and values.
func TestKafkaCrossPathHTTPToKafka(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "xp", 4)
	body := `{"records":[`
	for i := 0; i < 40; i++ {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`{"key":"k%d","value":"v-%d"}`, i%7, i)
	}
	body += `]}`
	data := mustPost(t, node.URL+"/kafka/xp", "application/json", body, 200)
	var ans struct{ Offsets []offset }
	if err := json.Unmarshal(data, &ans); err != nil {
		t.Fatal(err)
	}
	type where struct {
		p int32
		o int64
	}
	want := map[where]string{}
	count := map[int32]int{}
	for i, o := range ans.Offsets {
		want[where{o.Partition, o.Offset}] = fmt.Sprintf(`"v-%d"`, i) // JSON strings are stored as JSON
		count[o.Partition]++
	}
	for p, n := range count {
		for _, r := range consumeFranz(t, node, "xp", p, n) {
			w, ok := want[where{p, r.Offset}]
			if !ok || string(r.Value) != w {
				t.Fatalf("partition %d offset %d: value %s, the gateway wrote %s there", p, r.Offset, r.Value, w)
			}
		}
	}
}

// TestKafkaCrossPathKafkaToHTTP: records produced by franz-go (default
// partitioner, keyed) are returned by GET /kafka/t/partitions/p/records at
// the offsets franz-go was given, and each key lands on the partition the
// gateway picks for it.
func TestKafkaCrossPathKafkaToHTTP(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "xq", 5)
	cl := franz(t, node)
	var recs []*kgo.Record
	for i := 0; i < 60; i++ {
		recs = append(recs, &kgo.Record{Topic: "xq", Key: fmt.Appendf(nil, "key-%d", i%11), Value: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	byPartition := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
		if hp := httpPartitionForKey(t, node, 5, string(r.Key)); hp != strconv.Itoa(int(r.Partition)) {
			t.Fatalf("key %s: franz-go chose partition %d, the gateway %s", r.Key, r.Partition, hp)
		}
	}
	for p, prs := range byPartition {
		res, err := http.Get(fmt.Sprintf("%s/kafka/xq/partitions/%d/records?offset=0&max_records=1000", node.URL, p))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Records []struct {
				Offset int64           `json:"offset"`
				Key    string          `json:"key"`
				Value  json.RawMessage `json:"value"`
			} `json:"records"`
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Records) != len(prs) {
			t.Fatalf("partition %d: %d records over HTTP, franz-go produced %d", p, len(got.Records), len(prs))
		}
		for i, r := range prs {
			g := got.Records[i]
			if g.Offset != r.Offset || g.Key != string(r.Key) || string(g.Value) != string(r.Value) {
				t.Fatalf("partition %d: HTTP has offset %d key %s value %s; franz-go produced offset %d key %s value %s",
					p, g.Offset, g.Key, g.Value, r.Offset, r.Key, r.Value)
			}
		}
	}
}
