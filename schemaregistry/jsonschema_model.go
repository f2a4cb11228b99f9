package schemaregistry

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The model the JSON Schema compatibility rules run on. Confluent's
// provider loads a schema with the everit library and diffs everit's
// classes; to reach the same verdicts, a schema is read the way everit
// reads it: true and {} accept anything, false nothing; "type" (or, without
// it, the keywords of one type) makes a string, number (integer is a
// number that requires integers), boolean, null, object or array schema;
// a list of types is an anyOf of one schema per type; "enum", "const",
// allOf/anyOf/oneOf and "not" are schemas of their own, and a schema
// holding several of these parts is their allOf. "$ref" stands alone (its
// siblings other than annotations are ignored, as draft 7 says) and is
// followed lazily, so recursive schemas are fine.

type jsKind int

const (
	jsEmpty jsKind = iota
	jsFalse
	jsString
	jsNumber
	jsBoolean
	jsNull
	jsObject
	jsArray
	jsEnum
	jsConst
	jsCombined
	jsNot
	jsRef
)

type jsNode struct {
	kind jsKind
	// Annotations, as canonical JSON; nil when absent.
	id, title, description, def *string

	maxLength, minLength *float64
	pattern              *string

	maximum, minimum, exclusiveMaximum, exclusiveMinimum, multipleOf *float64
	integer                                                          bool

	properties        map[string]*jsNode
	required          map[string]bool
	additionalAllowed bool
	additional        *jsNode // the schema of additional properties, if one
	patterns          []jsPattern
	propertyDeps      map[string]map[string]bool
	schemaDeps        map[string]*jsNode
	maxProperties     *float64
	minProperties     *float64
	// unevaluatedProperties (2019-09 on): nil when absent.
	unevaluated *jsNode

	items                  *jsNode // every item
	tuple                  []*jsNode
	additionalItemsAllowed bool
	additionalItems        *jsNode
	maxItems, minItems     *float64
	unique                 bool
	unevaluatedItems       *jsNode
	maxContains            *float64
	minContains            *float64

	values []string // enum values, canonical JSON
	value  string   // const value, canonical JSON

	criterion string // allOf, anyOf, oneOf
	subs      []*jsNode
	not       *jsNode

	refLoc, refPtr string // the target of a $ref
	resolved       *jsNode

	// canonical tells duplicate branches of a combination apart: the
	// branch's normalized JSON (set on branches only).
	canonical string
}

type jsPattern struct {
	re     *regexp.Regexp
	schema *jsNode
}

// jsModel builds nodes from the documents of a schema and its references.
// All $refs are resolved when the model is built, so a built model is
// read-only and compared from any number of goroutines.
type jsModel struct {
	docs    map[string]any
	root    *jsNode
	byLoc   map[string]*jsNode
	pending []*jsNode // $ref nodes not yet resolved
	nodes   int
}

// maxJSModelNodes bounds the nodes a model builds: a $ref into the middle
// of a document builds that subtree again.
const maxJSModelNodes = 500000

func buildJSModel(base string, docs map[string]any) (*jsModel, error) {
	m := &jsModel{docs: docs, byLoc: map[string]*jsNode{}}
	root, err := m.at(base, "")
	if err != nil {
		return nil, err
	}
	m.root = root
	for len(m.pending) > 0 {
		n := m.pending[len(m.pending)-1]
		m.pending = m.pending[:len(m.pending)-1]
		if n.resolved, err = m.at(n.refLoc, n.refPtr); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// at builds (once) the node at a document's JSON pointer.
func (m *jsModel) at(loc, ptr string) (*jsNode, error) {
	key := loc + "#" + ptr
	if n, ok := m.byLoc[key]; ok {
		return n, nil
	}
	doc, ok := m.docs[loc]
	if !ok {
		return nil, fmt.Errorf("$ref to %s: not this schema nor one of its references", loc)
	}
	v, err := followPointer(doc, ptr)
	if err != nil {
		return nil, fmt.Errorf("$ref to %s#%s: %v", loc, ptr, err)
	}
	n := m.newNode()
	m.byLoc[key] = n // before building: a cycle finds it
	if err := m.fill(n, loc, v); err != nil {
		return nil, err
	}
	return n, nil
}

// followPointer resolves an RFC 6901 pointer ("" is the whole document).
func followPointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("fragment %q is not a JSON pointer", ptr)
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, fmt.Errorf("no %q", tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no item %q", tok)
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("no %q in a scalar", tok)
		}
	}
	return cur, nil
}

