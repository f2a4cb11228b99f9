package protobuf

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Canonical returns the schema in the normalized form that Confluent's
// registry uses with normalize=true (ProtobufSchemaUtils.toNormalizedString):
// comments and layout dropped; type names fully qualified with a leading
// dot; imports sorted; options sorted by name; fields, oneof members, enum
// values, reserved and extension ranges sorted by number; map fields
// written as map<K, V>; the proto2 syntax line left out. What it keeps is
// what Confluent holds significant: names of fields and enum values, and
// the order of messages, which message indexes in records depend on.
//
// Two differences from Confluent's text, neither of which makes two
// schemas equal that Confluent tells apart in practice: an explicit
// json_name equal to the default one is not written, and floating-point
// option values are written in Go's shortest form.
func (f *File) Canonical() string {
	c := canonicalizer{f: f}
	return c.file(fileProto(f.source))
}

// Written returns the schema in the same layout as Canonical but with the
// declaration order of imports, fields, oneofs and enum values kept: the
// identity Confluent gives a Protobuf schema registered or looked up
// without normalize=true (its canonicalString keeps the written order;
// only normalize() sorts). For text already in normalized order, Written
// and Canonical are equal, so registering a normalized schema again
// without normalize=true finds it.
//
// Written still qualifies type names and sorts options and reserved
// ranges, which Confluent's written form keeps as written: the descriptor
// does not remember the order of options, and reserved ranges and type
// spellings change no reader. Two texts differing only there share an id
// in ferry and not in Confluent.
func (f *File) Written() string {
	c := canonicalizer{f: f, keepOrder: true}
	return c.file(fileProto(f.source))
}

func fileProto(fd linker.File) *descriptorpb.FileDescriptorProto {
	if r, ok := fd.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(fd)
}

type canonicalizer struct {
	f *File
	// keepOrder keeps declaration order where Canonical sorts (Written).
	keepOrder bool
}

func (c *canonicalizer) file(fp *descriptorpb.FileDescriptorProto) string {
	var sb strings.Builder
	if c.f.fd.Syntax() == protoreflect.Proto3 {
		sb.WriteString("syntax = \"proto3\";\n")
	}
	if fp.Package != nil {
		sb.WriteString("package " + fp.GetPackage() + ";\n")
	}
	var imports, public []string
	isPublic := map[int32]bool{}
	for _, i := range fp.PublicDependency {
		isPublic[i] = true
	}
	for i, dep := range fp.Dependency {
		if isPublic[int32(i)] {
			public = append(public, dep)
		} else {
			imports = append(imports, dep)
		}
	}
	if len(imports)+len(public) > 0 {
		sb.WriteString("\n")
		for _, imp := range c.importOrder(imports) {
			sb.WriteString("import \"" + imp + "\";\n")
		}
		for _, imp := range c.importOrder(public) {
			sb.WriteString("import public \"" + imp + "\";\n")
		}
	}
	if opts := c.options(fp.Options); len(opts) > 0 {
		sb.WriteString("\n")
		for _, o := range opts {
			sb.WriteString("option " + o + ";\n")
		}
	}
	msgs := c.f.fd.Messages()
	if len(indexedMessages(msgs))+len(fp.EnumType) > 0 {
		sb.WriteString("\n")
		for _, md := range indexedMessages(msgs) {
			sb.WriteString(c.message(fp.MessageType[md.Index()], md))
		}
		for _, e := range fp.EnumType {
			sb.WriteString(c.enum(e))
		}
	}
	if len(fp.Extension) > 0 {
		sb.WriteString("\n")
		sb.WriteString(c.extends(fp.Extension, c.f.fd.Extensions()))
	}
	if len(fp.Service) > 0 {
		sb.WriteString("\n")
		for _, s := range fp.Service {
			sb.WriteString(c.service(s))
		}
	}
	return sb.String()
}

func (c *canonicalizer) importOrder(in []string) []string {
	if c.keepOrder {
		return in // protoc refuses a repeated import
	}
	return sortedDistinct(in)
}

func sortedDistinct(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}

// indent prefixes every line of block with two spaces.
func indent(block string) string {
	var sb strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		sb.WriteString("  " + line + "\n")
	}
	return sb.String()
}

