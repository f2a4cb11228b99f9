package api

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A one-pass JSON scanner for produce bodies. encoding/json validated a
// body once per Unmarshal and again per json.Compact, and allocated per
// field; this walks the bytes once, validates as it goes, and hands back
// slices of the body (or of the request arena when a value must be
// compacted or unescaped). FuzzScanBody checks it against encoding/json.

type scanner struct {
	data  []byte
	pos   int
	arena *[]byte // compacted and unescaped bytes live here
	// spaces counts whitespace bytes skipped, so value() knows without a
	// second pass whether a value needs compacting.
	spaces int
}

// maxDepth bounds nesting so a body of "[[[[..." cannot exhaust the stack.
const maxDepth = 512

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) skipSpace() {
	// Compact bodies have no whitespace between tokens: one comparison.
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return
	}
	s.skipSpaceSlow()
}

func (s *scanner) skipSpaceSlow() {
	data, p := s.data, s.pos
	for p < len(data) && isSpace[data[p]] {
		p++
	}
	s.spaces += p - s.pos
	s.pos = p
}

// isSpace marks JSON's insignificant whitespace; stringSpecial the bytes
// that end a run of plain string bytes (quote, backslash, control bytes).
var isSpace, stringSpecial = func() (space, special [256]bool) {
	for _, c := range []byte{' ', '\t', '\n', '\r'} {
		space[c] = true
	}
	for c := 0; c < 0x20; c++ {
		special[c] = true
	}
	special['"'], special['\\'] = true, true
	return space, special
}()

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos >= len(s.data) {
			return s.errorf("unexpected end of JSON, want %q", c)
		}
		return s.errorf("want %q, found %q", c, s.data[s.pos])
	}
	s.pos++
	return nil
}

// value scans one JSON value and returns it compact: a slice of the body
// when it holds no insignificant whitespace, else a compacted copy.
func (s *scanner) value() ([]byte, error) {
	s.skipSpace()
	start, spacesBefore := s.pos, s.spaces
	if err := s.skipValue(0); err != nil {
		return nil, err
	}
	raw := s.data[start:s.pos]
	if s.spaces == spacesBefore {
		return raw[:len(raw):len(raw)], nil
	}
	return compactInto(s.arena, raw), nil
}

// skipValue validates one value and moves past it.
func (s *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return s.errorf("nesting deeper than %d", maxDepth)
	}
	if s.pos >= len(s.data) {
		return s.errorf("unexpected end of JSON")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.skipObject(depth)
	case c == '[':
		return s.skipArray(depth)
	case c == '"':
		_, err := s.stringEnd()
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.skipNumber()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.errorf("invalid character %q looking for a value", c)
	}
}

// empty moves past close when it is the next byte: an object or array
// just opened and empty.
func (s *scanner) empty(close byte) bool {
	if s.peek() != close {
		return false
	}
	s.pos++
	return true
}

// next moves past the ',' or the close ('}' or ']') after a member or an
// element; more is false at the close, and with an error on anything else.
func (s *scanner) next(close byte) (more bool, err error) {
	switch s.peek() {
	case ',':
		s.pos++
		return true, nil
	case close:
		s.pos++
		return false, nil
	}
	if close == '}' {
		return false, s.errorf("want ',' or '}' in object")
	}
	return false, s.errorf("want ',' or ']' in array")
}

// skipObject is objectKeys with skipValue for fn, without the call
// through a closure per member: values nested in records (the common
// {"value": {...}}) are skipped this way.
func (s *scanner) skipObject(depth int) error {
	s.pos++ // '{'
	if s.empty('}') {
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.errorf("want a string")
		}
		if _, err := s.stringEnd(); err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.skipSpace()
		if err := s.skipValue(depth + 1); err != nil {
			return err
		}
		if more, err := s.next('}'); !more {
			return err
		}
	}
}

// skipArray is arrayItems with skipValue for fn.
func (s *scanner) skipArray(depth int) error {
	s.pos++ // '['
	if s.empty(']') {
		return nil
	}
	for {
		s.skipSpace()
		if err := s.skipValue(depth + 1); err != nil {
			return err
		}
		if more, err := s.next(']'); !more {
			return err
		}
	}
}

// stringEnd scans a string starting at its quote and moves past its
// closing quote; escapes are validated.
func (s *scanner) stringEnd() (hasEscape bool, err error) {
	data, p := s.data, s.pos+1 // past the opening quote
	for {
		// The plain bytes of a run, in a loop the compiler keeps in
		// registers (s.pos would be stored back at every byte).
		for p < len(data) && !stringSpecial[data[p]] {
			p++
		}
		if p >= len(data) {
			s.pos = p
			return false, s.errorf("unterminated string")
		}
		switch c := data[p]; {
		case c == '"':
			s.pos = p + 1
			return hasEscape, nil
		case c == '\\':
			hasEscape = true
			s.pos = p
			if err := s.skipEscape(); err != nil {
				return false, err
			}
			p = s.pos
		default:
			s.pos = p
			return false, s.errorf("control character in string")
		}
	}
}