// child builds a subschema that is not addressed by a pointer of its own
// (its cycles, if any, go through a $ref, which is).
func (m *jsModel) child(loc string, v any) (*jsNode, error) {
	n := m.newNode()
	return n, m.fill(n, loc, v)
}

func (m *jsModel) newNode() *jsNode {
	if m.nodes++; m.nodes > maxJSModelNodes {
		// Checked by the callers of fill through the error below.
		return &jsNode{kind: jsEmpty}
	}
	return &jsNode{}
}

var typeKeywords = []struct {
	typ      string
	keywords []string
}{
	{"string", []string{"minLength", "maxLength", "pattern", "format"}},
	{"number", []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
	{"object", []string{"properties", "required", "additionalProperties", "patternProperties", "dependencies",
		"dependentRequired", "dependentSchemas", "minProperties", "maxProperties", "propertyNames"}},
	{"array", []string{"items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}},
}

func (m *jsModel) fill(n *jsNode, loc string, v any) error {
	if m.nodes > maxJSModelNodes {
		return fmt.Errorf("the schema expands to more than %d subschemas", maxJSModelNodes)
	}
	switch x := v.(type) {
	case bool:
		if !x {
			n.kind = jsFalse
		}
		return nil
	case map[string]any:
		return m.fillObject(n, loc, x)
	}
	return fmt.Errorf("a schema is an object or a boolean, not %s", jsonKind(v))
}

func (m *jsModel) fillObject(n *jsNode, loc string, obj map[string]any) error {
	n.id = annotation(obj, "$id")
	if n.id == nil {
		n.id = annotation(obj, "id")
	}
	n.title, n.description, n.def = annotation(obj, "title"), annotation(obj, "description"), annotation(obj, "default")
	if ref, ok := obj["$ref"].(string); ok {
		target, frag, err := resolveURL(loc, ref)
		if err != nil {
			return fmt.Errorf("$ref %q: %v", ref, err)
		}
		if _, ok := m.docs[target]; !ok {
			return fmt.Errorf("$ref %q: %s is not this schema nor one of its references", ref, target)
		}
		n.kind, n.refLoc, n.refPtr = jsRef, target, frag
		m.pending = append(m.pending, n)
		return nil
	}
	var parts []*jsNode
	typed, err := m.typedParts(loc, obj)
	if err != nil {
		return err
	}
	if typed != nil {
		parts = append(parts, typed)
	}
	if vals, ok := obj["enum"].([]any); ok {
		e := &jsNode{kind: jsEnum, canonical: string(normalizeJSON(map[string]any{"enum": vals}))}
		for _, v := range vals {
			e.values = append(e.values, string(normalizeJSON(v)))
		}
		sort.Strings(e.values)
		parts = append(parts, e)
	}
	if c, ok := obj["const"]; ok {
		parts = append(parts, &jsNode{kind: jsConst, value: string(normalizeJSON(c)), canonical: string(normalizeJSON(map[string]any{"const": c}))})
	}
	for _, crit := range []string{"allOf", "anyOf", "oneOf"} {
		list, ok := obj[crit].([]any)
		if !ok {
			continue
		}
		if len(list) > maxCombinedBranches {
			return fmt.Errorf("%s has %d schemas, more than %d", crit, len(list), maxCombinedBranches)
		}
		c := &jsNode{kind: jsCombined, criterion: crit, canonical: string(normalizeJSON(map[string]any{crit: list}))}
		for _, e := range list {
			s, err := m.child(loc, e)
			if err != nil {
				return err
			}
			s.canonical = string(normalizeJSON(e))
			c.subs = append(c.subs, s)
		}
		parts = append(parts, c)
	}
	if not, ok := obj["not"]; ok {
		s, err := m.child(loc, not)
		if err != nil {
			return err
		}
		parts = append(parts, &jsNode{kind: jsNot, not: s, canonical: string(normalizeJSON(map[string]any{"not": not}))})
	}
	switch len(parts) {
	case 0:
		n.kind = jsEmpty
	case 1:
		p := parts[0]
		p.id, p.title, p.description, p.def = n.id, n.title, n.description, n.def
		*n = *p
	default:
		n.kind, n.criterion, n.subs = jsCombined, "allOf", parts
	}
	return nil
}

func annotation(obj map[string]any, key string) *string {
	v, ok := obj[key]
	if !ok {
		return nil
	}
	s := string(normalizeJSON(v))
	return &s
}

// typedParts builds the typed schema(s): from "type", or from the
// keywords present when it is absent.
func (m *jsModel) typedParts(loc string, obj map[string]any) (*jsNode, error) {
	var types []string
	switch t := obj["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		if len(t) > maxCombinedBranches {
			return nil, fmt.Errorf("type lists %d types", len(t))
		}
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	case nil:
		for _, group := range typeKeywords {
			for _, k := range group.keywords {
				if _, ok := obj[k]; ok {
					types = append(types, group.typ)
					break
				}
			}
		}
		if len(types) > 1 { // keywords of several types each apply to their own
			return m.typedList(loc, obj, types, "allOf")
		}
	}
	switch len(types) {
	case 0:
		return nil, nil
	case 1:
		return m.typed(loc, obj, types[0])
	}
	return m.typedList(loc, obj, types, "anyOf")
}

func (m *jsModel) typedList(loc string, obj map[string]any, types []string, crit string) (*jsNode, error) {
	c := &jsNode{kind: jsCombined, criterion: crit}
	for _, t := range types {
		s, err := m.typed(loc, obj, t)
		if err != nil {
			return nil, err
		}
		c.subs = append(c.subs, s)
	}
	return c, nil
}

func (m *jsModel) typed(loc string, obj map[string]any, typ string) (*jsNode, error) {
	n := &jsNode{canonical: "type:" + typ}
	switch typ {
	case "string":
		n.kind = jsString
		n.maxLength, n.minLength = number(obj, "maxLength"), number(obj, "minLength")
		if p, ok := obj["pattern"].(string); ok {
			n.pattern = &p
		}
	case "number", "integer":
		n.kind, n.integer = jsNumber, typ == "integer"
		m.fillNumber(n, obj)
	case "boolean":
		n.kind = jsBoolean
	case "null":
		n.kind = jsNull
	case "object":
		n.kind = jsObject
		return n, m.fillObjectSchema(n, loc, obj)
	case "array":
		n.kind = jsArray
		return n, m.fillArray(n, loc, obj)
	default:
		return nil, fmt.Errorf("unknown type %q", typ)
	}
	return n, nil
}

func number(obj map[string]any, key string) *float64 {
	num, ok := obj[key].(json.Number)
	if !ok {
		return nil
	}
	f, err := num.Float64()
	if err != nil {
		return nil
	}
	return &f
}

func (m *jsModel) fillNumber(n *jsNode, obj map[string]any) {
	n.maximum, n.minimum, n.multipleOf = number(obj, "maximum"), number(obj, "minimum"), number(obj, "multipleOf")
	n.exclusiveMaximum, n.exclusiveMinimum = number(obj, "exclusiveMaximum"), number(obj, "exclusiveMinimum")
	// Draft 4: a boolean exclusiveMaximum makes maximum exclusive.
	if b, _ := obj["exclusiveMaximum"].(bool); b && n.maximum != nil {
		n.exclusiveMaximum, n.maximum = n.maximum, nil
	}
	if b, _ := obj["exclusiveMinimum"].(bool); b && n.minimum != nil {
		n.exclusiveMinimum, n.minimum = n.minimum, nil
	}
}

func (m *jsModel) fillObjectSchema(n *jsNode, loc string, obj map[string]any) error {
	n.properties, n.required, n.additionalAllowed = map[string]*jsNode{}, map[string]bool{}, true
	if props, ok := obj["properties"].(map[string]any); ok {
		for name, v := range props {
			s, err := m.child(loc, v)
			if err != nil {
				return err
			}
			n.properties[name] = s
		}
	}
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				n.required[s] = true
			}
		}
	}
	switch ap := obj["additionalProperties"].(type) {
	case bool:
		n.additionalAllowed = ap
	case map[string]any:
		s, err := m.child(loc, ap)
		if err != nil {
			return err
		}
		n.additional = s
	}
	if pp, ok := obj["patternProperties"].(map[string]any); ok {
		keys := sortedKeys(pp)
		for _, k := range keys {
			re, err := regexp.Compile(k)
			if err != nil {
				return fmt.Errorf("patternProperties %q: %v", k, err)
			}
			s, err := m.child(loc, pp[k])
			if err != nil {
				return err
			}
			n.patterns = append(n.patterns, jsPattern{re: re, schema: s})
		}
	}
	if err := m.fillDependencies(n, loc, obj); err != nil {
		return err
	}
	n.maxProperties, n.minProperties = number(obj, "maxProperties"), number(obj, "minProperties")
	var err error
	n.unevaluated, err = m.optionalChild(loc, obj, "unevaluatedProperties")
	return err
}

