package schemaregistry

import (
	"errors"
	"fmt"
	"math"
)

// goavro allocates what an Avro binary value declares: an array block
// count of 2^31-1 in a 10-byte value reserves 32 GiB, and a recursive
// schema lets each few bytes add a level of recursion until the stack
// overflows. Every decode of untrusted bytes therefore runs checkBinary
// first: it walks the value against the schema without allocating per
// value, and refuses any count or length larger than the bytes left, too
// many values, too deep a nesting, and (when rendering) too much text.

// Limits of one decoded Avro binary value.
const (
	// MaxAvroDepth bounds the nesting of records, arrays and maps. goavro
	// recurses once or twice per level; real schemas nest well under 20
	// levels, and 100 keeps goavro's stack use far below Go's limit.
	MaxAvroDepth = 100
	// maxAvroValuesBase + maxAvroValuesPerByte × the value's length bound
	// how many values (records, fields, items, entries, union branches) a
	// value may hold. goavro spends tens to hundreds of bytes of memory per
	// value, and values that encode in zero bytes (null, empty records)
	// would otherwise be bounded by nothing: a 10-byte array of 2^31-1
	// nulls. Honest data holds one or two values per byte.
	maxAvroValuesBase    = 1 << 16
	maxAvroValuesPerByte = 4
	// maxAvroBlockCount is goavro's MaxBlockCount: larger blocks it refuses.
	maxAvroBlockCount = math.MaxInt32
)

// ErrAvroValue marks a binary value that does not decode with its schema
// or exceeds a decoding limit.
var ErrAvroValue = errors.New("invalid Avro value")

// binaryWalker checks one binary value against a schema.
type binaryWalker struct {
	data []byte
	pos  int
	// valuesLeft counts down the value budget.
	valuesLeft int
	depth      int
	// text is an upper bound of the length of goavro's textual rendering
	// of what has been walked; maxText (0: unbounded) caps it.
	text, maxText int
}

// checkBinary reports whether data is exactly one value of t within the
// decoding limits, and returns an upper bound of the length of its Avro
// JSON rendering. maxText > 0 refuses values whose rendering may exceed it.
func checkBinary(t *Type, data []byte, maxText int) (int, error) {
	w := &binaryWalker{data: data, valuesLeft: maxAvroValuesBase + maxAvroValuesPerByte*len(data), maxText: maxText}
	if err := w.value(t); err != nil {
		return 0, fmt.Errorf("%w: at byte %d: %v", ErrAvroValue, w.pos, err)
	}
	if left := len(data) - w.pos; left != 0 {
		return 0, fmt.Errorf("%w: %d bytes left over after the value", ErrAvroValue, left)
	}
	return w.text, nil
}

func (w *binaryWalker) left() int { return len(w.data) - w.pos }

func (w *binaryWalker) value(t *Type) error {
	if w.valuesLeft--; w.valuesLeft < 0 {
		return fmt.Errorf("more than %d values in a %d-byte value", maxAvroValuesBase+maxAvroValuesPerByte*len(w.data), len(w.data))
	}
	var err error
	switch t.Kind {
	case Record, Array, Map:
		err = w.nested(t)
	case Union:
		err = w.union(t)
	default:
		err = w.scalar(t)
	}
	if err != nil {
		return err
	}
	if w.maxText > 0 && w.text > w.maxText {
		return fmt.Errorf("its JSON rendering may exceed %d bytes", w.maxText)
	}
	return nil
}

// nested walks a record, array or map one level deeper.
func (w *binaryWalker) nested(t *Type) error {
	if w.depth++; w.depth > MaxAvroDepth {
		return fmt.Errorf("values nest deeper than %d levels", MaxAvroDepth)
	}
	defer func() { w.depth-- }()
	w.text += 2 // {} or []
	switch t.Kind {
	case Record:
		for _, f := range t.Fields {
			w.text += len(f.Name) + 4 // "name":,
			if err := w.value(f.Type); err != nil {
				return err
			}
		}
		return nil
	case Array:
		return w.blocks(t.Items, func() error {
			w.text++ // ,
			return w.value(t.Items)
		})
	}
	keys := map[string]struct{}{}
	return w.blocks(nil, func() error {
		key, err := w.bytes()
		if err != nil {
			return fmt.Errorf("map key: %v", err)
		}
		if _, dup := keys[string(key)]; dup {
			return fmt.Errorf("map key %q appears twice", key)
		}
		keys[string(key)] = struct{}{}
		w.text += 6*len(key) + 4 // "key":, each byte escaped at worst as \uXXXX
		return w.value(t.Values)
	})
}

