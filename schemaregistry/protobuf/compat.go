package protobuf

import (
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// DiffType names a difference between two schemas with the name Confluent's
// protobuf-provider gives it (Difference.Type), so verbose messages read
// the same as Confluent's.
type DiffType string

// The differences Confluent's SchemaDiff reports.
const (
	PackageChanged                DiffType = "PACKAGE_CHANGED"
	MessageAdded                  DiffType = "MESSAGE_ADDED"
	MessageRemoved                DiffType = "MESSAGE_REMOVED"
	MessageMoved                  DiffType = "MESSAGE_MOVED"
	EnumAdded                     DiffType = "ENUM_ADDED"
	EnumRemoved                   DiffType = "ENUM_REMOVED"
	EnumConstAdded                DiffType = "ENUM_CONST_ADDED"
	EnumConstChanged              DiffType = "ENUM_CONST_CHANGED"
	EnumConstRemoved              DiffType = "ENUM_CONST_REMOVED"
	FieldAdded                    DiffType = "FIELD_ADDED"
	FieldRemoved                  DiffType = "FIELD_REMOVED"
	FieldNameChanged              DiffType = "FIELD_NAME_CHANGED"
	FieldKindChanged              DiffType = "FIELD_KIND_CHANGED"
	FieldScalarKindChanged        DiffType = "FIELD_SCALAR_KIND_CHANGED"
	FieldNamedTypeChanged         DiffType = "FIELD_NAMED_TYPE_CHANGED"
	FieldNumericLabelChanged      DiffType = "FIELD_NUMERIC_LABEL_CHANGED"
	FieldStringOrBytesLabelChange DiffType = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
	RequiredFieldAdded            DiffType = "REQUIRED_FIELD_ADDED"
	RequiredFieldRemoved          DiffType = "REQUIRED_FIELD_REMOVED"
	OneofAdded                    DiffType = "ONEOF_ADDED"
	OneofRemoved                  DiffType = "ONEOF_REMOVED"
	OneofFieldAdded               DiffType = "ONEOF_FIELD_ADDED"
	OneofFieldRemoved             DiffType = "ONEOF_FIELD_REMOVED"
	OneofFieldMovedToTopLevel     DiffType = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
	MultipleFieldsMovedToOneof    DiffType = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
	FieldMovedToExistingOneof     DiffType = "FIELD_MOVED_TO_EXISTING_ONEOF"
)

// compatibleDiffs are the differences a reader tolerates (Confluent's
// SchemaDiff.COMPATIBLE_CHANGES); every other one fails a check.
var compatibleDiffs = map[DiffType]bool{
	MessageAdded:                  true,
	MessageMoved:                  true,
	EnumAdded:                     true,
	EnumRemoved:                   true,
	EnumConstAdded:                true,
	EnumConstChanged:              true,
	EnumConstRemoved:              true,
	FieldAdded:                    true,
	FieldRemoved:                  true,
	FieldNameChanged:              true,
	FieldStringOrBytesLabelChange: true,
	OneofAdded:                    true,
	OneofRemoved:                  true,
	OneofFieldAdded:               true,
	OneofFieldMovedToTopLevel:     true,
}

// Compatible reports whether a reader tolerates the difference.
func (t DiffType) Compatible() bool { return compatibleDiffs[t] }

// ruleMessages explain each incompatible difference in the words a verbose
// compatibility answer shows.
var ruleMessages = map[DiffType]string{
	PackageChanged:             "the package changed, so every message's full name changed",
	MessageRemoved:             "a message was removed or renamed",
	FieldKindChanged:           "the field changed between scalar, message and map",
	FieldScalarKindChanged:     "the field's type changed to one that is not wire-compatible (compatible groups: int32/int64/uint32/uint64/bool/enum; sint32/sint64; fixed32/sfixed32; fixed64/sfixed64; string/bytes)",
	FieldNamedTypeChanged:      "the field's message type changed to another message, or to an incompatible version of it",
	FieldNumericLabelChanged:   "a numeric field changed between optional, required and repeated",
	RequiredFieldAdded:         "a required field was added",
	RequiredFieldRemoved:       "a required field was removed",
	OneofFieldRemoved:          "a field was removed from a oneof that still exists",
	MultipleFieldsMovedToOneof: "several existing fields were moved into one oneof",
	FieldMovedToExistingOneof:  "fields that could be set together were put in one oneof",
}

// Difference is one difference between an original (writer) and an updated
// (reader) schema, at a Confluent path such as "#/Outer/Inner/3".
type Difference struct {
	Type DiffType
	Path string
	// Field is the name of the field the difference is about, when it is
	// about one (the updated schema's name when both have the field).
	Field string
}

func (d Difference) String() string { return string(d.Type) + " " + d.Path }

// Problem is an incompatibility found by Check.
type Problem struct {
	// Path names the element: "#/" then the message names, then the oneof
	// name and field number or the enum value number.
	Path string
	// Rule is Confluent's difference name, e.g. FIELD_SCALAR_KIND_CHANGED.
	Rule string
	// Message says what changed and why readers break.
	Message string
}

func (p Problem) String() string { return p.Rule + " at " + p.Path + ": " + p.Message }

// Check returns the problems a reader using schema reader has with data
// written with schema writer, by Confluent's rules. BACKWARD compatibility
// of a new schema is Check(new, old); FORWARD is Check(old, new); FULL is
// both. No problems means compatible.
func Check(reader, writer *File) []Problem {
	var problems []Problem
	for _, d := range Diff(writer, reader) {
		if d.Type.Compatible() {
			continue
		}
		msg := ruleMessages[d.Type]
		if d.Field != "" {
			msg = "field " + d.Field + ": " + msg
		}
		problems = append(problems, Problem{Path: d.Path, Rule: string(d.Type), Message: msg})
	}
	return problems
}

// Diff lists every difference from original to update, as Confluent's
// SchemaDiff.compare(original, update) does, compatible ones included.
func Diff(original, update *File) []Difference {
	d := &differ{orig: original, upd: update, entered: map[protoreflect.FullName]bool{}, compared: map[[2]protoreflect.FullName]*comparison{}}
	if original.fd.Package() != update.fd.Package() {
		d.add(PackageChanged)
	}
	d.types(original.fd.Messages(), original.fd.Enums(), update.fd.Messages(), update.fd.Enums())
	return d.diffs
}

type differ struct {
	orig, upd *File
	path      []string
	diffs     []Difference
	// fieldName is the field being compared, for messages.
	fieldName string
	// entered holds the original messages being compared, so that a
	// recursive type is compared once (Confluent's SchemaScope).
	entered map[protoreflect.FullName]bool
	// compared holds each pair of referenced types already compared:
	// Confluent compares a referenced type again at every field that uses
	// it, which is exponential in a chain of types that each use the next
	// several times; the verdict of a pair does not depend on where it is
	// used, so it is computed once and its differences reported once.
	compared map[[2]protoreflect.FullName]*comparison
}

type comparison struct{ incompatible bool }

func (d *differ) add(t DiffType) {
	d.diffs = append(d.diffs, Difference{Type: t, Path: "#/" + strings.Join(d.path, "/"), Field: d.fieldName})
}

func (d *differ) enter(p string) { d.path = append(d.path, p) }
func (d *differ) leave()         { d.path = d.path[:len(d.path)-1] }

func (d *differ) incompatible() bool {
	for _, diff := range d.diffs {
		if !diff.Type.Compatible() {
			return true
		}
	}
	return false
}

// types compares the messages and enums declared at one level, by name.
func (d *differ) types(om protoreflect.MessageDescriptors, oe protoreflect.EnumDescriptors, um protoreflect.MessageDescriptors, ue protoreflect.EnumDescriptors) {
	origMsgs, updMsgs := indexedMessages(om), indexedMessages(um)
	updIndex := map[protoreflect.Name]int{}
	for i, md := range updMsgs {
		updIndex[md.Name()] = i
	}
	origIndex := map[protoreflect.Name]int{}
	for i, md := range origMsgs {
		origIndex[md.Name()] = i
		d.enter(string(md.Name()))
		if j, ok := updIndex[md.Name()]; !ok {
			d.add(MessageRemoved)
		} else {
			d.message(md, updMsgs[j])
			if i != j {
				// The indexes in a record refer to the schema of its own id,
				// so moving a message is compatible.
				d.add(MessageMoved)
			}
		}
		d.leave()
	}
	for _, md := range updMsgs {
		if _, ok := origIndex[md.Name()]; !ok {
			d.enter(string(md.Name()))
			d.add(MessageAdded)
			d.leave()
		}
	}
	for i := 0; i < oe.Len(); i++ {
		e := oe.Get(i)
		d.enter(string(e.Name()))
		if u := ue.ByName(e.Name()); u == nil {
			d.add(EnumRemoved)
		} else {
			d.enum(e, u)
		}
		d.leave()
	}
	for i := 0; i < ue.Len(); i++ {
		if e := ue.Get(i); oe.ByName(e.Name()) == nil {
			d.enter(string(e.Name()))
			d.add(EnumAdded)
			d.leave()
		}
	}
}

func (d *differ) enum(orig, upd protoreflect.EnumDescriptor) {
	byNumber := func(e protoreflect.EnumDescriptor) map[protoreflect.EnumNumber]protoreflect.Name {
		m := map[protoreflect.EnumNumber]protoreflect.Name{}
		for i := 0; i < e.Values().Len(); i++ {
			v := e.Values().Get(i)
			m[v.Number()] = v.Name() // an alias: the last one wins, as in Confluent's map
		}
		return m
	}
	o, u := byNumber(orig), byNumber(upd)
	for _, n := range unionKeys(o, u) {
		d.enter(strconv.Itoa(int(n)))
		on, inOrig := o[n]
		un, inUpd := u[n]
		switch {
		case !inUpd:
			d.add(EnumConstRemoved)
		case !inOrig:
			d.add(EnumConstAdded)
		case on != un:
			d.add(EnumConstChanged)
		}
		d.leave()
	}
}

func unionKeys[K ~int32, V any](a, b map[K]V) []K {
	keys := make([]K, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// messageShape is what MessageSchemaDiff looks at in one message: its
// fields by number (groups are not fields in Confluent's parser) and the
// real oneofs (proto3 optional's synthetic oneofs are not in the text).
type messageShape struct {
	byNumber map[protoreflect.FieldNumber]protoreflect.FieldDescriptor
	oneofOf  map[protoreflect.FieldNumber]string
	oneofs   map[string]protoreflect.OneofDescriptor
}

func shapeOf(md protoreflect.MessageDescriptor) messageShape {
	s := messageShape{
		byNumber: map[protoreflect.FieldNumber]protoreflect.FieldDescriptor{},
		oneofOf:  map[protoreflect.FieldNumber]string{},
		oneofs:   map[string]protoreflect.OneofDescriptor{},
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.GroupKind {
			continue
		}
		s.byNumber[fd.Number()] = fd
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			s.oneofOf[fd.Number()] = string(od.Name())
		}
	}
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		if od := oneofs.Get(i); !od.IsSynthetic() {
			s.oneofs[string(od.Name())] = od
		}
	}
	return s
}

func (d *differ) message(orig, upd protoreflect.MessageDescriptor) {
	if !d.entered[orig.FullName()] {
		d.entered[orig.FullName()] = true
		d.messageFields(orig, upd)
		delete(d.entered, orig.FullName())
	}
	d.types(orig.Messages(), orig.Enums(), upd.Messages(), upd.Enums())
}

func (d *differ) messageFields(orig, upd protoreflect.MessageDescriptor) {
	o, u := shapeOf(orig), shapeOf(upd)
	d.oneofMerges(upd, o, u)
	for _, name := range sortedUnion(o.oneofs, u.oneofs) {
		d.enter(name)
		if _, ok := u.oneofs[name]; !ok {
			d.add(OneofRemoved)
		} else if _, ok := o.oneofs[name]; !ok {
			d.add(OneofAdded)
		}
		d.leave()
	}
	deleted := completelyDeletedOneofs(o, u)
	for _, num := range unionKeys(o.byNumber, u.byNumber) {
		d.fieldByNumber(num, o, u, deleted)
	}
}

// fieldByNumber compares the fields with one number across the whole
// message, wherever they sit (top level or any oneof), so that moving a
// field between oneofs cannot hide a change of its type.
func (d *differ) fieldByNumber(num protoreflect.FieldNumber, o, u messageShape, deleted map[string]bool) {
	of, inOrig := o.byNumber[num]
	uf, inUpd := u.byNumber[num]
	origOneof, updOneof := o.oneofOf[num], u.oneofOf[num]
	tag := strconv.Itoa(int(num))
	if inUpd {
		d.fieldName = string(uf.Name())
	} else {
		d.fieldName = string(of.Name())
	}
	defer func() { d.fieldName = "" }()
	switch {
	case !inUpd && origOneof != "":
		if !deleted[origOneof] {
			d.addAt(OneofFieldRemoved, origOneof, tag)
		}
	case !inUpd && of.Cardinality() == protoreflect.Required:
		d.addAt(RequiredFieldRemoved, tag)
	case !inUpd:
		d.addAt(FieldRemoved, tag)
	case !inOrig && updOneof != "":
		d.addAt(OneofFieldAdded, updOneof, tag)
	case !inOrig && uf.Cardinality() == protoreflect.Required:
		d.addAt(RequiredFieldAdded, tag)
	case !inOrig:
		d.addAt(FieldAdded, tag)
	default:
		if origOneof != "" && updOneof == "" {
			d.addAt(OneofFieldMovedToTopLevel, tag)
		}
		path := []string{tag}
		if updOneof != "" {
			path = []string{updOneof, tag}
		}
		d.path = append(d.path, path...)
		d.field(of, uf)
		d.path = d.path[:len(d.path)-len(path)]
	}
}

func (d *differ) addAt(t DiffType, path ...string) {
	d.path = append(d.path, path...)
	d.add(t)
	d.path = d.path[:len(d.path)-len(path)]
}

// oneofMerges reports an updated oneof whose existing members were not
// already mutually exclusive: they come from more than one original oneof
// or top-level field, so data that set both no longer reads.
func (d *differ) oneofMerges(upd protoreflect.MessageDescriptor, o, u messageShape) {
	oneofs := upd.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		groups := map[string]bool{}
		topLevelMovedIn := 0
		for j := 0; j < od.Fields().Len(); j++ {
			num := od.Fields().Get(j).Number()
			if name, ok := o.oneofOf[num]; ok {
				groups["oneof:"+name] = true
			} else if _, ok := o.byNumber[num]; ok {
				groups["field:"+strconv.Itoa(int(num))] = true
				topLevelMovedIn++
			}
		}
		if len(groups) > 1 {
			if topLevelMovedIn > 1 {
				d.addAt(MultipleFieldsMovedToOneof, string(od.Name()))
			} else {
				d.addAt(FieldMovedToExistingOneof, string(od.Name()))
			}
		}
	}
}

