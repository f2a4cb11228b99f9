package schemaregistry

import (
	"errors"
	"fmt"
	"strings"
)

// The registry is multi-type: every rule that depends on what a schema
// says (parsing, identity, compatibility, what a payload framed with its
// id must look like) sits behind SchemaType and Schema; subjects,
// versions, ids, references, modes and deletes are the same for all.

// Schema type names, as Confluent spells them in "schemaType".
const (
	TypeAvro       = "AVRO"
	TypeJSONSchema = "JSON"
	TypeProtobuf   = "PROTOBUF"
)

// SchemaType parses one kind of schema.
type SchemaType interface {
	// Name is the "schemaType" value: AVRO, JSON, PROTOBUF.
	Name() string
	// Parse parses text, whose references are already parsed (each of
	// this same type; a type may ignore the ones it does not use). It
	// returns an error describing what is wrong for a 42201 answer.
	Parse(text string, refs []ParsedReference) (Schema, error)
}

// ParsedReference is a reference of a schema being parsed, resolved to
// the registered version it names.
type ParsedReference struct {
	Reference
	// Text is the referenced schema as registered.
	Text string
	// Schema is it parsed, with its own references resolved the same way.
	Schema Schema
}

// Schema is one parsed schema of some type.
type Schema interface {
	// Type is the SchemaType's Name.
	Type() string
	// Canonical is the normalized form: the identity (with the type and
	// the references) and what normalize=true registers.
	Canonical() string
	// Incompatibilities lists, in Confluent's verbose style, why this
	// schema breaks level against older (a schema of the same type): one
	// pair; the registry picks which olds a transitive level covers.
	Incompatibilities(level string, older Schema) []string
	// ValidatePayload checks a payload of Confluent's wire format after
	// the magic byte and schema id: it must decode with this schema, within
	// the type's bounds.
	ValidatePayload(payload []byte) error
	// RenderJSON renders a payload (after magic byte and id) as JSON, in at
	// most maxBytes; HTTP reads use it.
	RenderJSON(payload []byte, maxBytes int) ([]byte, error)
	// EncodeJSON turns the JSON form of a value into a payload (what
	// follows magic byte and id); HTTP produce uses it. The error names
	// what does not match.
	EncodeJSON(js []byte) ([]byte, error)
}

// schemaTypes are the types this registry serves, in the order
// GET /schemas/types lists them.
//
// PROTOBUF plugs in here: protobuf_type.go (build tag ferry_protobuf until
// package schemaregistry/protobuf is merged) adapts that package to
// SchemaType and Schema and appends protobufType{} in its init. Until then
// a PROTOBUF schema is refused with 42201 and /schemas/types does not
// list it.
var schemaTypes = []SchemaType{avroType{}, jsonSchemaType{}}

// SchemaTypes lists the names of the types served.
func SchemaTypes() []string {
	out := make([]string, len(schemaTypes))
	for i, t := range schemaTypes {
		out[i] = t.Name()
	}
	return out
}

// schemaTypeNamed finds a served type; "" is AVRO, as in Confluent.
func schemaTypeNamed(name string) (SchemaType, error) {
	name = strings.ToUpper(name)
	if name == "" {
		name = TypeAvro
	}
	for _, t := range schemaTypes {
		if t.Name() == name {
			return t, nil
		}
	}
	return nil, errorf(42201, "Invalid schema: schema type %s is not supported; this registry serves %s", name, strings.Join(SchemaTypes(), ", "))
}

// storedType is a stored schema's type; entries written before the
// registry was multi-type have none and are Avro.
func storedType(t string) string {
	if t == "" {
		return TypeAvro
	}
	return t
}

// checkLevel applies level to a pair of same-typed schemas through a
// type's one-direction check: readable(reader, writer, readerRole,
// writerRole) says why reader cannot read writer's data. BACKWARD: the
// new schema reads old data; FORWARD: the old schema reads new data.
func checkLevel(level string, readable func(reader, writer Schema, readerRole, writerRole string) []string, newer, older Schema) []string {
	var out []string
	if strings.HasPrefix(level, Backward) || strings.HasPrefix(level, Full) {
		out = append(out, readable(newer, older, "new", "old")...)
	}
	if strings.HasPrefix(level, Forward) || strings.HasPrefix(level, Full) {
		out = append(out, readable(older, newer, "old", "new")...)
	}
	return out
}

// avroType serves AVRO through ParseAvro and the Avro checks.
type avroType struct{}

func (avroType) Name() string { return TypeAvro }

func (avroType) Parse(text string, refs []ParsedReference) (Schema, error) {
	var named map[string]*Type
	for _, ref := range refs {
		a, ok := ref.Schema.(*avroSchema)
		if !ok {
			return nil, fmt.Errorf("reference %q is a %s schema; an Avro schema can reference only Avro schemas", ref.Name, ref.Schema.Type())
		}
		if named == nil {
			named = map[string]*Type{}
		}
		NamedTypes(a.Root, named)
	}
	p, err := ParseAvro(text, named)
	if err != nil {
		return nil, err
	}
	return &avroSchema{p}, nil
}

// avroSchema is a parsed Avro schema as a Schema.
type avroSchema struct{ *ParsedSchema }

func (*avroSchema) Type() string        { return TypeAvro }
func (a *avroSchema) Canonical() string { return a.Normalized }

func (a *avroSchema) Incompatibilities(level string, older Schema) []string {
	o, ok := older.(*avroSchema)
	if !ok {
		return []string{fmt.Sprintf("{errorType:'TYPE_CHANGED', description:'The schema type changed from %s to AVRO'}", older.Type())}
	}
	found := CheckLevel(level, a.Root, o.Root)
	if len(found) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(found)+1)
	for _, f := range found {
		msgs = append(msgs, f.String())
	}
	if breaking := breakingChanges(level, Diff(o.Root, a.Root)); breaking != "" {
		msgs = append(msgs, "{breakingChanges: '"+breaking+"'}")
	}
	return msgs
}

func (a *avroSchema) ValidatePayload(payload []byte) error {
	_, err := a.DecodeBinary(payload)
	return err
}

func (a *avroSchema) RenderJSON(payload []byte, maxBytes int) ([]byte, error) {
	return a.RenderBinary(payload, maxBytes)
}

func (a *avroSchema) EncodeJSON(js []byte) ([]byte, error) {
	if !JSONDepthWithin(js, MaxAvroJSONDepth) {
		return nil, fmt.Errorf("nests deeper than %d levels", MaxAvroJSONDepth)
	}
	codec := a.Codec()
	native, rest, err := codec.NativeFromTextual(js)
	if err != nil {
		// goavro's errors rarely name the field; ValidateJSON's do.
		if verr := ValidateJSON(a.Root, js); verr != nil {
			return nil, fmt.Errorf("at %v", verr)
		}
		return nil, err
	}
	if len(rest) > 0 {
		return nil, errors.New("trailing data after the Avro JSON value")
	}
	out, err := codec.BinaryFromNative(nil, native)
	if err != nil {
		return nil, err
	}
	// Refuse now what no reader could decode within the limits later.
	if err := a.CheckBinary(out); err != nil {
		return nil, fmt.Errorf("does not fit the decoding limits: %v", err)
	}
	return out, nil
}
