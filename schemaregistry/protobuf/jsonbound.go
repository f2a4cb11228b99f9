package protobuf

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// numberBound covers any number protojson writes: a quoted 64-bit integer,
// a float in exponent form, or "-Infinity".
const numberBound = 32

// nameBound is what a field name costs beyond its own length: quotes, the
// colon, the comma and the space protojson may add.
const nameBound = 6

// jsonBound returns an upper bound of the size protojson gives msg with
// EmitDefaultValues, and false as soon as that bound passes budget. The
// bound is what lets ToJSON refuse a small payload that would render huge
// (long field or enum names repeated by a packed list, defaults of wide
// messages) before rendering it.
func jsonBound(msg protoreflect.Message, budget int, resolver interface {
	FindMessageByURL(string) (protoreflect.MessageType, error)
}) (size int, ok bool, err error) {
	b := bounder{budget: budget, resolver: resolver}
	b.message(msg, 0)
	if b.work > maxRenderWork {
		return b.total, false, fmt.Errorf("rendering visits more than %d fields", maxRenderWork)
	}
	return b.total, b.total <= budget, nil
}

type bounder struct {
	total  int
	budget int
	// work counts the fields protojson will visit: with default values on,
	// it visits every field of every message, set or not.
	work int
	// defaults caches, per message type, what its unset fields without
	// presence cost, so a message costs its set fields, not all of them.
	defaults map[protoreflect.FullName]int
	resolver interface {
		FindMessageByURL(string) (protoreflect.MessageType, error)
	}
}

// maxRenderWork bounds the fields protojson visits for one rendering: a
// wide message repeated many times is cheap on the wire and in bytes out
// (unset message fields print nothing) yet costly to walk.
const maxRenderWork = 1 << 24

func (b *bounder) over() bool { return b.total > b.budget || b.work > maxRenderWork }

// defaultCost is what a message's unset fields without presence add to
// the JSON when every field is unset.
func (b *bounder) defaultCost(md protoreflect.MessageDescriptor) int {
	if cost, ok := b.defaults[md.FullName()]; ok {
		return cost
	}
	cost := 0
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if fd := fields.Get(i); !fd.HasPresence() {
			cost += nameBound + len(fd.JSONName()) + defaultBound(fd)
		}
	}
	if b.defaults == nil {
		b.defaults = map[protoreflect.FullName]int{}
	}
	b.defaults[md.FullName()] = cost
	return cost
}

func (b *bounder) message(msg protoreflect.Message, depth int) {
	b.total += 2
	md := msg.Descriptor()
	if md.FullName() == "google.protobuf.Any" {
		b.any(msg, depth)
		return
	}
	b.work += md.Fields().Len()
	b.total += b.defaultCost(md)
	msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !fd.HasPresence() && !fd.IsExtension() {
			b.total -= nameBound + len(fd.JSONName()) + defaultBound(fd)
		}
		b.field(fd, v, depth)
		return !b.over()
	})
}

// any bounds an Any as protojson writes it: "@type" and the fields of the
// message it holds, which the walker has already bounded structurally.
func (b *bounder) any(msg protoreflect.Message, depth int) {
	fields := msg.Descriptor().Fields()
	url := msg.Get(fields.ByNumber(1)).String()
	value := msg.Get(fields.ByNumber(2)).Bytes()
	b.total += nameBound + len("@type") + stringBound(url) + nameBound + len("value")
	mt, err := b.resolver.FindMessageByURL(url)
	if err != nil || depth > MaxPayloadDepth {
		b.total += 2 + (len(value)+2)/3*4
		return
	}
	inner := dynamicpb.NewMessage(mt.Descriptor())
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxPayloadDepth + 1}).Unmarshal(value, inner); err != nil {
		return // protojson fails on it too
	}
	b.message(inner, depth+1)
}

func (b *bounder) field(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) {
	b.total += nameBound + len(fd.JSONName()) + len(fd.FullName())
	switch {
	case fd.IsList():
		list := v.List()
		b.total += 2
		for i := 0; i < list.Len() && !b.over(); i++ {
			b.total++
			b.value(fd, list.Get(i), depth)
		}
	case fd.IsMap():
		b.total += 2
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			b.total += nameBound + stringBound(k.String())
			b.value(fd.MapValue(), mv, depth)
			return !b.over()
		})
	default:
		b.value(fd, v, depth)
	}
}

func (b *bounder) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		b.message(v.Message(), depth+1)
	case protoreflect.StringKind:
		b.total += stringBound(v.String())
	case protoreflect.BytesKind:
		b.total += 2 + (len(v.Bytes())+2)/3*4
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			b.total += 2 + len(ev.Name())
		} else {
			b.total += numberBound
		}
	default:
		b.total += numberBound
	}
}

func defaultBound(fd protoreflect.FieldDescriptor) int {
	switch {
	case fd.IsList() || fd.IsMap():
		return 2
	case fd.Kind() == protoreflect.StringKind:
		return stringBound(fd.Default().String())
	case fd.Kind() == protoreflect.BytesKind:
		return 2 + (len(fd.Default().Bytes())+2)/3*4
	case fd.Kind() == protoreflect.EnumKind:
		if ev := fd.DefaultEnumValue(); ev != nil {
			return 2 + len(ev.Name())
		}
	}
	return numberBound
}

// stringBound is the most a JSON string can take: control characters and
// HTML-sensitive bytes become six-byte escapes, and non-ASCII text at most
// doubles (U+2028 is three bytes and a six-byte escape).
func stringBound(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			n += 6
		case c >= 0x80:
			n += 2
		default:
			n++
		}
	}
	return n
}
