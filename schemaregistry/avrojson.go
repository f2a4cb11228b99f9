package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidateJSON checks a value in Avro's JSON encoding (unions as
// {"branch": value}, bytes as strings of code points 0-255) against t and
// names the path of the first mismatch, e.g. `/items/2/qty: expected int,
// got "seven"`. Encoders run it before goavro, whose errors rarely name
// the field.
func ValidateJSON(t *Type, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return validateValue(t, v, "")
}

func mismatch(path string, t *Type, v any) error {
	return fmt.Errorf("%s: expected %s, got %s", pathOrRoot(path), describe(t), compactJSON(v))
}

func validateValue(t *Type, v any, path string) error {
	switch t.Kind {
	case Null:
		if v != nil {
			return mismatch(path, t, v)
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return mismatch(path, t, v)
		}
	case Int, Long:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(path, t, v)
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || (t.Kind == Int && (i < math.MinInt32 || i > math.MaxInt32)) {
			return mismatch(path, t, v)
		}
	case Float, Double:
		if _, ok := v.(json.Number); !ok {
			return mismatch(path, t, v)
		}
	case String:
		if _, ok := v.(string); !ok {
			return mismatch(path, t, v)
		}
	case Bytes, Fixed:
		s, ok := v.(string)
		if !ok || !latin1(s) || (t.Kind == Fixed && utf8.RuneCountInString(s) != t.Size) {
			return mismatch(path, t, v)
		}
	case Enum:
		s, ok := v.(string)
		if !ok || !hasSymbol(t, s) {
			return fmt.Errorf("%s: expected one of the symbols [%s] of enum %s, got %s", pathOrRoot(path), strings.Join(t.Symbols, ", "), t.Name, compactJSON(v))
		}
	case Array:
		list, ok := v.([]any)
		if !ok {
			return mismatch(path, t, v)
		}
		for i, e := range list {
			if err := validateValue(t.Items, e, path+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, t, v)
		}
		for _, k := range sortedKeys(m) {
			if err := validateValue(t.Values, m[k], path+"/"+k); err != nil {
				return err
			}
		}
	case Record:
		return validateRecord(t, v, path)
	case Union:
		return validateUnion(t, v, path)
	}
	return nil
}

func latin1(s string) bool {
	for _, r := range s {
		if r > 255 {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validateRecord(t *Type, v any, path string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return mismatch(path, t, v)
	}
	known := map[string]bool{}
	for _, f := range t.Fields {
		known[f.Name] = true
		fv, present := m[f.Name]
		if !present {
			if f.Default == nil {
				return fmt.Errorf("%s/%s: field %q of %s is missing and has no default", path, f.Name, f.Name, t.Name)
			}
			continue
		}
		if err := validateValue(f.Type, fv, path+"/"+f.Name); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(m) {
		if !known[k] {
			return fmt.Errorf("%s/%s: record %s has no field %q", path, k, t.Name, k)
		}
	}
	return nil
}

// validateUnion: null for the null branch, else {"<branch>": value} with
// the branch's type name (full name for named types).
func validateUnion(t *Type, v any, path string) error {
	if v == nil {
		for _, b := range t.Branches {
			if b.Kind == Null {
				return nil
			}
		}
		return mismatch(path, t, v)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return fmt.Errorf("%s: a value of %s is null or {\"<branch>\": value}, got %s", pathOrRoot(path), describe(t), compactJSON(v))
	}
	for name, bv := range m {
		for _, b := range t.Branches {
			if branchName(b) == name {
				return validateValue(b, bv, path+"/"+name)
			}
		}
		return fmt.Errorf("%s: %s has no branch %q", pathOrRoot(path), describe(t), name)
	}
	return nil
}

func branchName(t *Type) string {
	if t.named() {
		return t.Name
	}
	return t.Kind.String()
}
