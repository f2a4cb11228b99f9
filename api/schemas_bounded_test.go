package api

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

const nodeAvro = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`

// nodeJSON is a Node list of n elements in Avro JSON.
func nodeJSON(n int) string {
	return strings.Repeat(`{"v":1,"next":{"Node":`, n-1) + `{"v":1,"next":null}` + strings.Repeat("}}", n-1)
}

// TestAvroProduceBoundsNesting: Avro JSON nested past the decoding limits
// is refused (422) before goavro recurses through it; within them it is
// written and reads back as Avro.
func TestAvroProduceBoundsNesting(t *testing.T) {
	e := newSchemaEnv(t)
	e.do(t, "POST", "/kafka/deep", typeRestAvro, avroBody("", nodeAvro, 0, `{"value":`+nodeJSON(50)+`}`)).decode(t, new(avroAnswer))
	for _, n := range []int{101, 2000} {
		a := e.do(t, "POST", "/kafka/deep", typeRestAvro, avroBody("", nodeAvro, 0, `{"value":`+nodeJSON(n)+`}`))
		a.wantError(t, 422, codeInvalidRecord)
		if !strings.Contains(string(a.body), "deeper than") {
			t.Fatalf("%d levels: %s does not say why", n, a.body)
		}
	}
	ans := e.readAll(t, "deep", 0)
	if len(ans.Records) != 1 {
		t.Fatalf("%d records, want only the shallow one", len(ans.Records))
	}
}

// TestAvroReadRendersRefusedValuesPlain: a read with format=avro renders
// values the bounded decoder refuses as the plain read does, next to the
// records it decodes.
func TestAvroReadRendersRefusedValuesPlain(t *testing.T) {
	e := newSchemaEnv(t)
	id := e.register(t, "loose-value", `{"type":"array","items":"int"}`)
	wire := func(payload ...byte) string {
		b := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
		return base64.StdEncoding.EncodeToString(append(b, payload...))
	}
	body := fmt.Sprintf(`{"records":[{"value":%q},{"value":%q}]}`, wire(4, 2, 4, 0), wire(0xfe, 0xff, 0xff, 0xff, 0x0f))
	if a := e.do(t, "POST", "/kafka/loose", "application/vnd.kafka.binary.v2+json", body); a.status != 200 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	var ans avroReadAnswer
	e.do(t, "GET", "/kafka/loose/partitions/0/records?format=avro", "", "").decode(t, &ans)
	if len(ans.Records) != 2 {
		t.Fatalf("%d records", len(ans.Records))
	}
	if r := ans.Records[0]; r.ValueEncoding != encodingAvro || string(r.Value) != "[1,2]" || r.ValueSchemaID != id {
		t.Fatalf("record 0: %s %q %d", r.Value, r.ValueEncoding, r.ValueSchemaID)
	}
	if r := ans.Records[1]; r.ValueEncoding != encodingBase64 || r.ValueSchemaID != 0 {
		t.Fatalf("record 1: %s %q %d, want it as base64", r.Value, r.ValueEncoding, r.ValueSchemaID)
	}
}
