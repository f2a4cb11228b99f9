package schemaregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/linkedin/goavro/v2"
)

// Kind is an Avro type's kind.
type Kind int

// The Avro kinds: eight primitives, then the complex types.
const (
	Null Kind = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"}

func (k Kind) String() string { return kindNames[k] }

func primitiveKind(name string) (Kind, bool) {
	for k := Null; k <= String; k++ {
		if kindNames[k] == name {
			return k, true
		}
	}
	return 0, false
}

// Type is one node of a parsed Avro schema. Named types (record, enum,
// fixed) are shared: every reference to a name points at the same *Type,
// so a recursive record is a cyclic graph.
type Type struct {
	Kind Kind
	// Name is the full name of a record, enum or fixed.
	Name string
	// Aliases are full names.
	Aliases []string
	Fields  []*Field // record
	Symbols []string // enum
	// EnumDefault is the symbol a reader uses for unknown symbols.
	EnumDefault *string
	Items       *Type   // array
	Values      *Type   // map
	Branches    []*Type // union
	Size        int     // fixed
	// Logical is the logicalType attribute; Precision and Scale belong to decimal.
	Logical   string
	Precision int
	Scale     int

	// Indexes the parser builds so that compatibility checks and diffs
	// take time linear in the schemas (nil on a hand-built Type).
	fieldByName  map[string]*Field // record
	fieldByAlias map[string]*Field // record: the first field with that alias
	symbolSet    map[string]bool   // enum
	unionIndex   *unionIndex       // union
}

// Field is one field of a record.
type Field struct {
	Name    string
	Aliases []string
	Type    *Type
	// Default is the JSON default value, nil when the field has none.
	Default json.RawMessage
	// Order is "ascending" (the default), "descending" or "ignore".
	Order string
}

func (t *Type) named() bool { return t.Kind == Record || t.Kind == Enum || t.Kind == Fixed }

// ParsedSchema is a validated Avro schema with the forms the registry needs.
type ParsedSchema struct {
	// Root is the schema's type graph, references resolved.
	Root *Type
	// Normalized is the identity form: full names, fixed key order, no doc
	// or custom properties, but logicalType, precision, scale, defaults,
	// aliases, order and enum defaults kept. Named types defined by a
	// reference appear by name only.
	Normalized string
	// Expanded is a standalone schema with referenced named types inlined
	// at first use; goavro accepts it.
	Expanded string
	codec    *goavro.Codec
}

// Codec is a goavro codec for the schema (references inlined).
func (p *ParsedSchema) Codec() *goavro.Codec { return p.codec }

// ErrInvalidAvro marks every parse and validation failure.
var ErrInvalidAvro = errors.New("invalid Avro schema")

// Limits of one schema. Confluent keeps every schema as one record of its
// _schemas topic, so a schema much over a megabyte does not register there
// either; see MaxSchemaBytes in registry.go for the text.
var (
	// maxSchemaElements bounds named types, fields, enum symbols and union
	// branches together: the parsed graph, its normalized and expanded
	// forms and goavro's codec each cost a few hundred bytes per element
	// in the registry's cache, and union branches are still matched pair
	// by pair. The largest real schemas have a few thousand fields.
	maxSchemaElements = 20_000
)

// maxDecimalPrecision bounds a decimal's precision (and so its scale):
// goavro computes 10^scale for every value it decodes.
const maxDecimalPrecision = 1000

// names is the table of named types visible while parsing one schema.
type names struct {
	types map[string]*Type
	// own holds the names the schema being parsed defines itself (not its references).
	own map[string]bool
	// elements counts what maxSchemaElements bounds.
	elements int
}

// count adds n elements, failing past maxSchemaElements.
func (tab *names) count(n int, path string) error {
	if tab.elements += n; tab.elements > maxSchemaElements {
		return fmt.Errorf("at %s: the schema has more than %d named types, fields, enum symbols and union branches", pathOrRoot(path), maxSchemaElements)
	}
	return nil
}

// ParseAvro parses and validates an Avro schema. refs are the named types
// that referenced schemas define, by full name (nil when there are none).
func ParseAvro(text string, refs map[string]*Type) (*ParsedSchema, error) {
	tab := &names{types: map[string]*Type{}, own: map[string]bool{}}
	for n, t := range refs {
		tab.types[n] = t
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalidAvro, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the schema", ErrInvalidAvro)
	}
	root, err := tab.parse(v, "", "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidAvro, err)
	}
	p := &ParsedSchema{Root: root}
	p.Normalized = writeSchema(root, func(t *Type) bool { return tab.own[t.Name] })
	p.Expanded = writeSchema(root, func(*Type) bool { return true })
	codec, err := goavro.NewCodec(goavroSchema(root))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidAvro, err)
	}
	p.codec = codec
	return p, nil
}

