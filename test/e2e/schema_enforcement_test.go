package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const orderSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`

// wireValue encodes native as the schema registry wire format for id.
func wireValue(t *testing.T, codec *goavro.Codec, id int, native map[string]any) []byte {
	t.Helper()
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	out, err := codec.BinaryFromNative(out, native)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTopicSchemaEnforcement: with confluent.value.schema.validation=true a
// topic takes only values that carry a schema id of <topic>-value AND decode
// with it — over HTTP and over the Kafka protocol — and a rejected request
// writes nothing. A topic without the config takes anything.
func TestTopicSchemaEnforcement(t *testing.T) {
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json",
		`{"name":"enforced","partitions":1,"configs":{"confluent.value.schema.validation":"true"}}`, 201)
	reg := mustPost(t, node.URL+"/subjects/enforced-value/versions", "application/vnd.schemaregistry.v1+json",
		fmt.Sprintf(`{"schema":%q}`, orderSchema), 200)
	var registered struct{ ID int }
	json.Unmarshal(reg, &registered)
	other := mustPost(t, node.URL+"/subjects/elsewhere-value/versions", "application/vnd.schemaregistry.v1+json",
		`{"schema":"\"string\""}`, 200)
	var otherID struct{ ID int }
	json.Unmarshal(other, &otherID)

	// HTTP: Avro with the registered id passes; plain JSON is refused with the reason.
	mustPost(t, node.URL+"/kafka/enforced", "application/vnd.kafka.avro.v2+json",
		fmt.Sprintf(`{"value_schema_id":%d,"records":[{"value":{"id":1,"item":"book"}}]}`, registered.ID), 200)
	res, body, err := post(node.URL+"/kafka/enforced", "application/json", `{"records":[{"value":{"id":2}}]}`)
	if err != nil || res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("JSON to an enforced topic: %v %d %s", err, res.StatusCode, body)
	}

	codec, err := goavro.NewCodec(orderSchema)
	if err != nil {
		t.Fatal(err)
	}
	cl := franz(t, node)
	produce := func(value []byte) error {
		return cl.ProduceSync(context.Background(), &kgo.Record{Topic: "enforced", Value: value}).FirstErr()
	}
	if err := produce(wireValue(t, codec, registered.ID, map[string]any{"id": int64(3), "item": "pen"})); err != nil {
		t.Fatalf("a valid wire-format value was refused: %v", err)
	}
	otherSubject := []byte{0, 0, 0, 0, 0, 6, 'a', 'b', 'c'} // "abc" under the other subject's string schema
	binary.BigEndian.PutUint32(otherSubject[1:5], uint32(otherID.ID))
	valid := wireValue(t, codec, registered.ID, map[string]any{"id": int64(5), "item": "x"})
	for name, value := range map[string][]byte{
		"no magic byte":           []byte(`{"id":4}`),
		"id of another subject":   otherSubject,
		"payload does not decode": append(valid[:6:6], 0xff),
		"trailing bytes":          append(valid[:len(valid):len(valid)], 0),
	} {
		if err := produce(value); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("%s: got %v, want INVALID_RECORD", name, err)
		}
	}
	res, err = http.Get(node.URL + "/topics/enforced")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Partitions []struct {
			HighWatermark int64 `json:"high_watermark"`
		}
	}
	json.NewDecoder(res.Body).Decode(&info)
	res.Body.Close()
	if len(info.Partitions) != 1 || info.Partitions[0].HighWatermark != 2 {
		t.Fatalf("partitions %+v: only the 2 valid records may be written", info.Partitions)
	}
	// Without the config the same bytes are just bytes.
	mustPost(t, node.URL+"/kafka/free", "application/json", `{"id":2}`, 200)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "free", Value: []byte("raw")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
