package schemaregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// JSON Schema, Confluent's "JSON" schema type. A schema is parsed twice:
// by santhosh-tekuri/jsonschema (drafts 4, 6, 7, 2019-09 and 2020-12,
// draft 7 when "$schema" is absent, as Confluent's default) to validate
// payloads, and into ferry's model of it (jsonschema_model.go) on which
// the compatibility rules of Confluent's JSON Schema provider run
// (jsonschema_compat.go).
//
// References: a request's reference {"name": N, "subject": S, "version":
// V} makes the registered schema S/V the document that "$ref": "N" (with
// an optional "#/pointer") names; N is resolved as a URL against the
// referencing schema's location, so "customer.json" and a full URL both
// work. Nothing is ever loaded from the network or the disk: a "$ref" to
// a document that is not a reference fails to parse.
//
// Untrusted input: schemas are bounded before anything recursive runs
// (MaxSchemaBytes, MaxJSONSchemaDepth levels of nesting, maxJSONSchemaValues
// JSON values, maxCombinedBranches per allOf/anyOf/oneOf) and a
// compatibility check stops after maxJSONCompareSteps comparisons;
// payloads are bounded in nesting (MaxJSONPayloadDepth) before they are
// decoded and validated.

// MaxJSONSchemaDepth bounds the JSON nesting of a JSON schema.
const MaxJSONSchemaDepth = 64

// MaxJSONPayloadDepth bounds the JSON nesting of a JSON Schema payload.
const MaxJSONPayloadDepth = 128

const (
	// maxJSONSchemaValues bounds the JSON values (objects, arrays,
	// scalars) of one schema document.
	maxJSONSchemaValues = 200000
	// maxCombinedBranches bounds an allOf/anyOf/oneOf or a type list: the
	// compatibility check pairs branches of old and new.
	maxCombinedBranches = 256
)

// ErrInvalidJSONSchema marks every JSON Schema parse failure.
var ErrInvalidJSONSchema = errors.New("invalid JSON schema")

// jsonSchemaBase is where a schema without an absolute "$id" is located;
// its references resolve against it. The .invalid TLD never resolves.
const jsonSchemaBase = "https://schemas.ferry.invalid/schema.json"

type jsonSchemaType struct{}

func (jsonSchemaType) Name() string { return TypeJSONSchema }

// jsonSchema is a parsed JSON schema.
type jsonSchema struct {
	doc       any // the decoded document, numbers as json.Number
	canonical string
	refs      []ParsedReference
	validator *jsv.Schema
	model     *jsModel
}

func (jsonSchemaType) Parse(text string, refs []ParsedReference) (Schema, error) {
	doc, err := decodeBoundedJSON([]byte(text), MaxJSONSchemaDepth)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSONSchema, err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("%w: a schema is a JSON object or a boolean, not %s", ErrInvalidJSONSchema, jsonKind(doc))
	}
	if n := countJSONValues(doc, maxJSONSchemaValues+1); n > maxJSONSchemaValues {
		return nil, fmt.Errorf("%w: more than %d JSON values", ErrInvalidJSONSchema, maxJSONSchemaValues)
	}
	for _, ref := range refs {
		if _, ok := ref.Schema.(*jsonSchema); !ok {
			return nil, fmt.Errorf("%w: reference %q is a %s schema", ErrInvalidJSONSchema, ref.Name, ref.Schema.Type())
		}
	}
	s := &jsonSchema{doc: doc, canonical: string(normalizeJSON(doc)), refs: refs}
	base := schemaLocation(doc, jsonSchemaBase)
	docs := map[string]any{}
	collectJSONDocs(base, s, docs)
	if s.validator, err = compileJSONSchema(base, docs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSONSchema, err)
	}
	if s.model, err = buildJSModel(base, docs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSONSchema, err)
	}
	return s, nil
}

// decodeBoundedJSON decodes one JSON value, numbers kept exact, after
// checking its nesting so that the recursive decoder never sees deeper.
func decodeBoundedJSON(text []byte, maxDepth int) (any, error) {
	if !JSONDepthWithin(text, maxDepth) {
		return nil, fmt.Errorf("nests deeper than %d levels", maxDepth)
	}
	v, err := jsv.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return v, nil
}

