package e2e

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

const (
	intArraySchema = `{"type":"array","items":"int"}`
	nodeSchemaE2E  = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
)

// registerSchema registers schema under subject and returns its id.
func registerSchema(t *testing.T, node *harness.Node, subject, schema string) int {
	t.Helper()
	body := mustPost(t, node.URL+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json",
		fmt.Sprintf(`{"schema":%q}`, schema), 200)
	var reg struct{ ID int }
	if err := json.Unmarshal(body, &reg); err != nil || reg.ID == 0 {
		t.Fatalf("register %s: %s", subject, body)
	}
	return reg.ID
}

// wirePrefix is Confluent's wire-format header for schema id.
func wirePrefix(id int) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return b
}

type avroRead struct {
	Records []struct {
		Offset        int64           `json:"offset"`
		Value         json.RawMessage `json:"value"`
		ValueEncoding string          `json:"value_encoding"`
		ValueSchemaID int             `json:"value_schema_id"`
	} `json:"records"`
}

// readAvro reads partition 0 of topic with format=avro, with room for the
// 6 MB deep value (the default answer budget, max_bytes, is 1 MiB).
func readAvro(t *testing.T, node *harness.Node, topic string) avroRead {
	t.Helper()
	res, err := http.Get(node.URL + "/kafka/" + topic + "/partitions/0/records?format=avro&max_bytes=16777216")
	if err != nil {
		t.Fatalf("read %s with format=avro: %v (did the node die?)", topic, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("read %s with format=avro: %d %.300s", topic, res.StatusCode, body)
	}
	var ans avroRead
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	return ans
}

// TestAvroHugeBlockCount: the 10-byte value `00 <id> feffffff0f` (an int
// array declaring 2^31-1 items) used to run the node out of memory on
// enforced produce and on format=avro reads. Now produce refuses it (HTTP
// 422, Kafka INVALID_RECORD) and a read renders it as plain bytes, while
// the node stays up and earlier records read back intact.
func TestAvroHugeBlockCount(t *testing.T) {
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json",
		`{"name":"bounded","partitions":1,"configs":{"confluent.value.schema.validation":"true"}}`, 201)
	createTopic(t, node, "loose", 1)
	id := registerSchema(t, node, "bounded-value", intArraySchema)
	if other := registerSchema(t, node, "loose-value", intArraySchema); other != id {
		t.Fatalf("same schema, ids %d and %d", id, other)
	}
	attack := append(wirePrefix(id), 0xfe, 0xff, 0xff, 0xff, 0x0f)
	good := append(wirePrefix(id), 4, 2, 4, 0) // [1, 2]

	cl := franz(t, node)
	for _, topic := range []string{"bounded", "loose"} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: good}).FirstErr(); err != nil {
			t.Fatalf("good value to %s: %v", topic, err)
		}
	}
	binaryBody := fmt.Sprintf(`{"records":[{"value":%q}]}`, base64.StdEncoding.EncodeToString(attack))
	res, body, err := post(node.URL+"/kafka/bounded", "application/vnd.kafka.binary.v2+json", binaryBody)
	if err != nil || res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("HTTP produce of the attack to an enforced topic: %v %v %s", err, res, body)
	}
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.ErrorCode == 0 || e.Message == "" {
		t.Fatalf("422 without a JSON error body: %s", body)
	}
	err = cl.ProduceSync(context.Background(), &kgo.Record{Topic: "bounded", Value: attack}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("Kafka produce of the attack to an enforced topic: %v, want INVALID_RECORD", err)
	}
	checkHealthy(t, node)

	// Stored where nothing checks it, the value is read back as bytes.
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "loose", Value: attack}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	mustPost(t, node.URL+"/kafka/loose", "application/vnd.kafka.binary.v2+json", binaryBody, 200)
	for _, topic := range []string{"bounded", "loose"} {
		ans := readAvro(t, node, topic)
		if len(ans.Records) == 0 || ans.Records[0].ValueEncoding != "avro" || string(ans.Records[0].Value) != "[1,2]" {
			t.Fatalf("%s: the earlier record does not read back: %+v", topic, ans.Records)
		}
		for _, r := range ans.Records[1:] {
			if r.ValueEncoding != "base64" || r.ValueSchemaID != 0 {
				t.Fatalf("%s offset %d: %s %q, want the attack rendered as base64", topic, r.Offset, r.Value, r.ValueEncoding)
			}
		}
		if want := map[string]int{"bounded": 1, "loose": 3}[topic]; len(ans.Records) != want {
			t.Fatalf("%s: %d records, want %d", topic, len(ans.Records), want)
		}
	}
	checkHealthy(t, node)
}

// TestAvroDeepRecursion: a Node list nested millions deep, a few KB once
// zstd-compressed, produced over Kafka to a topic without enforcement,
// used to overflow the reader's stack on a format=avro read. Now the read
// renders it as the plain read does and the node stays up.
func TestAvroDeepRecursion(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "deep", 1)
	id := registerSchema(t, node, "deep-value", nodeSchemaE2E)
	shallow := append(wirePrefix(id), 2, 2, 4, 0) // {v:1, next:{v:2, next:null}}
	const depth = 3_000_000
	deep := wirePrefix(id)
	for i := 0; i < depth; i++ {
		deep = append(deep, 2, 2) // v=1, next: the Node branch
	}
	deep = append(deep, 2, 0)

	cl := franz(t, node, kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(16<<20), kgo.ProduceRequestTimeout(30*time.Second))
	for _, v := range [][]byte{shallow, deep} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "deep", Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce a %d-byte value: %v", len(v), err)
		}
	}
	ans := readAvro(t, node, "deep")
	if len(ans.Records) != 2 {
		t.Fatalf("%d records, want 2", len(ans.Records))
	}
	var shallowRead struct {
		V    int
		Next struct{ Node struct{ V int } }
	}
	r := ans.Records[0]
	if json.Unmarshal(r.Value, &shallowRead) != nil || r.ValueEncoding != "avro" || shallowRead.V != 1 || shallowRead.Next.Node.V != 2 {
		t.Fatalf("the shallow record reads %s (%s)", r.Value, r.ValueEncoding)
	}
	// Plain rendering: its bytes happen to be valid UTF-8, so a string.
	if r := ans.Records[1]; r.ValueEncoding != "string" || r.ValueSchemaID != 0 {
		t.Fatalf("the deep record is rendered %q (schema %d), want the plain string rendering", r.ValueEncoding, r.ValueSchemaID)
	}
	checkHealthy(t, node)
}
