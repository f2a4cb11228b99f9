package schemaregistry_test

import (
	"context"
	"errors"
	"testing"

	sr "github.com/ferry-mq/ferry/schemaregistry"
)

// TestTwoNodesJSONSchema: two nodes on one PostgreSQL database. A JSON
// schema and one that references it, registered on one node, are read,
// validated against and checked for compatibility on the other, and the
// other refuses to delete the referenced version.
func TestTwoNodesJSONSchema(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	addr := sr.SchemaRequest{SchemaType: "JSON", Schema: `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`}
	if _, err := a.Register(ctx, "address", addr); err != nil {
		t.Fatal(err)
	}
	person := sr.SchemaRequest{SchemaType: "JSON", Schema: `{"type":"object","properties":{"home":{"$ref":"address.json"}},"additionalProperties":false}`,
		References: []sr.Reference{{Name: "address.json", Subject: "address", Version: 1}}}
	pid, err := a.Register(ctx, "person", person)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := b.ParsedSchemaByID(ctx, pid)
	if err != nil || parsed.Type() != "JSON" {
		t.Fatalf("b reads a's schema: %v %v", parsed, err)
	}
	if err := parsed.ValidatePayload([]byte(`{"home":{"city":"Oslo"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := parsed.ValidatePayload([]byte(`{"home":{}}`)); err == nil {
		t.Fatal("b accepted a payload the referenced schema refuses")
	}
	if _, err := b.DeleteVersion(ctx, "address", 1, false); !errors.Is(err, sr.ErrReferenceExists) {
		t.Fatalf("b deleting the referenced version: %v", err)
	}
	// Removing a property from a closed model breaks BACKWARD (the new
	// schema refuses old data that has it) but not FORWARD.
	closedWithout := person
	closedWithout.Schema = `{"type":"object","properties":{},"additionalProperties":false}`
	closedWithout.References = nil
	msgs, err := b.CheckCompatibilityAll(ctx, "person", closedWithout)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("BACKWARD check on b: %q %v", msgs, err)
	}
	if _, err := a.SetCompatibility(ctx, "person", sr.Forward); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Register(ctx, "person", closedWithout); err != nil {
		t.Fatalf("FORWARD registration on b after a changed the level: %v", err)
	}
	if info, err := b.Lookup(ctx, "person", person, false); err != nil || info.ID != pid || info.SchemaType != "JSON" {
		t.Fatalf("b's lookup: %+v %v", info, err)
	}
}