// blocks walks an array's or map's blocks. items is the array's item type
// (nil for a map, whose entries take at least a byte for the key).
func (w *binaryWalker) blocks(items *Type, each func() error) error {
	for {
		count, err := w.long()
		if err != nil {
			return fmt.Errorf("block count: %v", err)
		}
		if count == 0 {
			return nil
		}
		size := int64(-1)
		if count < 0 {
			if count == math.MinInt64 {
				return fmt.Errorf("block count %d", count)
			}
			count = -count
			// A negative count is followed by the block's size in bytes.
			if size, err = w.long(); err != nil {
				return fmt.Errorf("block size: %v", err)
			}
			if size < 0 || size > int64(w.left()) {
				return fmt.Errorf("block size %d with %d bytes left", size, w.left())
			}
		}
		if count > maxAvroBlockCount {
			return fmt.Errorf("block count %d exceeds %d", count, maxAvroBlockCount)
		}
		if (items == nil || alwaysTakesBytes(items)) && count > int64(w.left()) {
			return fmt.Errorf("block count %d exceeds the %d bytes left", count, w.left())
		}
		start := w.pos
		for i := int64(0); i < count; i++ {
			if err := each(); err != nil {
				return fmt.Errorf("item %d: %v", i, err)
			}
		}
		if size >= 0 && int64(w.pos-start) != size {
			return fmt.Errorf("block size %d but its items take %d bytes", size, w.pos-start)
		}
	}
}

// alwaysTakesBytes reports whether every value of t encodes in at least
// one byte (records are not examined: they may be empty).
func alwaysTakesBytes(t *Type) bool {
	switch t.Kind {
	case Null, Record:
		return false
	case Fixed:
		return t.Size > 0
	}
	return true
}

func (w *binaryWalker) union(t *Type) error {
	i, err := w.long()
	if err != nil {
		return fmt.Errorf("union index: %v", err)
	}
	if i < 0 || i >= int64(len(t.Branches)) {
		return fmt.Errorf("union index %d of a union of %d branches", i, len(t.Branches))
	}
	b := t.Branches[i]
	if b.Kind != Null {
		// {"branch name":value}; goavro names a branch by its full name,
		// or by kind and logical type ("long.timestamp-millis").
		w.text += 6*(len(b.Name)+len(b.Logical)+len(b.Kind.String())+1) + 4
	}
	return w.value(b)
}

func (w *binaryWalker) scalar(t *Type) error {
	switch t.Kind {
	case Null:
		w.text += 4
	case Boolean:
		if w.left() < 1 {
			return errShort("a boolean", 1, 0)
		}
		if b := w.data[w.pos]; b > 1 {
			return fmt.Errorf("boolean byte %d", b)
		}
		w.pos++
		w.text += 5
	case Int:
		if _, err := w.int(); err != nil {
			return err
		}
		w.text += 24
	case Long:
		if _, err := w.long(); err != nil {
			return err
		}
		w.text += 24
	case Float:
		return w.skipFixedWidth("a float", 4, 32)
	case Double:
		return w.skipFixedWidth("a double", 8, 32)
	case Bytes, String:
		b, err := w.bytes()
		if err != nil {
			return err
		}
		// Escaped at worst as \uXXXX per byte; a decimal's two's complement
		// may be rewritten one byte longer.
		w.text += 6*(len(b)+2) + 2
	case Fixed:
		return w.skipFixedWidth("fixed "+t.Name, t.Size, 6*(t.Size+2)+2)
	case Enum:
		i, err := w.long()
		if err != nil {
			return fmt.Errorf("enum index: %v", err)
		}
		if i < 0 || i >= int64(len(t.Symbols)) {
			return fmt.Errorf("enum index %d of enum %s with %d symbols", i, t.Name, len(t.Symbols))
		}
		w.text += len(t.Symbols[i]) + 2
	}
	return nil
}