// countJSONValues counts v's values, stopping past limit.
func countJSONValues(v any, limit int) int {
	n := 0
	var walk func(any)
	walk = func(v any) {
		if n++; n > limit {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return n
}

// schemaLocation is a document's URL: its "$id" when that is absolute,
// else base.
func schemaLocation(doc any, base string) string {
	if m, ok := doc.(map[string]any); ok {
		for _, key := range []string{"$id", "id"} {
			if id, ok := m[key].(string); ok {
				if u, err := url.Parse(id); err == nil && u.IsAbs() {
					u.Fragment = ""
					return u.String()
				}
			}
		}
	}
	return base
}

// resolveURL resolves ref against base, without fragment.
func resolveURL(base, ref string) (string, string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", "", err
	}
	u := b.ResolveReference(r)
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	return u.String(), frag, nil
}

// collectJSONDocs maps the URL of s and of every schema it references,
// transitively, to its document.
func collectJSONDocs(loc string, s *jsonSchema, into map[string]any) {
	if _, ok := into[loc]; ok {
		return
	}
	into[loc] = s.doc
	for _, ref := range s.refs {
		rs := ref.Schema.(*jsonSchema)
		u, _, err := resolveURL(loc, ref.Name)
		if err != nil {
			continue
		}
		collectJSONDocs(u, rs, into)
		if id := schemaLocation(rs.doc, ""); id != "" && id != u {
			collectJSONDocs(id, rs, into)
		}
	}
}

// refusingLoader keeps the validator from reading files or the network:
// a reference names only documents the registry handed it.
type refusingLoader struct{}

func (refusingLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a reference of this schema (give it in \"references\")", u)
}

func compileJSONSchema(base string, docs map[string]any) (s *jsv.Schema, err error) {
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft7)
	c.UseLoader(refusingLoader{})
	for u, doc := range docs {
		if err := c.AddResource(u, doc); err != nil {
			return nil, err
		}
	}
	defer func() {
		// The compiler is a third party walking hostile input; a panic in
		// it must fail the request, not the node.
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("schema does not compile: %v", p)
		}
	}()
	return c.Compile(base)
}

func (*jsonSchema) Type() string        { return TypeJSONSchema }
func (s *jsonSchema) Canonical() string { return s.canonical }

func (s *jsonSchema) Incompatibilities(level string, older Schema) []string {
	if _, ok := older.(*jsonSchema); !ok {
		return []string{fmt.Sprintf("{errorType:\"TYPE_CHANGED\", description:\"The schema type changed from %s to JSON\"}", older.Type())}
	}
	return checkLevel(level, readableJSON, s, older)
}

// readableJSON reports why reader cannot read what writer wrote: the
// differences from writer (Confluent's "original") to reader (its
// "update") that are not compatible changes.
func readableJSON(reader, writer Schema, readerRole, writerRole string) []string {
	r, w := reader.(*jsonSchema), writer.(*jsonSchema)
	var out []string
	for _, d := range compareJSONSchemas(w.model, r.model) {
		if !d.compatible() {
			out = append(out, d.message(readerRole, writerRole))
		}
	}
	return out
}

// Changes lists the differences from older to s, each judged both ways.
func (s *jsonSchema) Changes(older Schema) []Change {
	o := older.(*jsonSchema)
	backward := compareJSONSchemas(o.model, s.model)
	forwardBroken := map[string]bool{}
	for _, d := range compareJSONSchemas(s.model, o.model) {
		if !d.compatible() {
			forwardBroken[d.path] = true
		}
	}
	out := make([]Change, 0, len(backward))
	for _, d := range backward {
		b, f := d.compatible(), !forwardBroken[d.path]
		out = append(out, Change{Kind: string(d.kind), Path: d.path, Backward: b, Forward: f,
			Levels: map[string]bool{None: true, Backward: b, BackwardTransitive: b, Forward: f, ForwardTransitive: f,
				Full: b && f, FullTransitive: b && f}})
	}
	return out
}

// ValidatePayload checks that payload is one JSON value the schema accepts.
func (s *jsonSchema) ValidatePayload(payload []byte) error {
	_, err := s.decodeValid(payload)
	return err
}

func (s *jsonSchema) decodeValid(payload []byte) (any, error) {
	v, err := decodeBoundedJSON(payload, MaxJSONPayloadDepth)
	if err != nil {
		return nil, err
	}
	if err := s.validate(v); err != nil {
		return nil, err
	}
	return v, nil
}

func (s *jsonSchema) validate(v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("validation failed: %v", p)
		}
	}()
	if err := s.validator.Validate(v); err != nil {
		return errors.New(validationMessage(err))
	}
	return nil
}

var englishMessages = message.NewPrinter(language.English)

// validationMessage flattens the validator's tree of errors into one line
// naming each failing location.
func validationMessage(err error) string {
	var ve *jsv.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(*jsv.ValidationError)
	walk = func(e *jsv.ValidationError) {
		if len(parts) >= 10 {
			return
		}
		if len(e.Causes) == 0 {
			parts = append(parts, fmt.Sprintf("at '/%s': %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(englishMessages)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return "does not match the schema: " + strings.Join(parts, "; ")
}

// RenderJSON returns the payload as compact JSON; it need not match the
// schema (readers show what is there).
func (s *jsonSchema) RenderJSON(payload []byte, maxBytes int) ([]byte, error) {
	if len(payload) > maxBytes {
		return nil, fmt.Errorf("%d bytes of JSON, more than the %d left", len(payload), maxBytes)
	}
	if !JSONDepthWithin(payload, MaxJSONPayloadDepth) || !json.Valid(payload) {
		return nil, errors.New("not JSON within the nesting bound")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, payload); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// EncodeJSON validates js and returns it compacted: a JSON Schema payload
// is the JSON text itself.
func (s *jsonSchema) EncodeJSON(js []byte) ([]byte, error) {
	if _, err := s.decodeValid(js); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, js); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