func (c *canonicalizer) message(m *descriptorpb.DescriptorProto, md protoreflect.MessageDescriptor) string {
	var sb strings.Builder
	sb.WriteString("message " + m.GetName() + " {")
	if reserved := reservedRanges(m.ReservedRange, m.ReservedName, 536870912); len(reserved) > 0 {
		sb.WriteString("\n")
		for _, r := range reserved {
			sb.WriteString(indent("reserved " + r + ";"))
		}
	}
	if opts := c.options(m.Options); len(opts) > 0 {
		sb.WriteString("\n")
		for _, o := range opts {
			sb.WriteString(indent("option " + o + ";"))
		}
	}
	sb.WriteString(c.members(m, md))
	if len(m.ExtensionRange) > 0 {
		sb.WriteString("\n")
		var ranges []*descriptorpb.DescriptorProto_ReservedRange
		for _, r := range m.ExtensionRange {
			ranges = append(ranges, &descriptorpb.DescriptorProto_ReservedRange{Start: r.Start, End: r.End})
		}
		for _, r := range reservedRanges(ranges, nil, 536870912) {
			sb.WriteString(indent("extensions " + r + ";"))
		}
	}
	if len(m.Extension) > 0 {
		sb.WriteString("\n")
		sb.WriteString(indent(c.extends(m.Extension, md.Extensions())))
	}
	nested := indexedMessages(md.Messages())
	if len(nested)+len(m.EnumType) > 0 {
		sb.WriteString("\n")
		for _, nmd := range nested {
			sb.WriteString(indent(c.message(m.NestedType[nmd.Index()], nmd)))
		}
		for _, e := range m.EnumType {
			sb.WriteString(indent(c.enum(e)))
		}
	}
	sb.WriteString("}\n")
	return sb.String()
}

// members writes a message's fields by number, then its oneofs, then its
// groups, each section after a blank line, as Confluent's formatter does.
func (c *canonicalizer) members(m *descriptorpb.DescriptorProto, md protoreflect.MessageDescriptor) string {
	var plain, groups []*descriptorpb.FieldDescriptorProto
	oneofFields := make([][]*descriptorpb.FieldDescriptorProto, len(m.OneofDecl))
	for _, fp := range m.Field {
		fd := md.Fields().ByNumber(protoreflect.FieldNumber(fp.GetNumber()))
		switch {
		case fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic():
			oneofFields[fp.GetOneofIndex()] = append(oneofFields[fp.GetOneofIndex()], fp)
		case fp.GetType() == descriptorpb.FieldDescriptorProto_TYPE_GROUP:
			groups = append(groups, fp)
		default:
			plain = append(plain, fp)
		}
	}
	var sb strings.Builder
	if len(plain) > 0 {
		sb.WriteString("\n")
		for _, fp := range c.byNumber(plain) {
			sb.WriteString(indent(c.field(fp, md)))
		}
	}
	if oneofs := c.oneofs(m, md, oneofFields); oneofs != "" {
		sb.WriteString("\n" + oneofs)
	}
	if len(groups) > 0 {
		sb.WriteString("\n")
		for _, fp := range c.byNumber(groups) {
			sb.WriteString(indent(c.group(fp, md)))
		}
	}
	return sb.String()
}

func (c *canonicalizer) byNumber(fields []*descriptorpb.FieldDescriptorProto) []*descriptorpb.FieldDescriptorProto {
	out := append([]*descriptorpb.FieldDescriptorProto(nil), fields...)
	if c.keepOrder {
		return out
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetNumber() < out[j].GetNumber() })
	return out
}

// oneofs writes the non-empty oneofs, members by number and oneofs by their
// first member's number.
func (c *canonicalizer) oneofs(m *descriptorpb.DescriptorProto, md protoreflect.MessageDescriptor, members [][]*descriptorpb.FieldDescriptorProto) string {
	type oneof struct {
		first int32
		text  string
	}
	var list []oneof
	for i, fields := range members {
		if len(fields) == 0 {
			continue
		}
		fields = c.byNumber(fields)
		var sb strings.Builder
		sb.WriteString("oneof " + m.OneofDecl[i].GetName() + " {")
		if opts := c.options(m.OneofDecl[i].Options); len(opts) > 0 {
			sb.WriteString("\n")
			for _, o := range opts {
				sb.WriteString(indent("option " + o + ";"))
			}
		}
		sb.WriteString("\n")
		for _, fp := range fields {
			if fp.GetType() == descriptorpb.FieldDescriptorProto_TYPE_GROUP {
				sb.WriteString(indent(c.group(fp, md)))
			} else {
				sb.WriteString(indent(c.field(fp, md)))
			}
		}
		sb.WriteString("}\n")
		list = append(list, oneof{fields[0].GetNumber(), sb.String()})
	}
	if !c.keepOrder {
		sort.SliceStable(list, func(i, j int) bool { return list[i].first < list[j].first })
	}
	var out strings.Builder
	for _, o := range list {
		out.WriteString(indent(o.text))
	}
	return out.String()
}

