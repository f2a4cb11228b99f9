package protobuf

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// descriptorOf is what Confluent's Python serializer registers for text:
// base64 of the compiled file's FileDescriptorProto.
func descriptorOf(t *testing.T, text string, deps map[string]string) string {
	t.Helper()
	f, err := Parse(text, deps)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(f.Descriptor()))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// TestParseBase64Descriptor: a schema sent as a base64 FileDescriptorProto
// has the identity (Written, Canonical) of the text it came from, message
// indexes in the same order, and imports resolved from the references.
func TestParseBase64Descriptor(t *testing.T) {
	dep := p3 + "package d;\nmessage D { int32 a = 1; }\n"
	text := p3 + "package shop;\nimport \"dep.proto\";\nimport \"google/protobuf/timestamp.proto\";\n" +
		"message Order {\n  string id = 2;\n  int64 total = 1;\n  d.D detail = 3;\n  google.protobuf.Timestamp at = 4;\n  map<string, int32> counts = 5;\n  oneof pay { string card = 6; string iban = 7; }\n  enum State { NEW = 0; PAID = 1; }\n  State state = 8;\n}\nmessage Line { string sku = 1; }\n"
	deps := map[string]string{"dep.proto": dep}
	fromText, err := Parse(text, deps)
	if err != nil {
		t.Fatal(err)
	}
	encoded := descriptorOf(t, text, deps)
	fromDesc, err := Parse(encoded, deps)
	if err != nil {
		t.Fatalf("Parse(base64 descriptor): %v", err)
	}
	if got, want := fromDesc.Written(), fromText.Written(); got != want {
		t.Fatalf("written form from the descriptor:\n%s\nwant, from the text:\n%s", got, want)
	}
	if got, want := fromDesc.Canonical(), fromText.Canonical(); got != want {
		t.Fatalf("canonical form from the descriptor:\n%s\nwant:\n%s", got, want)
	}
	if got, want := strings.Join(fromDesc.MessageNames(), ","), strings.Join(fromText.MessageNames(), ","); got != want {
		t.Fatalf("messages %s, want %s", got, want)
	}
	converted, ok := fromDesc.DescriptorText()
	if !ok || !strings.Contains(converted, "message Order") {
		t.Fatalf("DescriptorText() = %q, %v", converted, ok)
	}
	if _, ok := fromText.DescriptorText(); ok {
		t.Fatal("a schema given as text reports a descriptor text")
	}
}

func TestParseBase64DescriptorErrors(t *testing.T) {
	dep := p3 + "package d;\nmessage D { int32 a = 1; }\n"
	withImport := descriptorOf(t, p3+"import \"dep.proto\";\nmessage M { d.D x = 1; }\n", map[string]string{"dep.proto": dep})
	for name, tc := range map[string]struct{ text, want string }{
		"not a descriptor":   {base64.StdEncoding.EncodeToString([]byte("\xff\xff\xff\xff")), "not a FileDescriptorProto"},
		"missing reference":  {withImport, "each import needs a reference"},
		"dangling type name": {danglingDescriptor(t), "does not link"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.text, nil)
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an invalid schema error containing %q", err, tc.want)
			}
		})
	}
}

// danglingDescriptor names a message type that exists nowhere.
func danglingDescriptor(t *testing.T) string {
	t.Helper()
	f, err := Parse(p3+"message A {}\nmessage M { A a = 1; }\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	fp := protodesc.ToFileDescriptorProto(f.Descriptor())
	fp.MessageType = fp.MessageType[1:]
	raw, err := proto.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}
