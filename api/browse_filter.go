package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// The message browser's filters (GET /kafka/{topic}/search and
// /export): every one given must hold for a record to match. They are
// parsed from the query once and applied to each scanned record; a filter
// that does not parse is the client's error (400), never a scan that
// matches nothing.

// Bounds on what a query may ask for.
const (
	maxFilterText   = 4096 // bytes of one key, value or header filter
	maxHeaderFilter = 16   // header= parameters
	maxJSONPathText = 512  // bytes of a json= expression
	maxJSONPathSegs = 32   // segments of its path
)

// recordFilter is one search's filters; the zero value matches everything.
type recordFilter struct {
	key      []byte // the key equals this (hasKey)
	hasKey   bool
	value    []byte // the value contains this
	headers  []headerFilter
	jsonPath *jsonPathExpr
	fromTs   int64 // timestamp at least (hasFrom)
	toTs     int64 // timestamp at most (hasTo)
	hasFrom  bool
	hasTo    bool
}

type headerFilter struct {
	name     string
	value    string
	hasValue bool // name=value: equal; name alone: present
}

// parseRecordFilter reads key, value, header (repeatable), json, from and
// to from the query.
func parseRecordFilter(q url.Values) (recordFilter, error) {
	var f recordFilter
	if v, ok := q["key"]; ok {
		if len(v[0]) > maxFilterText {
			return f, fmt.Errorf("key: longer than %d bytes", maxFilterText)
		}
		f.key, f.hasKey = []byte(v[0]), true
	}
	if v := q.Get("value"); v != "" {
		if len(v) > maxFilterText {
			return f, fmt.Errorf("value: longer than %d bytes", maxFilterText)
		}
		f.value = []byte(v)
	}
	hs := q["header"]
	if len(hs) > maxHeaderFilter {
		return f, fmt.Errorf("header: at most %d", maxHeaderFilter)
	}
	for _, h := range hs {
		hf, err := parseHeaderFilter(h)
		if err != nil {
			return f, err
		}
		f.headers = append(f.headers, hf)
	}
	if v := q.Get("json"); v != "" {
		expr, err := parseJSONPath(v)
		if err != nil {
			return f, fmt.Errorf("json: %w", err)
		}
		f.jsonPath = expr
	}
	var err error
	if f.fromTs, f.hasFrom, err = parseTimeParam(q.Get("from")); err != nil {
		return f, fmt.Errorf("from: %w", err)
	}
	if f.toTs, f.hasTo, err = parseTimeParam(q.Get("to")); err != nil {
		return f, fmt.Errorf("to: %w", err)
	}
	if f.hasFrom && f.hasTo && f.fromTs > f.toTs {
		return f, fmt.Errorf("from %d is after to %d", f.fromTs, f.toTs)
	}
	return f, nil
}

func parseHeaderFilter(h string) (headerFilter, error) {
	if h == "" || len(h) > maxFilterText {
		return headerFilter{}, fmt.Errorf("header: want name or name=value, at most %d bytes", maxFilterText)
	}
	name, value, hasValue := strings.Cut(h, "=")
	if name == "" {
		return headerFilter{}, fmt.Errorf("header %q: the name is empty", h)
	}
	return headerFilter{name: name, value: value, hasValue: hasValue}, nil
}

// parseTimeParam reads milliseconds since the epoch or an RFC 3339 time.
func parseTimeParam(v string) (int64, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 {
			return 0, false, fmt.Errorf("%d is before the epoch", ms)
		}
		return ms, true, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.UnixMilli() < 0 {
		return 0, false, fmt.Errorf("%q: want milliseconds since the epoch or an RFC 3339 time", v)
	}
	return t.UnixMilli(), true, nil
}

// matches reports whether rec passes every filter.
func (f *recordFilter) matches(rec *records.Record) bool {
	if f.hasFrom && rec.Timestamp < f.fromTs || f.hasTo && rec.Timestamp > f.toTs {
		return false
	}
	if f.hasKey && (rec.Key == nil || !bytes.Equal(rec.Key, f.key)) {
		return false
	}
	if len(f.value) > 0 && !bytes.Contains(rec.Value, f.value) {
		return false
	}
	for _, hf := range f.headers {
		if !hf.matches(rec.Headers) {
			return false
		}
	}
	return f.jsonPath == nil || f.jsonPath.matches(rec.Value)
}

func (hf headerFilter) matches(hs []records.Header) bool {
	for _, h := range hs {
		if h.Key == hf.name && (!hf.hasValue || string(h.Value) == hf.value) {
			return true
		}
	}
	return false
}

// fingerprint identifies the filters and order a cursor was made for, so
// a cursor handed back with other filters is refused rather than resumed
// over a range it never covered.
func (f *recordFilter) fingerprint(q url.Values, newest bool) uint64 {
	h := fnv.New64a()
	for _, name := range []string{"key", "value", "json", "from", "to", "partitions"} {
		fmt.Fprintf(h, "%s=%q;", name, q[name])
	}
	fmt.Fprintf(h, "header=%q;newest=%v", q["header"], newest)
	return h.Sum64()
}

// A JSON field filter: a path into the value's JSON and, optionally, a
// comparison. Accepted forms:
//
//	$.user.id == 42     user.id=42     $.tags[0] != "x"     $.user.name
//
// A path alone matches when the field exists. The right-hand side is a
// JSON literal (number, string, true, false, null) or, unquoted, a bare
// word compared as a string. Numbers compare by value.
type jsonPathExpr struct {
	path    []pathSeg
	op      string // "", "==" or "!="
	literal any    // decoded with UseNumber: json.Number, string, bool, nil
}