// optionalChild builds obj[key] when it is there.
func (m *jsModel) optionalChild(loc string, obj map[string]any, key string) (*jsNode, error) {
	v, ok := obj[key]
	if !ok {
		return nil, nil
	}
	return m.child(loc, v)
}

func (m *jsModel) fillDependencies(n *jsNode, loc string, obj map[string]any) error {
	n.propertyDeps, n.schemaDeps = map[string]map[string]bool{}, map[string]*jsNode{}
	for _, key := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		deps, ok := obj[key].(map[string]any)
		if !ok {
			continue
		}
		for prop, d := range deps {
			if list, ok := d.([]any); ok {
				set := map[string]bool{}
				for _, e := range list {
					if s, ok := e.(string); ok {
						set[s] = true
					}
				}
				n.propertyDeps[prop] = set
				continue
			}
			s, err := m.child(loc, d)
			if err != nil {
				return err
			}
			n.schemaDeps[prop] = s
		}
	}
	return nil
}

func (m *jsModel) fillArray(n *jsNode, loc string, obj map[string]any) error {
	n.additionalItemsAllowed = true
	tupleKey, restKey := "items", "additionalItems"
	if _, ok := obj["prefixItems"]; ok { // 2020-12: prefixItems and items
		tupleKey, restKey = "prefixItems", "items"
	}
	switch it := obj[tupleKey].(type) {
	case map[string]any, bool:
		s, err := m.child(loc, it)
		if err != nil {
			return err
		}
		n.items = s
	case []any:
		for _, e := range it {
			s, err := m.child(loc, e)
			if err != nil {
				return err
			}
			n.tuple = append(n.tuple, s)
		}
	}
	switch ai := obj[restKey].(type) {
	case bool:
		n.additionalItemsAllowed = ai
	case map[string]any:
		if tupleKey == "items" || n.tuple != nil {
			s, err := m.child(loc, ai)
			if err != nil {
				return err
			}
			n.additionalItems = s
		}
	}
	n.maxItems, n.minItems = number(obj, "maxItems"), number(obj, "minItems")
	n.unique, _ = obj["uniqueItems"].(bool)
	n.maxContains, n.minContains = number(obj, "maxContains"), number(obj, "minContains")
	var err error
	n.unevaluatedItems, err = m.optionalChild(loc, obj, "unevaluatedItems")
	return err
}

// deref follows $refs to the schema they name.
func deref(n *jsNode) *jsNode {
	for i := 0; n != nil && n.kind == jsRef && n.resolved != nil && i < 64; i++ {
		n = n.resolved
	}
	if n != nil && n.kind == jsRef { // a chain of refs that never ends
		return &jsNode{kind: jsEmpty}
	}
	return n
}