func (w *binaryWalker) skipFixedWidth(what string, n, text int) error {
	if w.left() < n {
		return errShort(what, n, w.left())
	}
	w.pos += n
	w.text += text
	return nil
}

func errShort(what string, need, left int) error {
	return fmt.Errorf("%s needs %d bytes, %d left", what, need, left)
}

// bytes reads a length-prefixed byte string; it aliases data.
func (w *binaryWalker) bytes() ([]byte, error) {
	n, err := w.long()
	if err != nil {
		return nil, fmt.Errorf("length: %v", err)
	}
	if n < 0 || n > int64(w.left()) {
		return nil, fmt.Errorf("length %d with %d bytes left", n, w.left())
	}
	b := w.data[w.pos : w.pos+int(n)]
	w.pos += int(n)
	return b, nil
}

// long reads a zig-zag varint of at most 10 bytes, as Java's Avro does
// (goavro silently drops the bits of longer ones).
func (w *binaryWalker) long() (int64, error) {
	var u uint64
	for i := 0; i < 10; i++ {
		if w.pos >= len(w.data) {
			return 0, errors.New("varint cut short")
		}
		b := w.data[w.pos]
		w.pos++
		if i == 9 && b > 1 {
			return 0, errors.New("varint longer than 64 bits")
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("varint longer than 64 bits")
}

// int reads a zig-zag varint that fits in 32 bits.
func (w *binaryWalker) int() (int32, error) {
	start := w.pos
	v, err := w.long()
	if err != nil {
		return 0, err
	}
	if w.pos-start > 5 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("int %d does not fit in 32 bits", v)
	}
	return int32(v), nil
}

// DecodeBinary decodes one Avro binary value (all of data) into goavro's
// native form, after checkBinary has bounded what decoding it costs.
func (p *ParsedSchema) DecodeBinary(data []byte) (any, error) {
	if _, err := checkBinary(p.Root, data, 0); err != nil {
		return nil, err
	}
	native, rest, err := p.codec.NativeFromBinary(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAvroValue, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes left over after the value", ErrAvroValue, len(rest))
	}
	return native, nil
}

// RenderBinary decodes one Avro binary value into Avro JSON of at most
// maxText bytes (maxText > 0), refusing before decoding anything whose
// rendering could be longer.
func (p *ParsedSchema) RenderBinary(data []byte, maxText int) ([]byte, error) {
	if _, err := checkBinary(p.Root, data, maxText); err != nil {
		return nil, err
	}
	native, rest, err := p.codec.NativeFromBinary(data)
	if err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("%w: goavro: %v (%d bytes left over)", ErrAvroValue, err, len(rest))
	}
	text, err := p.codec.TextualFromNative(make([]byte, 0, min(maxText, 64+2*len(data))), native)
	if err != nil {
		return nil, fmt.Errorf("%w: render: %v", ErrAvroValue, err)
	}
	if len(text) > maxText {
		return nil, fmt.Errorf("%w: its JSON rendering is %d bytes, more than %d", ErrAvroValue, len(text), maxText)
	}
	return text, nil
}

// CheckBinary reports whether data is one value of the schema within the
// decoding limits, without decoding it.
func (p *ParsedSchema) CheckBinary(data []byte) error {
	_, err := checkBinary(p.Root, data, 0)
	return err
}

// MaxAvroJSONDepth bounds the JSON nesting of an Avro JSON value: a union
// branch adds an object level ({"Node": {...}}) to each Avro level.
const MaxAvroJSONDepth = 2*MaxAvroDepth + 2

// JSONDepthWithin reports whether the JSON text raw nests at most max
// levels of arrays and objects, so that goavro's recursive JSON decoder
// is never handed deeper input. It does not validate the JSON.
func JSONDepthWithin(raw []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return true
}
