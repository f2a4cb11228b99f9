package protobuf

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxIndexes bounds the message-index list of a record: one index per
// nesting level, and a schema nests no deeper than MaxDepth.
const MaxIndexes = MaxDepth

// ErrBadIndexes is wrapped by errors about a record's message indexes.
var ErrBadIndexes = errors.New("invalid protobuf message indexes")

// EncodeIndexes writes Confluent's message-index list: the count and then
// each index as zigzag varints (Kafka's ByteUtils.writeVarint), with the
// single byte 0 standing for [0], the first message — by far the most
// common case. An empty list is written the same way.
func EncodeIndexes(indexes []int) []byte {
	if len(indexes) == 0 || (len(indexes) == 1 && indexes[0] == 0) {
		return []byte{0}
	}
	b := protowire.AppendVarint(nil, protowire.EncodeZigZag(int64(len(indexes))))
	for _, i := range indexes {
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(i)))
	}
	return b
}

// DecodeIndexes reads a message-index list from the start of b (the bytes
// after the magic byte and schema id) and returns it with the number of
// bytes it took. The byte 0 decodes to [0].
func DecodeIndexes(b []byte) (indexes []int, n int, err error) {
	count, n, err := readZigZag(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: count: %v", ErrBadIndexes, err)
	}
	if count == 0 {
		return []int{0}, n, nil
	}
	if count < 0 || count > MaxIndexes {
		return nil, 0, fmt.Errorf("%w: count %d is outside 1..%d", ErrBadIndexes, count, MaxIndexes)
	}
	if count > int64(len(b)-n) {
		return nil, 0, fmt.Errorf("%w: count %d but only %d bytes follow", ErrBadIndexes, count, len(b)-n)
	}
	indexes = make([]int, 0, count)
	for i := int64(0); i < count; i++ {
		v, m, err := readZigZag(b[n:])
		if err != nil {
			return nil, 0, fmt.Errorf("%w: index %d: %v", ErrBadIndexes, i, err)
		}
		if v < 0 || v > math.MaxInt32 {
			return nil, 0, fmt.Errorf("%w: index %d is %d", ErrBadIndexes, i, v)
		}
		indexes = append(indexes, int(v))
		n += m
	}
	return indexes, n, nil
}

// readZigZag reads one zigzag varint that must fit in 32 bits, as Kafka's
// ByteUtils.readVarint requires.
func readZigZag(b []byte) (int64, int, error) {
	u, n := protowire.ConsumeVarint(b)
	if n < 0 {
		if len(b) == 0 {
			return 0, 0, errors.New("no bytes")
		}
		return 0, 0, errors.New("malformed varint")
	}
	if n > 5 || u > math.MaxUint32 {
		return 0, 0, errors.New("varint longer than 32 bits")
	}
	return protowire.DecodeZigZag(u), n, nil
}

// indexedMessages lists the messages that message indexes count: those
// declared in the schema text. Map entries and group bodies are messages
// only in the compiled descriptor; Confluent's text-based schema does not
// count them, and its deserializer resolves indexes against that text.
func indexedMessages(msgs protoreflect.MessageDescriptors) []protoreflect.MessageDescriptor {
	out := make([]protoreflect.MessageDescriptor, 0, msgs.Len())
	for i := 0; i < msgs.Len(); i++ {
		md := msgs.Get(i)
		if md.IsMapEntry() || isGroupBody(md) {
			continue
		}
		out = append(out, md)
	}
	return out
}

// isGroupBody reports whether md is the message a proto2 group declares.
// A group's field is named after its message in lower case, so one lookup
// finds it.
func isGroupBody(md protoreflect.MessageDescriptor) bool {
	name := protoreflect.Name(strings.ToLower(string(md.Name())))
	isBody := func(fd protoreflect.FieldDescriptor) bool {
		return fd != nil && fd.Kind() == protoreflect.GroupKind && fd.Message().FullName() == md.FullName()
	}
	switch parent := md.Parent().(type) {
	case protoreflect.MessageDescriptor:
		return isBody(parent.Fields().ByName(name)) || isBody(parent.Extensions().ByName(name))
	case protoreflect.FileDescriptor:
		return isBody(parent.Extensions().ByName(name))
	}
	return false
}

// descriptorMessages is the message tree of a schema without explicit
// map entries: its descriptor's messages less map entries and group bodies.
func descriptorMessages(msgs protoreflect.MessageDescriptors) []textMessage {
	list := indexedMessages(msgs)
	out := make([]textMessage, len(list))
	for i, md := range list {
		out[i] = textMessage{name: string(md.Name()), children: descriptorMessages(md.Messages())}
	}
	return out
}

// MessageIndexes returns the message-index list that names fullName (with
// or without the package) in this schema.
func (f *File) MessageIndexes(fullName string) ([]int, error) {
	name := fullName
	if pkg := f.Package(); pkg != "" && strings.HasPrefix(name, pkg+".") {
		name = name[len(pkg)+1:]
	}
	msgs := f.messages
	var indexes []int
	for _, part := range strings.Split(name, ".") {
		found := -1
		for i, m := range msgs {
			if m.name == part {
				found = i
				break
			}
		}
		if found < 0 || len(indexes) >= MaxIndexes {
			return nil, fmt.Errorf("%w: no message %q in the schema", ErrBadIndexes, fullName)
		}
		indexes = append(indexes, found)
		msgs = msgs[found].children
	}
	return indexes, nil
}

// messageAt returns the message that indexes name; an empty list names the
// first message, as Confluent's deserializer reads it.
func (f *File) messageAt(indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	if len(indexes) > MaxIndexes {
		return nil, fmt.Errorf("%w: %d indexes, more than %d", ErrBadIndexes, len(indexes), MaxIndexes)
	}
	msgs := f.messages
	descs := f.fd.Messages()
	var md protoreflect.MessageDescriptor
	for level, idx := range indexes {
		if idx < 0 || idx >= len(msgs) {
			return nil, fmt.Errorf("%w: index %d at level %d, but there are %d messages", ErrBadIndexes, idx, level, len(msgs))
		}
		md = descs.ByName(protoreflect.Name(msgs[idx].name))
		if md == nil {
			return nil, fmt.Errorf("%w: message %s has no descriptor", ErrBadIndexes, msgs[idx].name)
		}
		msgs, descs = msgs[idx].children, md.Messages()
	}
	return md, nil
}

// MessageByName returns the descriptor of a message of the schema, by full
// name or by name relative to the package.
func (f *File) MessageByName(fullName string) (protoreflect.MessageDescriptor, error) {
	indexes, err := f.MessageIndexes(fullName)
	if err != nil {
		return nil, err
	}
	return f.messageAt(indexes)
}