func (c *canonicalizer) group(fp *descriptorpb.FieldDescriptorProto, md protoreflect.MessageDescriptor) string {
	return c.groupOf(fp, md.Fields().ByNumber(protoreflect.FieldNumber(fp.GetNumber())))
}

func (c *canonicalizer) groupOf(fp *descriptorpb.FieldDescriptorProto, fd protoreflect.FieldDescriptor) string {
	var sb strings.Builder
	if label := fieldLabel(fd); label != "" {
		sb.WriteString(label + " ")
	}
	body := fd.Message()
	sb.WriteString("group " + string(body.Name()) + " = " + strconv.Itoa(int(fp.GetNumber())) + " {")
	bp := protodesc.ToDescriptorProto(body)
	if len(bp.Field) > 0 {
		sb.WriteString("\n")
		for _, bf := range c.byNumber(bp.Field) {
			sb.WriteString(indent(c.field(bf, body)))
		}
	}
	sb.WriteString("}\n")
	return sb.String()
}

func (c *canonicalizer) field(fp *descriptorpb.FieldDescriptorProto, owner protoreflect.MessageDescriptor) string {
	fd := owner.Fields().ByNumber(protoreflect.FieldNumber(fp.GetNumber()))
	if fd == nil || fd.Name() != protoreflect.Name(fp.GetName()) {
		fd = owner.Extensions().ByName(protoreflect.Name(fp.GetName()))
	}
	var sb strings.Builder
	if label := fieldLabel(fd); label != "" {
		sb.WriteString(label + " ")
	}
	sb.WriteString(typeName(fd) + " " + fp.GetName() + " = " + strconv.Itoa(int(fp.GetNumber())))
	opts := c.options(fp.Options)
	if fp.DefaultValue != nil {
		opts = append(opts, "default = "+defaultLiteral(fd, fp.GetDefaultValue()))
	}
	if fp.JsonName != nil && fp.GetJsonName() != jsonCamelCase(fp.GetName()) {
		opts = append(opts, "json_name = "+quote(fp.GetJsonName()))
	}
	sort.SliceStable(opts, func(i, j int) bool { return optionName(opts[i]) < optionName(opts[j]) })
	if len(opts) > 0 {
		sb.WriteString(" " + optionList(opts))
	}
	sb.WriteString(";\n")
	return sb.String()
}

// optionName is the sort key Confluent uses: the option's name without
// the parentheses of a custom option.
func optionName(rendered string) string {
	name, _, _ := strings.Cut(rendered, " = ")
	return strings.Trim(name, "()")
}

func optionList(opts []string) string {
	if len(opts) == 1 {
		return "[" + opts[0] + "]"
	}
	var sb strings.Builder
	sb.WriteString("[\n")
	for i, o := range opts {
		if i < len(opts)-1 {
			o += ","
		}
		sb.WriteString(indent(o))
	}
	sb.WriteString("]")
	return sb.String()
}

// typeName writes a field's type as Confluent's normalized form does.
func typeName(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		return "map<" + typeName(fd.MapKey()) + ", " + typeName(fd.MapValue()) + ">"
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "." + string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "." + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

func defaultLiteral(fd protoreflect.FieldDescriptor, v string) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return quote(v)
	case protoreflect.BytesKind:
		return "\"" + v + "\"" // the descriptor keeps bytes C-escaped already
	}
	return v
}

// jsonCamelCase is protoc's default json_name for a field name.
func jsonCamelCase(s string) string {
	var b []byte
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			upper = true
			continue
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		b = append(b, c)
	}
	return string(b)
}

