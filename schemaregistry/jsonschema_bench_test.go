package schemaregistry

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJSONSchemaCompatibilityIsBounded: combinations nested inside
// combinations make the pairing of branches multiply; the step budget
// stops the check, which then reports the pair as too complex to vouch
// for rather than running on.
func TestJSONSchemaCompatibilityIsBounded(t *testing.T) {
	level := func(depth, width int, leaf string) string {
		s := leaf
		for d := 0; d < depth; d++ {
			branches := make([]string, width)
			for i := range branches {
				branches[i] = fmt.Sprintf(`{"title":"b%d","anyOf":[%s,{"type":"integer","minimum":%d}]}`, i, s, i)
			}
			s = `{"anyOf":[` + strings.Join(branches, ",") + `]}`
		}
		return s
	}
	o := parseJSONSchema(t, level(3, 12, `{"type":"string"}`))
	n := parseJSONSchema(t, level(3, 12, `{"type":"boolean"}`))
	start := time.Now()
	msgs := n.Incompatibilities(FullTransitive, o)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the check took %v", took)
	}
	if len(msgs) == 0 {
		t.Fatal("an incompatible pair was passed")
	}
	t.Logf("%d messages, first %s", len(msgs), msgs[0])
}

func jsonSchemaN(i int) string {
	return fmt.Sprintf(`{"type":"object","title":"Event%d","properties":{"id":{"type":"integer"},"name":{"type":"string","maxLength":64},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"]}`, i)
}

// BenchmarkJSONSchemaRegister registers new JSON schemas (one subject per
// 100) on the embedded store, no HTTP.
func BenchmarkJSONSchemaRegister(b *testing.B) { benchmarkRegister(b, benchJSONSchema) }

// BenchmarkJSONSchemaLookupByID is a deserializer's GET /schemas/ids/{id}
// against a warm cache, without HTTP.
func BenchmarkJSONSchemaLookupByID(b *testing.B) { benchmarkLookupByID(b, benchJSONSchema) }

// BenchmarkJSONSchemaValidatePayload is the broker's per-record check.
func BenchmarkJSONSchemaValidatePayload(b *testing.B) {
	s := parseJSONSchema(b, jsonSchemaN(0))
	payload := []byte(`{"id":12345,"name":"page_view","tags":["a","b","c"]}`)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ValidatePayload(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// TestJSONSchemaWideUnchangedCombination: 256 object branches kept as
// they were, plus one added, is compatible within the step budget.
func TestJSONSchemaWideUnchangedCombination(t *testing.T) {
	branches := make([]string, 255)
	for i := range branches {
		branches[i] = fmt.Sprintf(`{"type":"object","properties":{"kind":{"const":"k%d"},"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"array","items":{"type":"string"}}},"required":["kind"]}`, i)
	}
	o := parseJSONSchema(t, `{"oneOf":[`+strings.Join(branches[:254], ",")+`]}`)
	n := parseJSONSchema(t, `{"oneOf":[`+strings.Join(branches, ",")+`]}`)
	if msgs := n.Incompatibilities(Backward, o); len(msgs) != 0 {
		t.Fatalf("adding a oneOf branch: %q", msgs)
	}
	if msgs := n.Incompatibilities(Forward, o); len(msgs) == 0 || !strings.Contains(msgs[0], "SUM_TYPE_NARROWED") {
		t.Fatalf("forward: %q", msgs)
	}
}