// completelyDeletedOneofs are original oneofs gone by name none of whose
// members survive anywhere: dropping a whole oneof is compatible.
func completelyDeletedOneofs(o, u messageShape) map[string]bool {
	deleted := map[string]bool{}
	for name, od := range o.oneofs {
		if _, ok := u.oneofs[name]; ok {
			continue
		}
		survives := false
		for j := 0; j < od.Fields().Len(); j++ {
			if _, ok := u.byNumber[od.Fields().Get(j).Number()]; ok {
				survives = true
			}
		}
		if !survives {
			deleted[name] = true
		}
	}
	return deleted
}

func sortedUnion[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// fieldLabel is the label as Confluent's parser sees it in the text: none
// for proto3 fields without a keyword, oneof members and maps.
func fieldLabel(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return ""
	case fd.Cardinality() == protoreflect.Repeated:
		return "repeated"
	case fd.Cardinality() == protoreflect.Required:
		return "required"
	case fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic():
		return ""
	case fd.Syntax() == protoreflect.Proto3 && !fd.HasOptionalKeyword():
		return ""
	}
	return "optional"
}

func (d *differ) field(orig, upd protoreflect.FieldDescriptor) {
	if orig.Name() != upd.Name() {
		d.add(FieldNameChanged)
	}
	d.labelsAndTypes(fieldLabel(orig), fieldLabel(upd), orig, upd)
}

