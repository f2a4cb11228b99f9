package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// Confluent's Python serializers (confluent_kafka.schema_registry, Debian's
// python3-confluent-kafka with python3-jsonschema, python3-protobuf and
// python3-requests) against one node: they auto-register their schemas in
// ferry's registry, produce through the Kafka listener, and what they wrote
// reads back through ferry's HTTP format= decoding and through their own
// deserializers. The Avro serializer needs fastavro, which Debian does not
// package, so Avro's Confluent round trip is franz-go's (kafka_franz_test).

// confluentSerdePython checks that systemPython imports the registry
// serializers and what they import; the test fails under CI without them.
func confluentSerdePython(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const imports = "import confluent_kafka.schema_registry.json_schema, confluent_kafka.schema_registry.protobuf, jsonschema, requests"
	out, err := exec.CommandContext(ctx, systemPython, "-c", imports).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s -c %q: %v %s", systemPython, imports, err, bytes.TrimSpace(out))
	}
	harness.RequireService(t, "python3-confluent-kafka with python3-jsonschema, python3-protobuf, python3-requests", err)
}

// serdeLine is one record as confluent_serde.py prints it.
type serdeLine struct {
	Type   string          `json:"type"`
	Offset int64           `json:"offset"`
	Value  json.RawMessage `json:"value"`
	Raw    string          `json:"raw"`
}

// runSerde runs confluent_serde.py; a failure of the script fails the test
// with what it printed.
func runSerde(t *testing.T, args ...string) map[string][]serdeLine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, append([]string{filepath.Join("testdata", "confluent_serde.py")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("confluent_serde.py %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	out := map[string][]serdeLine{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var l serdeLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("confluent_serde.py printed %q: %v", line, err)
		}
		out[l.Type] = append(out[l.Type], l)
	}
	return out
}

// sameJSON fails unless a and b hold the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %s: %v", what, a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %s: %v", what, b, err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("%s: %s, want %s", what, a, b)
	}
}

