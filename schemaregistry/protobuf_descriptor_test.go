package schemaregistry

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/ferry-mq/ferry/schemaregistry/protobuf"
)

// TestProtobufBase64Registration: a schema registered as a base64
// FileDescriptorProto (Confluent's Python serializer) is stored and served
// as .proto text, and it is the same schema as that text: registering or
// looking up the text finds its id and version instead of adding one.
func TestProtobufBase64Registration(t *testing.T) {
	store, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(store, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	const text = "syntax = \"proto3\";\npackage shop;\n\nmessage Order {\n  string id = 1;\n  int64 total = 2;\n}\n"
	f, err := protobuf.Parse(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(f.Descriptor()))
	if err != nil {
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(raw)

	id, err := r.Register(ctx, "orders-value", SchemaRequest{Schema: encoded, SchemaType: TypeProtobuf})
	if err != nil {
		t.Fatalf("register the base64 descriptor: %v", err)
	}
	st, err := r.SchemaByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.Text, encoded) || !strings.Contains(st.Text, "message Order {") || st.Type != TypeProtobuf {
		t.Fatalf("stored as %s %q, want the .proto text", st.Type, st.Text)
	}
	again, err := r.Register(ctx, "orders-value", SchemaRequest{Schema: text, SchemaType: TypeProtobuf})
	if err != nil || again != id {
		t.Fatalf("registering the text: id %d %v, want %d", again, err, id)
	}
	info, err := r.Lookup(ctx, "orders-value", SchemaRequest{Schema: encoded, SchemaType: TypeProtobuf}, false)
	if err != nil || info.ID != id || info.Version != 1 {
		t.Fatalf("looking up the descriptor: %+v %v, want id %d version 1", info, err, id)
	}
	if _, err := r.Register(ctx, "orders-value", SchemaRequest{Schema: base64.StdEncoding.EncodeToString([]byte("\x0a\xff")), SchemaType: TypeProtobuf}); err == nil ||
		!strings.Contains(err.Error(), "FileDescriptorProto") {
		t.Fatalf("registering a broken descriptor: %v, want an invalid schema error", err)
	}
}