// reservedRanges writes one entry per range or name, ranges by start and
// names after them, as Confluent's normalization splits and sorts them.
// end is exclusive in the descriptor; max is the exclusive end meaning
// "to max".
func reservedRanges(ranges []*descriptorpb.DescriptorProto_ReservedRange, names []string, max int32) []string {
	sorted := append([]*descriptorpb.DescriptorProto_ReservedRange(nil), ranges...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].GetStart() < sorted[j].GetStart() })
	var out []string
	for _, r := range sorted {
		out = append(out, rangeText(r.GetStart(), r.GetEnd()-1, max-1))
	}
	for _, n := range sortedDistinct(names) {
		out = append(out, quote(n))
	}
	return out
}

func rangeText(start, end, max int32) string {
	switch {
	case start == end:
		return strconv.Itoa(int(start))
	case end == max:
		return strconv.Itoa(int(start)) + " to max"
	}
	return strconv.Itoa(int(start)) + " to " + strconv.Itoa(int(end))
}

func (c *canonicalizer) enum(e *descriptorpb.EnumDescriptorProto) string {
	var sb strings.Builder
	sb.WriteString("enum " + e.GetName() + " {")
	var ranges []*descriptorpb.DescriptorProto_ReservedRange
	for _, r := range e.ReservedRange {
		// enum ranges are inclusive; make them exclusive like message ones
		ranges = append(ranges, &descriptorpb.DescriptorProto_ReservedRange{Start: r.Start, End: proto.Int32(r.GetEnd() + 1)})
	}
	reserved := reservedRanges(ranges, e.ReservedName, math.MaxInt32)
	if len(reserved) > 0 {
		sb.WriteString("\n")
		for _, r := range reserved {
			sb.WriteString(indent("reserved " + r + ";"))
		}
	}
	opts := c.options(e.Options)
	if len(reserved) == 0 && (len(opts) > 0 || len(e.Value) > 0) {
		sb.WriteString("\n")
	}
	for _, o := range opts {
		sb.WriteString(indent("option " + o + ";"))
	}
	values := append([]*descriptorpb.EnumValueDescriptorProto(nil), e.Value...)
	if !c.keepOrder {
		sort.SliceStable(values, func(i, j int) bool {
			if values[i].GetNumber() != values[j].GetNumber() {
				return values[i].GetNumber() < values[j].GetNumber()
			}
			return values[i].GetName() < values[j].GetName()
		})
	}
	for _, v := range values {
		line := v.GetName() + " = " + strconv.Itoa(int(v.GetNumber()))
		if opts := c.options(v.Options); len(opts) > 0 {
			line += " " + optionList(opts)
		}
		sb.WriteString(indent(line + ";"))
	}
	sb.WriteString("}\n")
	return sb.String()
}

// extends groups extension fields by the message they extend.
func (c *canonicalizer) extends(fields []*descriptorpb.FieldDescriptorProto, exts protoreflect.ExtensionDescriptors) string {
	var order []string
	byExtendee := map[string][]*descriptorpb.FieldDescriptorProto{}
	for _, fp := range fields {
		if _, seen := byExtendee[fp.GetExtendee()]; !seen {
			order = append(order, fp.GetExtendee())
		}
		byExtendee[fp.GetExtendee()] = append(byExtendee[fp.GetExtendee()], fp)
	}
	var sb strings.Builder
	for _, extendee := range order {
		sb.WriteString("extend " + extendee + " {\n")
		for _, fp := range c.byNumber(byExtendee[extendee]) {
			fd := exts.ByName(protoreflect.Name(fp.GetName()))
			if fd.Kind() == protoreflect.GroupKind {
				sb.WriteString(indent(c.groupOf(fp, fd)))
				continue
			}
			line := ""
			if label := fieldLabel(fd); label != "" {
				line = label + " "
			}
			line += typeName(fd) + " " + fp.GetName() + " = " + strconv.Itoa(int(fp.GetNumber()))
			if opts := c.options(fp.Options); len(opts) > 0 {
				line += " " + optionList(opts)
			}
			sb.WriteString(indent(line + ";"))
		}
		sb.WriteString("}\n")
	}
	return sb.String()
}