func (s *scanner) skipEscape() error {
	if s.pos+1 >= len(s.data) {
		return s.errorf("unterminated escape")
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return nil
	case 'u':
		if s.pos+6 > len(s.data) {
			return s.errorf("short \\u escape")
		}
		for _, h := range s.data[s.pos+2 : s.pos+6] {
			if !isHex(h) {
				return s.errorf("invalid \\u escape")
			}
		}
		s.pos += 6
		return nil
	}
	return s.errorf("invalid escape")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) skipNumber() error {
	p := s.pos
	if p < len(s.data) && s.data[p] == '-' {
		p++
	}
	switch {
	case p < len(s.data) && s.data[p] == '0':
		p++
	case p < len(s.data) && s.data[p] >= '1' && s.data[p] <= '9':
		for p < len(s.data) && s.data[p] >= '0' && s.data[p] <= '9' {
			p++
		}
	default:
		s.pos = p
		return s.errorf("invalid number")
	}
	if p < len(s.data) && s.data[p] == '.' {
		p++
		if p >= len(s.data) || s.data[p] < '0' || s.data[p] > '9' {
			s.pos = p
			return s.errorf("invalid number")
		}
		for p < len(s.data) && s.data[p] >= '0' && s.data[p] <= '9' {
			p++
		}
	}
	if p < len(s.data) && (s.data[p] == 'e' || s.data[p] == 'E') {
		p++
		if p < len(s.data) && (s.data[p] == '+' || s.data[p] == '-') {
			p++
		}
		if p >= len(s.data) || s.data[p] < '0' || s.data[p] > '9' {
			s.pos = p
			return s.errorf("invalid number")
		}
		for p < len(s.data) && s.data[p] >= '0' && s.data[p] <= '9' {
			p++
		}
	}
	s.pos = p
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.errorf("invalid literal, want %s", word)
	}
	s.pos += len(word)
	return nil
}

// str scans a string value and returns its unescaped bytes.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want a string")
	}
	start := s.pos
	escaped, err := s.stringEnd()
	if err != nil {
		return nil, err
	}
	inner := s.data[start+1 : s.pos-1]
	if !escaped {
		return inner[:len(inner):len(inner)], nil
	}
	return unescapeInto(s.arena, inner), nil
}

// integer scans a JSON number that must be an integer in [min, max].
func (s *scanner) integer(min, max int64) (int64, error) {
	s.skipSpace()
	start := s.pos
	if err := s.skipNumber(); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(s.data[start:s.pos]), 10, 64)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s is not an integer in [%d, %d]", s.data[start:s.pos], min, max)
	}
	return n, nil
}

// isNull consumes a null literal if one is next.
func (s *scanner) isNull() bool {
	if s.peek() == 'n' && s.literal("null") == nil {
		return true
	}
	return false
}

// objectKeys calls fn for each key of the object at the scanner, with the
// scanner positioned at the key's value; fn must consume the value.
func (s *scanner) objectKeys(fn func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.empty('}') {
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.skipSpace()
		if err := fn(key); err != nil {
			return err
		}
		if more, err := s.next('}'); !more {
			return err
		}
	}
}

// arrayItems calls fn for each element; fn must consume the element.
func (s *scanner) arrayItems(fn func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.empty(']') {
		return nil
	}
	for i := 0; ; i++ {
		s.skipSpace()
		if err := fn(i); err != nil {
			return err
		}
		if more, err := s.next(']'); !more {
			return err
		}
	}
}

// atEnd reports whether only whitespace is left.
func (s *scanner) atEnd() bool {
	s.skipSpace()
	return s.pos >= len(s.data)
}

// end checks that only whitespace follows.
func (s *scanner) end() error {
	if !s.atEnd() {
		return s.errorf("unexpected data after the JSON value")
	}
	return nil
}

// compactInto appends src without insignificant whitespace to the arena.
func compactInto(arena *[]byte, src []byte) []byte {
	start := len(*arena)
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString && c == '\\':
			*arena = append(*arena, c, src[i+1])
			i++
			continue
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		*arena = append(*arena, c)
	}
	return (*arena)[start:len(*arena):len(*arena)]
}

// unescapeInto appends the decoded bytes of a validated string body.
func unescapeInto(arena *[]byte, src []byte) []byte {
	start := len(*arena)
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\\' {
			*arena = append(*arena, c)
			continue
		}
		i++
		switch src[i] {
		case 'b':
			*arena = append(*arena, '\b')
		case 'f':
			*arena = append(*arena, '\f')
		case 'n':
			*arena = append(*arena, '\n')
		case 'r':
			*arena = append(*arena, '\r')
		case 't':
			*arena = append(*arena, '\t')
		case 'u':
			r := hex4(src[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) && i+6 < len(src) && src[i+1] == '\\' && src[i+2] == 'u' {
				if r2 := hex4(src[i+3 : i+7]); utf16.DecodeRune(r, r2) != utf8.RuneError {
					r = utf16.DecodeRune(r, r2)
					i += 6
				} else {
					r = utf8.RuneError
				}
			} else if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
			*arena = utf8.AppendRune(*arena, r)
		default: // '"', '\\', '/'
			*arena = append(*arena, src[i])
		}
	}
	return (*arena)[start:len(*arena):len(*arena)]
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