type typeKind int

const (
	scalarType typeKind = iota
	mapType
	messageType
)

func kindOf(fd protoreflect.FieldDescriptor) typeKind {
	switch {
	case fd.IsMap():
		return mapType
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		return messageType
	}
	return scalarType // enums included: they are varints on the wire
}

// scalarGroup groups the scalar types whose encodings read each other.
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind,
		protoreflect.Uint64Kind, protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "string-or-bytes"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	}
	return k.String() // float, double: alone
}

func (d *differ) labelsAndTypes(origLabel, updLabel string, orig, upd protoreflect.FieldDescriptor) {
	ok, uk := kindOf(orig), kindOf(upd)
	if ok != uk {
		d.add(FieldKindChanged)
		return
	}
	switch ok {
	case scalarType:
		og, ug := scalarGroup(orig.Kind()), scalarGroup(upd.Kind())
		if og != ug {
			d.add(FieldScalarKindChanged)
		} else if origLabel != "" && updLabel != "" && origLabel != updLabel {
			if og == "string-or-bytes" {
				d.add(FieldStringOrBytesLabelChange)
			} else {
				d.add(FieldNumericLabelChanged)
			}
		}
	case mapType:
		d.labelsAndTypes("", "", orig.MapKey(), upd.MapKey())
		d.labelsAndTypes("", "", orig.MapValue(), upd.MapValue())
	case messageType:
		d.messageTypes(orig.Message(), upd.Message())
	}
}