// NamedTypes lists the named types reachable from t, by full name; a
// schema that references this one sees them.
func NamedTypes(t *Type, into map[string]*Type) {
	if t == nil {
		return
	}
	if t.named() {
		if _, seen := into[t.Name]; seen {
			return
		}
		into[t.Name] = t
	}
	for _, f := range t.Fields {
		NamedTypes(f.Type, into)
	}
	NamedTypes(t.Items, into)
	NamedTypes(t.Values, into)
	for _, b := range t.Branches {
		NamedTypes(b, into)
	}
}

func (tab *names) parse(v any, namespace, path string) (*Type, error) {
	switch s := v.(type) {
	case string:
		return tab.lookup(s, namespace, path)
	case []any:
		return tab.parseUnion(s, namespace, path)
	case map[string]any:
		return tab.parseObject(s, namespace, path)
	}
	return nil, fmt.Errorf("at %s: a schema is a string, an array or an object, not %s", pathOrRoot(path), jsonKind(v))
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func (tab *names) lookup(name, namespace, path string) (*Type, error) {
	if k, ok := primitiveKind(name); ok {
		return &Type{Kind: k}, nil
	}
	if !strings.Contains(name, ".") && namespace != "" {
		if t, ok := tab.types[namespace+"."+name]; ok {
			return t, nil
		}
	}
	if t, ok := tab.types[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("at %s: unknown type %q", pathOrRoot(path), name)
}

func (tab *names) parseUnion(branches []any, namespace, path string) (*Type, error) {
	u := &Type{Kind: Union}
	if len(branches) == 0 {
		return nil, fmt.Errorf("at %s: a union needs at least one branch", pathOrRoot(path))
	}
	if err := tab.count(len(branches), path); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, b := range branches {
		bt, err := tab.parse(b, namespace, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		if bt.Kind == Union {
			return nil, fmt.Errorf("at %s/%d: a union may not directly contain a union", path, i)
		}
		key := bt.Kind.String()
		if bt.named() {
			key = bt.Name
		}
		if seen[key] {
			return nil, fmt.Errorf("at %s/%d: union has %s twice", path, i, key)
		}
		seen[key] = true
		u.Branches = append(u.Branches, bt)
	}
	indexUnion(u)
	return u, nil
}

func (tab *names) parseObject(m map[string]any, namespace, path string) (*Type, error) {
	typ, ok := m["type"]
	if !ok {
		return nil, fmt.Errorf("at %s: object has no \"type\"", pathOrRoot(path))
	}
	name, isString := typ.(string)
	if !isString {
		return tab.parse(typ, namespace, path) // {"type": {...}} or {"type": [...]}
	}
	var t *Type
	var err error
	switch name {
	case "record", "error":
		t, err = tab.parseRecord(m, namespace, path)
	case "enum":
		t, err = tab.parseEnum(m, namespace, path)
	case "fixed":
		t, err = tab.parseFixed(m, namespace, path)
	case "array":
		t = &Type{Kind: Array}
		items, ok := m["items"]
		if !ok {
			return nil, fmt.Errorf("at %s: array has no \"items\"", pathOrRoot(path))
		}
		t.Items, err = tab.parse(items, namespace, path+"/items")
	case "map":
		t = &Type{Kind: Map}
		values, ok := m["values"]
		if !ok {
			return nil, fmt.Errorf("at %s: map has no \"values\"", pathOrRoot(path))
		}
		t.Values, err = tab.parse(values, namespace, path+"/values")
	default:
		k, ok := primitiveKind(name)
		if !ok {
			// {"type": "com.acme.Named"}: a reference, no attributes of its own.
			return tab.lookup(name, namespace, path)
		}
		t = &Type{Kind: k}
	}
	if err != nil {
		return nil, err
	}
	if err := parseLogical(t, m, path); err != nil {
		return nil, err
	}
	return t, nil
}

// parseLogical reads logicalType and its attributes. Decimal is checked
// strictly (precision and scale change what the bytes mean); other logical
// types are kept as given.
func parseLogical(t *Type, m map[string]any, path string) error {
	lt, ok := m["logicalType"]
	if !ok {
		return nil
	}
	s, ok := lt.(string)
	if !ok {
		return fmt.Errorf("at %s: logicalType must be a string", pathOrRoot(path))
	}
	t.Logical = s
	if s != "decimal" {
		return nil
	}
	if t.Kind != Bytes && t.Kind != Fixed {
		return fmt.Errorf("at %s: decimal must be bytes or fixed, not %s", pathOrRoot(path), t.Kind)
	}
	p, err := intAttr(m, "precision", path, -1)
	if err != nil {
		return err
	}
	sc, err := intAttr(m, "scale", path, 0)
	if err != nil {
		return err
	}
	if p < 1 || p > maxDecimalPrecision {
		return fmt.Errorf("at %s: decimal precision must be an integer from 1 to %d", pathOrRoot(path), maxDecimalPrecision)
	}
	if sc < 0 || sc > p {
		return fmt.Errorf("at %s: decimal scale %d must be between 0 and the precision %d", pathOrRoot(path), sc, p)
	}
	if t.Kind == Fixed {
		maxDigits := int(math.Floor(math.Log10(math.Pow(2, float64(8*t.Size-1)) - 1)))
		if p > maxDigits {
			return fmt.Errorf("at %s: decimal precision %d does not fit in fixed of size %d (at most %d digits)", pathOrRoot(path), p, t.Size, maxDigits)
		}
	}
	t.Precision, t.Scale = p, sc
	return nil
}

func intAttr(m map[string]any, key, path string, def int) (int, error) {
	v, ok := m[key]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("at %s: %s must be an integer", pathOrRoot(path), key)
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		return 0, fmt.Errorf("at %s: %s must be an integer, not %s", pathOrRoot(path), key, n)
	}
	return i, nil
}

// fullName applies Avro's namespace rules and validates every part.
func fullName(m map[string]any, enclosing, path string) (string, string, error) {
	n, ok := m["name"].(string)
	if !ok {
		return "", "", fmt.Errorf("at %s: a named type needs a string \"name\"", pathOrRoot(path))
	}
	ns := enclosing
	if v, present := m["namespace"]; present {
		s, ok := v.(string)
		if !ok && v != nil {
			return "", "", fmt.Errorf("at %s: namespace must be a string", pathOrRoot(path))
		}
		ns = s
	}
	full := n
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		ns = n[:i]
	} else if ns != "" {
		full = ns + "." + n
	}
	if err := validFullName(full); err != nil {
		return "", "", fmt.Errorf("at %s: %v", pathOrRoot(path), err)
	}
	if _, prim := primitiveKind(n); prim {
		return "", "", fmt.Errorf("at %s: %q is a primitive type and cannot be redefined", pathOrRoot(path), n)
	}
	return full, ns, nil
}

func validFullName(full string) error {
	for _, part := range strings.Split(full, ".") {
		if !validName(part) {
			return fmt.Errorf("invalid name %q", full)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (tab *names) define(t *Type, path string) error {
	if err := tab.count(1, path); err != nil {
		return err
	}
	if _, dup := tab.types[t.Name]; dup {
		return fmt.Errorf("at %s: %s is defined twice", pathOrRoot(path), t.Name)
	}
	tab.types[t.Name] = t
	tab.own[t.Name] = true
	return nil
}

func aliases(m map[string]any, namespace, path string) ([]string, error) {
	v, ok := m["aliases"]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("at %s: aliases must be an array of strings", pathOrRoot(path))
	}
	var out []string
	for _, a := range list {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("at %s: aliases must be an array of strings", pathOrRoot(path))
		}
		if !strings.Contains(s, ".") && namespace != "" {
			s = namespace + "." + s
		}
		if err := validFullName(s); err != nil {
			return nil, fmt.Errorf("at %s: alias: %v", pathOrRoot(path), err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

func (tab *names) parseRecord(m map[string]any, enclosing, path string) (*Type, error) {
	full, ns, err := fullName(m, enclosing, path)
	if err != nil {
		return nil, err
	}
	t := &Type{Kind: Record, Name: full}
	if t.Aliases, err = aliases(m, ns, path); err != nil {
		return nil, err
	}
	if err := tab.define(t, path); err != nil {
		return nil, err
	}
	fields, ok := m["fields"].([]any)
	if !ok {
		return nil, fmt.Errorf("at %s: record %s needs a \"fields\" array", pathOrRoot(path), full)
	}
	if err := tab.count(len(fields), path); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, fv := range fields {
		fm, ok := fv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("at %s/fields/%d: a field is an object", path, i)
		}
		f, err := tab.parseField(fm, ns, fmt.Sprintf("%s/fields/%d", path, i))
		if err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("at %s/fields/%d: record %s has field %q twice", path, i, full, f.Name)
		}
		seen[f.Name] = true
		t.Fields = append(t.Fields, f)
	}
	indexFields(t)
	return t, nil
}

func indexFields(t *Type) {
	t.fieldByName = make(map[string]*Field, len(t.Fields))
	t.fieldByAlias = map[string]*Field{}
	for _, f := range t.Fields {
		t.fieldByName[f.Name] = f
		for _, a := range f.Aliases {
			if _, taken := t.fieldByAlias[a]; !taken {
				t.fieldByAlias[a] = f
			}
		}
	}
}

// hasSymbol reports whether enum t has symbol s.
func hasSymbol(t *Type, s string) bool {
	if t.symbolSet != nil {
		return t.symbolSet[s]
	}
	return contains(t.Symbols, s)
}

func (tab *names) parseField(m map[string]any, ns, path string) (*Field, error) {
	name, ok := m["name"].(string)
	if !ok || !validName(name) {
		return nil, fmt.Errorf("at %s: a field needs a valid \"name\"", path)
	}
	path = path[:strings.LastIndexByte(path, '/')+1] + name
	typ, ok := m["type"]
	if !ok {
		return nil, fmt.Errorf("at %s: field %q has no \"type\"", path, name)
	}
	ft, err := tab.parse(typ, ns, path)
	if err != nil {
		return nil, err
	}
	f := &Field{Name: name, Type: ft, Order: "ascending"}
	if as, ok := m["aliases"].([]any); ok {
		for _, a := range as {
			s, ok := a.(string)
			if !ok || !validName(s) {
				return nil, fmt.Errorf("at %s: field aliases must be valid names", path)
			}
			f.Aliases = append(f.Aliases, s)
		}
		sort.Strings(f.Aliases)
	}
	if o, ok := m["order"]; ok {
		s, _ := o.(string)
		if s != "ascending" && s != "descending" && s != "ignore" {
			return nil, fmt.Errorf("at %s: order must be ascending, descending or ignore", path)
		}
		f.Order = s
	}
	if d, ok := m["default"]; ok {
		if err := checkDefault(ft, d, path, map[*Type]bool{}); err != nil {
			return nil, err
		}
		f.Default = normalizeJSON(d)
	}
	return f, nil
}

func (tab *names) parseEnum(m map[string]any, enclosing, path string) (*Type, error) {
	full, ns, err := fullName(m, enclosing, path)
	if err != nil {
		return nil, err
	}
	t := &Type{Kind: Enum, Name: full}
	if t.Aliases, err = aliases(m, ns, path); err != nil {
		return nil, err
	}
	syms, ok := m["symbols"].([]any)
	if !ok {
		return nil, fmt.Errorf("at %s: enum %s needs a \"symbols\" array", pathOrRoot(path), full)
	}
	if err := tab.count(len(syms), path); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, sv := range syms {
		s, ok := sv.(string)
		if !ok || !validName(s) {
			return nil, fmt.Errorf("at %s: enum %s has an invalid symbol %v", pathOrRoot(path), full, sv)
		}
		if seen[s] {
			return nil, fmt.Errorf("at %s: enum %s has symbol %q twice", pathOrRoot(path), full, s)
		}
		seen[s] = true
		t.Symbols = append(t.Symbols, s)
	}
	t.symbolSet = seen
	if d, ok := m["default"]; ok {
		s, ok := d.(string)
		if !ok || !seen[s] {
			return nil, fmt.Errorf("at %s: enum %s default %v is not one of its symbols", pathOrRoot(path), full, d)
		}
		t.EnumDefault = &s
	}
	return t, tab.define(t, path)
}

func (tab *names) parseFixed(m map[string]any, enclosing, path string) (*Type, error) {
	full, ns, err := fullName(m, enclosing, path)
	if err != nil {
		return nil, err
	}
	t := &Type{Kind: Fixed, Name: full}
	if t.Aliases, err = aliases(m, ns, path); err != nil {
		return nil, err
	}
	if _, ok := m["size"]; !ok {
		return nil, fmt.Errorf("at %s: fixed %s needs a \"size\"", pathOrRoot(path), full)
	}
	if t.Size, err = intAttr(m, "size", path, 0); err != nil {
		return nil, err
	}
	if t.Size < 0 || t.Size > 1<<30 {
		return nil, fmt.Errorf("at %s: fixed %s has an invalid size %d", pathOrRoot(path), full, t.Size)
	}
	return t, tab.define(t, path)
}

// checkDefault reports whether d is a valid default for t (for a union,
// the first branch, as the Avro specification says).
func checkDefault(t *Type, d any, path string, inRecord map[*Type]bool) error {
	bad := func() error {
		return fmt.Errorf("at %s: default %s is not a valid %s", path, compactJSON(d), describe(t))
	}
	switch t.Kind {
	case Null:
		if d != nil {
			return bad()
		}
	case Boolean:
		if _, ok := d.(bool); !ok {
			return bad()
		}
	case Int, Long:
		n, ok := d.(json.Number)
		if !ok {
			return bad()
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || (t.Kind == Int && (i < math.MinInt32 || i > math.MaxInt32)) {
			return bad()
		}
	case Float, Double:
		if _, ok := d.(json.Number); !ok {
			return bad()
		}
	case String:
		if _, ok := d.(string); !ok {
			return bad()
		}
	case Bytes, Fixed:
		s, ok := d.(string)
		if !ok {
			return bad()
		}
		for _, r := range s {
			if r > 255 {
				return bad()
			}
		}
		if t.Kind == Fixed && utf8.RuneCountInString(s) != t.Size {
			return bad()
		}
	case Enum:
		s, ok := d.(string)
		if !ok || !hasSymbol(t, s) {
			return bad()
		}
	case Array:
		list, ok := d.([]any)
		if !ok {
			return bad()
		}
		for i, e := range list {
			if err := checkDefault(t.Items, e, fmt.Sprintf("%s[%d]", path, i), inRecord); err != nil {
				return err
			}
		}
	case Map:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		for k, e := range m {
			if err := checkDefault(t.Values, e, path+"["+k+"]", inRecord); err != nil {
				return err
			}
		}
	case Union:
		if len(t.Branches) == 0 {
			return bad()
		}
		return checkDefault(t.Branches[0], d, path, inRecord)
	case Record:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		for _, f := range t.Fields {
			v, present := m[f.Name]
			if !present {
				if f.Default == nil {
					return fmt.Errorf("at %s: default has no value for field %q, which has no default", path, f.Name)
				}
				continue
			}
			if err := checkDefault(f.Type, v, path+"."+f.Name, inRecord); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// describe names a type for messages: "int", "record com.acme.User", "union [null, string]".
func describe(t *Type) string {
	switch {
	case t.named():
		return t.Kind.String() + " " + t.Name
	case t.Kind == Array:
		return "array of " + describe(t.Items)
	case t.Kind == Map:
		return "map of " + describe(t.Values)
	case t.Kind == Union:
		parts := make([]string, len(t.Branches))
		for i, b := range t.Branches {
			parts[i] = describe(b)
		}
		return "union [" + strings.Join(parts, ", ") + "]"
	case t.Logical == "decimal":
		return fmt.Sprintf("%s decimal(%d,%d)", t.Kind, t.Precision, t.Scale)
	case t.Logical != "":
		return t.Kind.String() + " " + t.Logical
	}
	return t.Kind.String()
}

// normalizeJSON re-encodes a decoded JSON value with sorted keys and
// numbers in one spelling.
func normalizeJSON(v any) json.RawMessage {
	var b bytes.Buffer
	writeJSONValue(&b, v)
	return b.Bytes()
}

func writeJSONValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			b.WriteString(strconv.FormatInt(i, 10))
		} else if f, ok := new(big.Float).SetString(x.String()); ok {
			b.WriteString(f.Text('g', -1))
		} else {
			b.WriteString(x.String())
		}
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONValue(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSONValue(b, x[k])
		}
		b.WriteByte('}')
	default:
		enc, _ := json.Marshal(x)
		b.Write(enc)
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

// writeSchema writes t in the normalized form. define says whether a named
// type's definition is written at its first occurrence (otherwise, or
// afterwards, only its full name is).
func writeSchema(t *Type, define func(*Type) bool) string {
	var b bytes.Buffer
	w := schemaWriter{b: &b, define: define, done: map[string]bool{}}
	w.write(t)
	return b.String()
}

type schemaWriter struct {
	b      *bytes.Buffer
	define func(*Type) bool
	done   map[string]bool
	// keepDefault, when set, says whether a field's default is written.
	keepDefault func(*Field) bool
}

// goavroSchema is the expanded schema without the defaults goavro gets
// wrong. goavro reads a bytes or fixed default as the UTF-8 bytes of the
// JSON string, not as code points 0-255 as the Avro specification says,
// so it refuses a valid fixed default with a code point above 127 (and
// would encode a bytes one wrongly), and it refuses every default of a
// fixed decimal. The registry checks defaults itself (checkDefault);
// goavro uses them only to fill fields missing from a produced JSON value,
// which Avro's JSON decoder does not do either.
func goavroSchema(root *Type) string {
	var b bytes.Buffer
	reach := map[*Type]binaryReach{}
	w := schemaWriter{b: &b, define: func(*Type) bool { return true }, done: map[string]bool{},
		keepDefault: func(f *Field) bool {
			r := reachesBinary(f.Type, reach)
			return !r.fixedDecimal && !(r.binary && !isASCII(f.Default))
		}}
	w.write(root)
	return b.String()
}

// binaryReach says which binary types a type reaches.
type binaryReach struct {
	binary       bool // bytes or fixed
	fixedDecimal bool
}

// reachesBinary is memoized per type; inside a cycle it may miss what the
// cycle's other types reach, and goavro then refuses the schema as before.
func reachesBinary(t *Type, memo map[*Type]binaryReach) binaryReach {
	if r, seen := memo[t]; seen {
		return r
	}
	r := binaryReach{binary: t.Kind == Bytes || t.Kind == Fixed, fixedDecimal: t.Kind == Fixed && t.Logical == "decimal"}
	memo[t] = r
	children := append([]*Type{t.Items, t.Values}, t.Branches...)
	for _, f := range t.Fields {
		children = append(children, f.Type)
	}
	for _, c := range children {
		if c != nil {
			cr := reachesBinary(c, memo)
			r.binary, r.fixedDecimal = r.binary || cr.binary, r.fixedDecimal || cr.fixedDecimal
		}
	}
	memo[t] = r
	return r
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (w *schemaWriter) write(t *Type) {
	b := w.b
	if t.named() && (w.done[t.Name] || !w.define(t)) {
		writeString(b, t.Name)
		return
	}
	switch t.Kind {
	case Union:
		b.WriteByte('[')
		for i, br := range t.Branches {
			if i > 0 {
				b.WriteByte(',')
			}
			w.write(br)
		}
		b.WriteByte(']')
		return
	case Null, Boolean, Int, Long, Float, Double, Bytes, String:
		if t.Logical == "" {
			writeString(b, t.Kind.String())
			return
		}
	}
	b.WriteString(`{"type":`)
	writeString(b, t.Kind.String())
	if t.named() {
		w.done[t.Name] = true
		b.WriteString(`,"name":`)
		writeString(b, t.Name)
		w.writeList("aliases", t.Aliases)
	}
	switch t.Kind {
	case Record:
		w.writeFields(t.Fields)
	case Enum:
		w.writeList("symbols", t.Symbols)
		if t.Symbols == nil {
			b.WriteString(`,"symbols":[]`)
		}
		if t.EnumDefault != nil {
			b.WriteString(`,"default":`)
			writeString(b, *t.EnumDefault)
		}
	case Array:
		b.WriteString(`,"items":`)
		w.write(t.Items)
	case Map:
		b.WriteString(`,"values":`)
		w.write(t.Values)
	case Fixed:
		b.WriteString(`,"size":` + strconv.Itoa(t.Size))
	}
	if t.Logical != "" {
		b.WriteString(`,"logicalType":`)
		writeString(b, t.Logical)
		if t.Logical == "decimal" {
			fmt.Fprintf(b, `,"precision":%d,"scale":%d`, t.Precision, t.Scale)
		}
	}
	b.WriteByte('}')
}

func (w *schemaWriter) writeList(key string, list []string) {
	if len(list) == 0 {
		return
	}
	w.b.WriteString(`,"` + key + `":[`)
	for i, s := range list {
		if i > 0 {
			w.b.WriteByte(',')
		}
		writeString(w.b, s)
	}
	w.b.WriteByte(']')
}

func (w *schemaWriter) writeFields(fields []*Field) {
	b := w.b
	b.WriteString(`,"fields":[`)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		writeString(b, f.Name)
		w.writeList("aliases", f.Aliases)
		b.WriteString(`,"type":`)
		w.write(f.Type)
		if f.Default != nil && (w.keepDefault == nil || w.keepDefault(f)) {
			b.WriteString(`,"default":`)
			b.Write(f.Default)
		}
		if f.Order != "" && f.Order != "ascending" {
			b.WriteString(`,"order":`)
			writeString(b, f.Order)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
}
