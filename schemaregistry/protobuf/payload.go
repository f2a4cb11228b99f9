package protobuf

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Bounds on an untrusted payload, checked before anything is allocated for
// its values: dynamicpb spends a few hundred bytes on each message, so the
// number of messages is what bounds memory.
const (
	// MaxPayloadDepth bounds message nesting inside one payload.
	MaxPayloadDepth = 100
	// MaxPayloadMessages bounds the messages (the top one, nested ones,
	// map entries, Any contents) of one payload.
	MaxPayloadMessages = 100000
)

// ErrBadPayload is wrapped by errors about a payload that does not decode
// as its message.
var ErrBadPayload = errors.New("invalid protobuf payload")

// Validate checks that payload decodes as the message that indexes name:
// the wire format is well formed, nested messages decode, proto3 strings
// are UTF-8 and proto2 required fields are set. Unknown fields are allowed,
// as Confluent's deserializer allows them (a newer writer may add fields).
func (f *File) Validate(indexes []int, payload []byte) error {
	_, err := f.decode(indexes, payload)
	return err
}

func (f *File) decode(indexes []int, payload []byte) (*dynamicpb.Message, error) {
	md, err := f.messageAt(indexes)
	if err != nil {
		return nil, err
	}
	w := walker{resolver: f.resolver}
	if err := w.message(md, payload, 0); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPayload, md.FullName(), err)
	}
	msg := dynamicpb.NewMessage(md)
	opts := proto.UnmarshalOptions{RecursionLimit: MaxPayloadDepth + 1, Resolver: f.resolver}
	if err := opts.Unmarshal(payload, msg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPayload, md.FullName(), err)
	}
	return msg, nil
}

// ToJSON renders the payload as Protobuf JSON of the message that indexes
// name, as Confluent's REST proxy and deserializer do (lowerCamel names,
// default values included). It fails, without rendering, when the JSON
// could exceed maxBytes.
func (f *File) ToJSON(indexes []int, payload []byte, maxBytes int) ([]byte, error) {
	msg, err := f.decode(indexes, payload)
	if err != nil {
		return nil, err
	}
	bound, ok, err := jsonBound(msg, maxBytes, f.resolver)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPayload, msg.Descriptor().FullName(), err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: the JSON of %s could take %d bytes, more than the %d allowed", ErrBadPayload, msg.Descriptor().FullName(), bound, maxBytes)
	}
	out, err := protojson.MarshalOptions{EmitDefaultValues: true, Resolver: f.resolver}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPayload, err)
	}
	if len(out) > maxBytes {
		return nil, fmt.Errorf("%w: the JSON of %s takes %d bytes, more than the %d allowed", ErrBadPayload, msg.Descriptor().FullName(), len(out), maxBytes)
	}
	return out, nil
}

// FromJSON encodes Protobuf JSON of message fullName (full name, or name
// within the package) to Protobuf binary, for REST produce. Unknown JSON
// fields are refused, as Confluent's JsonFormat parser refuses them.
func (f *File) FromJSON(fullName string, js []byte) ([]byte, error) {
	md, err := f.MessageByName(fullName)
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(md)
	opts := protojson.UnmarshalOptions{Resolver: f.resolver, RecursionLimit: MaxPayloadDepth + 1}
	if err := opts.Unmarshal(js, msg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPayload, md.FullName(), err)
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPayload, md.FullName(), err)
	}
	return out, nil
}

// walker checks a payload's structure against its message without
// allocating per value, and counts the messages it holds.
type walker struct {
	resolver interface {
		FindMessageByURL(url string) (protoreflect.MessageType, error)
	}
	messages int
}

func (w *walker) message(md protoreflect.MessageDescriptor, b []byte, depth int) error {
	if depth > MaxPayloadDepth {
		return fmt.Errorf("messages nest deeper than %d", MaxPayloadDepth)
	}
	w.messages++
	if w.messages > MaxPayloadMessages {
		return fmt.Errorf("more than %d messages", MaxPayloadMessages)
	}
	fields := md.Fields()
	var anyURL []byte
	var anyValue []byte
	isAny := md.FullName() == "google.protobuf.Any"
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		var body []byte
		nested := false
		switch {
		case fd != nil && typ == protowire.BytesType && (fd.Kind() == protoreflect.MessageKind || isAny):
			body, n = protowire.ConsumeBytes(b)
			nested = true
		case fd != nil && typ == protowire.StartGroupType && fd.Kind() == protoreflect.GroupKind:
			body, n = protowire.ConsumeGroup(num, b)
			nested = true
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case !nested:
		case isAny && num == 1:
			anyURL = body
		case isAny && num == 2:
			anyValue = body
		case isAny:
		default:
			if err := w.message(fd.Message(), body, depth+1); err != nil {
				return fmt.Errorf("%s: %w", fd.Name(), err)
			}
		}
	}
	if isAny && anyURL != nil {
		mt, err := w.resolver.FindMessageByURL(string(anyURL))
		if err != nil {
			// Binary decoding keeps an unknown Any opaque, as Confluent's
			// does; only ToJSON needs the type, and protojson says so.
			return nil
		}
		return w.message(mt.Descriptor(), anyValue, depth+1)
	}
	return nil
}