type pathSeg struct {
	name  string
	index int // -1: a name
}

var errEmptyPath = errors.New("the path is empty")

// parseJSONPath parses an expression of at most maxJSONPathText bytes.
func parseJSONPath(s string) (*jsonPathExpr, error) {
	if len(s) > maxJSONPathText {
		return nil, fmt.Errorf("longer than %d bytes", maxJSONPathText)
	}
	pathText, op, lit := splitComparison(s)
	expr := &jsonPathExpr{op: op}
	var err error
	if expr.path, err = parsePath(strings.TrimSpace(pathText)); err != nil {
		return nil, err
	}
	if op == "" {
		return expr, nil
	}
	if expr.literal, err = parseLiteral(strings.TrimSpace(lit)); err != nil {
		return nil, err
	}
	return expr, nil
}

// splitComparison cuts s at its first ==, != or = outside brackets and
// quotes.
func splitComparison(s string) (path, op, literal string) {
	depth, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuote = false
			}
		case c == '"':
			inQuote = true
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && (c == '=' || c == '!'):
			if i+1 < len(s) && s[i+1] == '=' {
				return s[:i], string(c) + "=", s[i+2:]
			}
			if c == '=' {
				return s[:i], "==", s[i+1:]
			}
		}
	}
	return s, "", ""
}

func parsePath(s string) ([]pathSeg, error) {
	s = strings.TrimPrefix(s, "$")
	s = strings.TrimPrefix(s, ".")
	if s == "" {
		return nil, errEmptyPath
	}
	var segs []pathSeg
	for s != "" {
		if len(segs) == maxJSONPathSegs {
			return nil, fmt.Errorf("more than %d path segments", maxJSONPathSegs)
		}
		var seg pathSeg
		var err error
		if s[0] == '[' {
			seg, s, err = parseBracket(s)
		} else {
			seg, s, err = parseName(s)
		}
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			if s == "" || s[0] == '.' || s[0] == '[' {
				return nil, errors.New("a path segment is empty")
			}
		}
	}
	return segs, nil
}

func parseName(s string) (pathSeg, string, error) {
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	name := s[:end]
	if name == "" {
		return pathSeg{}, "", errors.New("a path segment is empty")
	}
	if strings.ContainsAny(name, " \t\"]=!") {
		return pathSeg{}, "", fmt.Errorf("%q is not a field name (quote it: [\"%s\"])", name, name)
	}
	return pathSeg{name: name, index: -1}, s[end:], nil
}

// parseBracket reads [n] or ["name"].
func parseBracket(s string) (pathSeg, string, error) {
	end := strings.IndexByte(s, ']')
	if len(s) > 1 && s[1] == '"' {
		// A quoted name may hold ]: find the closing quote first.
		dec := json.NewDecoder(strings.NewReader(s[1:]))
		var name string
		if err := dec.Decode(&name); err != nil {
			return pathSeg{}, "", fmt.Errorf("bad quoted name in %q", s)
		}
		rest := s[1+int(dec.InputOffset()):]
		if !strings.HasPrefix(rest, "]") {
			return pathSeg{}, "", fmt.Errorf("want ] after the quoted name in %q", s)
		}
		return pathSeg{name: name, index: -1}, rest[1:], nil
	}
	if end < 0 {
		return pathSeg{}, "", fmt.Errorf("unclosed [ in %q", s)
	}
	n, err := strconv.Atoi(s[1:end])
	if err != nil || n < 0 || n > math.MaxInt32 {
		return pathSeg{}, "", fmt.Errorf("%q is not an array index", s[1:end])
	}
	return pathSeg{index: n}, s[end+1:], nil
}

func parseLiteral(s string) (any, error) {
	if s == "" {
		return nil, errors.New("nothing to compare with")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() && int(dec.InputOffset()) == len(s) {
		switch v.(type) {
		case map[string]any, []any:
			return nil, errors.New("compare with a number, string, true, false or null")
		}
		return v, nil
	}
	if strings.ContainsAny(s, "\"[]{}") {
		return nil, fmt.Errorf("%q is not a JSON literal", s)
	}
	return s, nil // a bare word
}

// matches decodes value as JSON and applies the expression; a value that
// is not JSON does not match.
func (e *jsonPathExpr) matches(value []byte) bool {
	if !mayBeJSON(value) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return false
	}
	v, found := lookup(doc, e.path)
	switch e.op {
	case "":
		return found
	case "==":
		return found && jsonEqual(v, e.literal)
	default:
		return !found || !jsonEqual(v, e.literal)
	}
}

func lookup(doc any, path []pathSeg) (any, bool) {
	cur := doc
	for _, seg := range path {
		switch node := cur.(type) {
		case map[string]any:
			if seg.index >= 0 {
				return nil, false
			}
			v, ok := node[seg.name]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if seg.index < 0 || seg.index >= len(node) {
				return nil, false
			}
			cur = node[seg.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

func jsonEqual(a, b any) bool {
	an, aNum := a.(json.Number)
	bn, bNum := b.(json.Number)
	if aNum && bNum {
		if an == bn {
			return true
		}
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		return err1 == nil && err2 == nil && af == bf
	}
	switch av := a.(type) {
	case string:
		bs, ok := b.(string)
		return ok && av == bs
	case bool:
		bb, ok := b.(bool)
		return ok && av == bb
	case nil:
		return b == nil
	}
	return false
}