// localName is a type's name inside its package, the name Confluent
// compares so that moving a type between packages of referenced schemas
// is not a change by itself.
func localName(md protoreflect.MessageDescriptor) string {
	full, pkg := string(md.FullName()), string(md.ParentFile().Package())
	if pkg != "" && strings.HasPrefix(full, pkg+".") {
		return full[len(pkg)+1:]
	}
	return full
}

func (d *differ) messageTypes(orig, upd protoreflect.MessageDescriptor) {
	on, un := localName(orig), localName(upd)
	if on != un {
		d.add(FieldNamedTypeChanged)
		return
	}
	// Types of the schema itself are compared where they are declared;
	// Confluent compares a referenced type again at each use, because the
	// reference may point to another subject or version.
	if orig.ParentFile().Path() == d.orig.fd.Path() && upd.ParentFile().Path() == d.upd.fd.Path() {
		return
	}
	key := [2]protoreflect.FullName{orig.FullName(), upd.FullName()}
	if c, ok := d.compared[key]; ok {
		// Done, or under way further up (a recursive type, which
		// Confluent's SchemaScope also skips).
		if c.incompatible {
			d.add(FieldNamedTypeChanged)
		}
		return
	}
	c := &comparison{}
	d.compared[key] = c
	sub := &differ{orig: d.orig, upd: d.upd, path: strings.Split(on, "."), entered: d.entered, compared: d.compared}
	sub.message(orig, upd)
	d.diffs = append(d.diffs, sub.diffs...)
	c.incompatible = sub.incompatible()
	if c.incompatible {
		d.add(FieldNamedTypeChanged)
	}
}