func (c *canonicalizer) service(s *descriptorpb.ServiceDescriptorProto) string {
	var sb strings.Builder
	sb.WriteString("service " + s.GetName() + " {")
	if opts := c.options(s.Options); len(opts) > 0 {
		sb.WriteString("\n")
		for _, o := range opts {
			sb.WriteString(indent("option " + o + ";"))
		}
	}
	if len(s.Method) > 0 {
		sb.WriteString("\n")
		for _, m := range s.Method {
			line := "rpc " + m.GetName() + " ("
			if m.GetClientStreaming() {
				line += "stream "
			}
			line += m.GetInputType() + ") returns ("
			if m.GetServerStreaming() {
				line += "stream "
			}
			line += m.GetOutputType() + ")"
			if opts := c.options(m.Options); len(opts) > 0 {
				line += " {\n"
				for _, o := range opts {
					line += indent("option " + o + ";")
				}
				line += "}"
			}
			sb.WriteString(indent(line + ";"))
		}
	}
	sb.WriteString("}\n")
	return sb.String()
}

// options renders the options set in an options message, "name = value"
// each, sorted by name. Custom options come back from the descriptor as
// unknown fields; decoding them again with the schema's own resolver names
// them.
func (c *canonicalizer) options(opts proto.Message) []string {
	if opts == nil || !opts.ProtoReflect().IsValid() {
		return nil
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(opts)
	if err != nil || len(raw) == 0 {
		return nil
	}
	msg := dynamicpb.NewMessage(opts.ProtoReflect().Descriptor())
	if err := (proto.UnmarshalOptions{Resolver: c.f.resolver}).Unmarshal(raw, msg); err != nil {
		return nil
	}
	type option struct{ key, text string }
	var out []option
	msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		key := name
		if fd.IsExtension() {
			key = string(fd.FullName())
			name = "(" + key + ")"
		}
		if fd.IsList() {
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, option{key, name + " = " + optionValue(fd, v.List().Get(i))})
			}
		} else {
			out = append(out, option{key, name + " = " + optionValue(fd, v)})
		}
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].key < out[j].key })
	texts := make([]string, len(out))
	for i, o := range out {
		texts[i] = o.text
	}
	return texts
}

func optionValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return quote(v.String())
	case protoreflect.BytesKind:
		return quote(string(v.Bytes()))
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageLiteral(v.Message())
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// messageLiteral writes a message-valued option as Confluent's formatter
// writes option maps: "{", one "key: value" line per field sorted by key,
// a one-element list as its element, "}".
func messageLiteral(m protoreflect.Message) string {
	type entry struct{ key, value string }
	var entries []entry
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		key := string(fd.Name())
		if fd.IsExtension() {
			key = "[" + string(fd.FullName()) + "]"
		}
		var value string
		switch {
		case fd.IsList() && v.List().Len() == 1:
			value = optionValue(fd, v.List().Get(0))
		case fd.IsList():
			var sb strings.Builder
			sb.WriteString("[\n")
			for i := 0; i < v.List().Len(); i++ {
				item := optionValue(fd, v.List().Get(i))
				if i < v.List().Len()-1 {
					item += ","
				}
				sb.WriteString(indent(item))
			}
			sb.WriteString("]")
			value = sb.String()
		case fd.IsMap():
			value = mapLiteral(fd, v.Map())
		default:
			value = optionValue(fd, v)
		}
		entries = append(entries, entry{key, value})
		return true
	})
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	var sb strings.Builder
	sb.WriteString("{\n")
	for i, e := range entries {
		line := e.key + ": " + e.value
		if i < len(entries)-1 {
			line += ","
		}
		sb.WriteString(indent(line))
	}
	sb.WriteString("}")
	return sb.String()
}

func mapLiteral(fd protoreflect.FieldDescriptor, m protoreflect.Map) string {
	var items []string
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		items = append(items, "{\n"+indent("key: "+optionValue(fd.MapKey(), k.Value())+",")+indent("value: "+optionValue(fd.MapValue(), v))+"}")
		return true
	})
	sort.Strings(items)
	return "[\n" + indent(strings.Join(items, ",\n")) + "]"
}

// quote writes a string literal with Confluent's escapes.
func quote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\v':
			sb.WriteString(`\v`)
		case '\\':
			sb.WriteString(`\\`)
		case '\'':
			sb.WriteString(`\'`)
		case '"':
			sb.WriteString(`\"`)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