// TestConfluentPythonSerializers: JSONSerializer and ProtobufSerializer
// (with a referenced import) register through ferry's registry and produce
// to topics that validate values on the broker; ferry stores the schemas
// as Confluent does (the Protobuf one as .proto text, not the base64
// descriptor the serializer sent), frames every record with the id it
// gave, decodes them with format=jsonschema and format=protobuf, and the
// Python deserializers read back the values that were written. A plain
// string produced by the same client to the validating topic is refused.
func TestConfluentPythonSerializers(t *testing.T) {
	confluentSerdePython(t)
	node := kafkaNode(t)
	const count = 5
	for _, topic := range []string{"py-serde-json", "py-serde-proto"} {
		mustPost(t, node.URL+"/topics", "application/json",
			fmt.Sprintf(`{"name":%q,"partitions":1,"configs":{"confluent.value.schema.validation":"true"}}`, topic), 201)
	}
	produced := runSerde(t, "produce", "--bootstrap", node.KafkaAddr, "--registry", node.URL,
		"--json-topic", "py-serde-json", "--proto-topic", "py-serde-proto", "--count", fmt.Sprint(count))

	// The registry: what the serializers registered, under TopicNameStrategy
	// and (for the import) the reference's name.
	var ids = map[string]int{}
	for subject, want := range map[string]string{"py-serde-json-value": "JSON", "py-serde-proto-value": "PROTOBUF", "money.proto": "PROTOBUF"} {
		status, body := restCall(t, http.MethodGet, node.URL+"/subjects/"+subject+"/versions/latest", "", "", "")
		var v struct {
			ID         int    `json:"id"`
			Version    int    `json:"version"`
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
			References []struct{ Name, Subject string }
		}
		if status != 200 || json.Unmarshal(body, &v) != nil || v.SchemaType != want || v.Version != 1 {
			t.Fatalf("%s: %d %s, want version 1 of a %s schema", subject, status, body, want)
		}
		ids[subject] = v.ID
		switch subject {
		case "py-serde-proto-value":
			if !strings.Contains(v.Schema, "message Order {") || !strings.Contains(v.Schema, `import "money.proto";`) ||
				len(v.References) != 1 || v.References[0].Name != "money.proto" || v.References[0].Subject != "money.proto" {
				t.Fatalf("the Protobuf schema as stored: %s", body)
			}
		case "money.proto":
			if !strings.Contains(v.Schema, "message Money {") {
				t.Fatalf("the imported schema as stored: %s", body)
			}
		}
	}

	// The records: Confluent's framing with the registered ids; Protobuf's
	// first message carries the one-byte message index [0].
	for kind, subject := range map[string]string{"json": "py-serde-json-value", "protobuf": "py-serde-proto-value"} {
		if len(produced[kind]) != count {
			t.Fatalf("%s: %d records delivered, want %d: %+v", kind, len(produced[kind]), count, produced[kind])
		}
		for i, rec := range produced[kind] {
			raw, err := hex.DecodeString(rec.Raw)
			if err != nil || len(raw) < 6 || raw[0] != 0 || int(binary.BigEndian.Uint32(raw[1:5])) != ids[subject] || rec.Offset != int64(i) {
				t.Fatalf("%s record %d: offset %d bytes %s, want offset %d framed with magic 0 and id %d", kind, i, rec.Offset, rec.Raw, i, ids[subject])
			}
			if kind == "protobuf" && raw[5] != 0 {
				t.Fatalf("Protobuf record %d has message index byte %#x, want 0", i, raw[5])
			}
		}
	}

	// ferry decodes them through the registry.
	for kind, read := range map[string]string{"json": "py-serde-json?format=jsonschema", "protobuf": "py-serde-proto?format=protobuf"} {
		topic, format, _ := strings.Cut(read, "?")
		status, body := restCall(t, http.MethodGet, node.URL+"/kafka/"+topic+"/partitions/0/records?"+format, "", "", "")
		var ans struct {
			Records []struct {
				Offset        int64
				Value         json.RawMessage
				ValueEncoding string `json:"value_encoding"`
				ValueSchemaID int    `json:"value_schema_id"`
			}
		}
		if status != 200 || json.Unmarshal(body, &ans) != nil || len(ans.Records) != count {
			t.Fatalf("%s read with %s: %d %s", topic, format, status, body)
		}
		for i, r := range ans.Records {
			if r.ValueSchemaID != ids[topic+"-value"] || r.Offset != int64(i) {
				t.Fatalf("%s record %d read with %s: %s", topic, i, format, body)
			}
			sameJSON(t, fmt.Sprintf("%s record %d as ferry decodes it", topic, i), r.Value, produced[kind][i].Value)
		}
	}

	// Confluent's deserializers read back what their serializers wrote.
	consumed := runSerde(t, "consume", "--bootstrap", node.KafkaAddr,
		"--json-topic", "py-serde-json", "--proto-topic", "py-serde-proto", "--count", fmt.Sprint(count))
	for _, kind := range []string{"json", "protobuf"} {
		if len(consumed[kind]) != count {
			t.Fatalf("%s: %d records read, want %d", kind, len(consumed[kind]), count)
		}
		for i, rec := range consumed[kind] {
			if rec.Offset != int64(i) {
				t.Fatalf("%s record %d at offset %d", kind, i, rec.Offset)
			}
			sameJSON(t, fmt.Sprintf("%s record %d as the Python deserializer reads it", kind, i), rec.Value, produced[kind][i].Value)
		}
	}

	// A record without the framing is refused on the validating topic, and
	// nothing is written.
	confluentPython(t)
	run := runConfluent(t, map[string]string{"bootstrap.servers": node.KafkaAddr}, "produce", "--topic", "py-serde-json", "--count", "1", "--timeout", "20")
	if run.errName != "INVALID_RECORD" || len(run.records) != 0 {
		t.Fatalf("an unframed record on a validating topic: %q %s, delivered %+v\n%s", run.errName, run.errMsg, run.records, run.stderr)
	}
	status, body := restCall(t, http.MethodGet, node.URL+"/kafka/py-serde-json/partitions/0/records", "", "", "")
	if status != 200 || strings.Count(string(body), `"offset"`) != count {
		t.Fatalf("py-serde-json after the refused record: %d %s", status, body)
	}
}
