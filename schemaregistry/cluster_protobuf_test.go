package schemaregistry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/schemaregistry/protobuf"
)

// TestTwoNodesProtobuf: two nodes on one PostgreSQL database. A .proto and
// one importing it from another subject, registered on one node, are
// read, validated against and checked for compatibility on the other, the
// other refuses to delete the imported version, and both nodes agree on
// Protobuf identity in both modes.
func TestTwoNodesProtobuf(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	money := sr.SchemaRequest{SchemaType: "PROTOBUF", Schema: "syntax = \"proto3\";\npackage shop;\nmessage Money { string currency = 1; int64 units = 2; }\n"}
	if _, err := a.Register(ctx, "money", money); err != nil {
		t.Fatal(err)
	}
	order := sr.SchemaRequest{SchemaType: "PROTOBUF",
		Schema:     "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\nmessage Order { string id = 1; Money total = 2; }\n",
		References: []sr.Reference{{Name: "shop/money.proto", Subject: "money", Version: 1}}}
	oid, err := a.Register(ctx, "order", order)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := b.ParsedSchemaByID(ctx, oid)
	if err != nil || parsed.Type() != "PROTOBUF" {
		t.Fatalf("b reads a's schema: %v %v", parsed, err)
	}
	// Order{id: "o1", total: Money{currency: "EUR"}}, first message.
	msg := append(protobuf.EncodeIndexes([]int{0}), 0x0a, 0x02, 'o', '1', 0x12, 0x05, 0x0a, 0x03, 'E', 'U', 'R')
	if err := parsed.ValidatePayload(msg); err != nil {
		t.Fatal(err)
	}
	if err := parsed.ValidatePayload(append(protobuf.EncodeIndexes([]int{0}), 0x12, 0x05, 0x0a)); err == nil {
		t.Fatal("b accepted a truncated payload")
	}
	if _, err := b.DeleteVersion(ctx, "money", 1, false); !errors.Is(err, sr.ErrReferenceExists) {
		t.Fatalf("b deleting the imported version: %v", err)
	}
	// id changing from string to int64 breaks BACKWARD with Confluent's rule.
	changed := order
	changed.Schema = strings.Replace(order.Schema, "string id = 1", "int64 id = 1", 1)
	msgs, err := b.CheckCompatibilityAll(ctx, "order", changed)
	if err != nil || len(msgs) == 0 || !strings.Contains(strings.Join(msgs, " "), "FIELD_SCALAR_KIND_CHANGED") {
		t.Fatalf("BACKWARD check on b: %q %v", msgs, err)
	}
	// Field order: another schema without normalize on either node, the
	// same one with normalize=true.
	reordered := sr.SchemaRequest{SchemaType: "PROTOBUF", Schema: "syntax = \"proto3\";\npackage shop;\nmessage Money { int64 units = 2; string currency = 1; }\n"}
	if _, err := b.Lookup(ctx, "money", reordered, false); err == nil {
		t.Fatal("b found the reordered schema without normalize=true; Confluent keeps the written order")
	}
	reordered.Normalize = true
	if info, err := b.Lookup(ctx, "money", reordered, false); err != nil || info.Version != 1 {
		t.Fatalf("b's normalized lookup: %+v %v", info, err)
	}
	if info, err := a.Lookup(ctx, "order", order, false); err != nil || info.ID != oid || info.SchemaType != "PROTOBUF" {
		t.Fatalf("a's lookup: %+v %v", info, err)
	}
}
