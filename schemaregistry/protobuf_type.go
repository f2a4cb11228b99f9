// PROTOBUF: package schemaregistry/protobuf behind the SchemaType and
// Schema interfaces.

package schemaregistry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-mq/ferry/schemaregistry/protobuf"
)

func init() { schemaTypes = append(schemaTypes, protobufType{}) }

type protobufType struct{}

func (protobufType) Name() string { return TypeProtobuf }

// Parse hands the protobuf parser every document the schema imports,
// transitively: a reference's name is the import path, its text the file.
func (protobufType) Parse(text string, refs []ParsedReference) (Schema, error) {
	deps := map[string]string{}
	for _, ref := range refs {
		p, ok := ref.Schema.(*protobufSchema)
		if !ok {
			return nil, fmt.Errorf("reference %q is a %s schema", ref.Name, ref.Schema.Type())
		}
		for name, text := range p.deps {
			deps[name] = text
		}
		deps[ref.Name] = ref.Text
	}
	f, err := protobuf.Parse(text, deps)
	if err != nil {
		return nil, err
	}
	return &protobufSchema{file: f, deps: deps}, nil
}

type protobufSchema struct {
	file *protobuf.File
	deps map[string]string // import path → text, transitively
}

func (*protobufSchema) Type() string        { return TypeProtobuf }
func (s *protobufSchema) Canonical() string { return s.file.Canonical() }

// DescriptorText is the text a base64 descriptor stood for (describedText).
func (s *protobufSchema) DescriptorText() (string, bool) { return s.file.DescriptorText() }

// Written is the identity without normalize=true (writtenIdentity).
func (s *protobufSchema) Written() string { return s.file.Written() }

func (s *protobufSchema) Incompatibilities(level string, older Schema) []string {
	if _, ok := older.(*protobufSchema); !ok {
		return []string{fmt.Sprintf("{errorType:\"TYPE_CHANGED\", description:\"The schema type changed from %s to PROTOBUF\"}", older.Type())}
	}
	return checkLevel(level, readableProtobuf, s, older)
}

// readableProtobuf: protobuf.Check lists why reader cannot read writer's
// messages, each with the path and Confluent's rule name.
func readableProtobuf(reader, writer Schema, readerRole, writerRole string) []string {
	problems := protobuf.Check(reader.(*protobufSchema).file, writer.(*protobufSchema).file)
	out := make([]string, 0, len(problems))
	for _, p := range problems {
		out = append(out, fmt.Sprintf("{errorType:\"%s\", description:\"%s (path '%s'; %s schema read with the %s one)\"}",
			p.Rule, p.Message, p.Path, writerRole, readerRole))
	}
	return out
}

// Changes lists Confluent's differences from older to s (the admin
// page's semantic diff), each judged both ways: backward by the rule
// itself (older is the writer, s the reader), forward by whether the
// reverse comparison breaks at the same path. A change about a field
// names it: Old for a removal, New otherwise.
func (s *protobufSchema) Changes(older Schema) []Change {
	o := older.(*protobufSchema)
	forwardBroken := map[string]bool{}
	for _, d := range protobuf.Diff(s.file, o.file) {
		if !d.Type.Compatible() {
			forwardBroken[d.Path] = true
		}
	}
	diffs := protobuf.Diff(o.file, s.file)
	out := make([]Change, 0, len(diffs))
	for _, d := range diffs {
		b, f := d.Type.Compatible(), !forwardBroken[d.Path]
		c := Change{Kind: string(d.Type), Path: d.Path, Backward: b, Forward: f,
			Levels: map[string]bool{None: true, Backward: b, BackwardTransitive: b, Forward: f, ForwardTransitive: f,
				Full: b && f, FullTransitive: b && f}}
		// The field's name belongs to the side that has it.
		if strings.HasSuffix(c.Kind, "_REMOVED") {
			c.Old = d.Field
		} else {
			c.New = d.Field
		}
		out = append(out, c)
	}
	return out
}

// A Protobuf payload is the message-index list, then the message.
func (s *protobufSchema) ValidatePayload(payload []byte) error {
	indexes, n, err := protobuf.DecodeIndexes(payload)
	if err != nil {
		return err
	}
	return s.file.Validate(indexes, payload[n:])
}

func (s *protobufSchema) RenderJSON(payload []byte, maxBytes int) ([]byte, error) {
	indexes, n, err := protobuf.DecodeIndexes(payload)
	if err != nil {
		return nil, err
	}
	return s.file.ToJSON(indexes, payload[n:], maxBytes)
}

// EncodeJSON encodes as the schema's first message, as Confluent's REST
// Proxy does.
func (s *protobufSchema) EncodeJSON(js []byte) ([]byte, error) {
	names := s.file.MessageNames()
	if len(names) == 0 {
		return nil, errors.New("the schema declares no message")
	}
	indexes, err := s.file.MessageIndexes(names[0])
	if err != nil {
		return nil, err
	}
	msg, err := s.file.FromJSON(names[0], js)
	if err != nil {
		return nil, err
	}
	return append(protobuf.EncodeIndexes(indexes), msg...), nil
}
