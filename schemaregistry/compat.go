package schemaregistry

import (
	"fmt"
	"strings"
)

// Incompatibility is one reason a reader schema cannot read data written
// with a writer schema, under Avro's schema-resolution rules.
type Incompatibility struct {
	// Type is one of Avro's SchemaIncompatibilityType names
	// (NAME_MISMATCH, FIXED_SIZE_MISMATCH, MISSING_ENUM_SYMBOLS,
	// READER_FIELD_MISSING_DEFAULT_VALUE, TYPE_MISMATCH,
	// MISSING_UNION_BRANCH) or DECIMAL_MISMATCH.
	Type string `json:"errorType"`
	// Path locates the change in the reader schema: /fields/<name>,
	// /items, /values, /<union branch index>.
	Path string `json:"path"`
	// Description says what changed, in terms of the new and old schema.
	Description string `json:"description"`
}

func (i Incompatibility) String() string {
	return fmt.Sprintf("{errorType:'%s', description:'%s', path:'%s'}", i.Type, i.Description, i.Path)
}

// CheckReadable reports every way reader fails to read data written with
// writer. readerRole and writerRole ("new", "old") go into descriptions.
func CheckReadable(reader, writer *Type, readerRole, writerRole string) []Incompatibility {
	c := &checker{reader: readerRole, writer: writerRole, checked: map[[2]*Type]bool{}}
	c.check(reader, writer, "")
	return c.found
}

type checker struct {
	reader, writer string
	found          []Incompatibility
	// checked holds the pairs checked or being checked: each is checked
	// once, at its first path, as Avro's own checker memoizes pairs, so
	// recursive types terminate and a type used at many paths (2^n in n
	// nested records) costs one check.
	checked map[[2]*Type]bool
}

func (c *checker) add(kind, path, format string, args ...any) {
	c.found = append(c.found, Incompatibility{Type: kind, Path: pathOrRoot(path), Description: fmt.Sprintf(format, args...)})
}

func (c *checker) check(r, w *Type, path string) {
	pair := [2]*Type{r, w}
	if c.checked[pair] {
		return
	}
	c.checked[pair] = true

	if w.Kind == Union {
		// Every branch the writer may have written must be readable.
		for i, wb := range w.Branches {
			if r.Kind == Union || r.Kind == wb.Kind || promotable(wb.Kind, r.Kind) {
				c.check(r, wb, path)
				continue
			}
			c.add("MISSING_UNION_BRANCH", fmt.Sprintf("%s/%d", path, i),
				"the %s schema's union branch %d (%s) at '%s' cannot be read by the %s schema's %s",
				c.writer, i, describe(wb), pathOrRoot(path), c.reader, describe(r))
		}
		return
	}
	if r.Kind == Union {
		c.checkReaderUnion(r, w, path)
		return
	}
	if r.Kind != w.Kind {
		if !promotable(w.Kind, r.Kind) {
			c.add("TYPE_MISMATCH", path, "the type at '%s' changed from %s in the %s schema to %s in the %s schema, which cannot read it",
				pathOrRoot(path), describe(w), c.writer, describe(r), c.reader)
			return
		}
		c.checkDecimal(r, w, path)
		return
	}
	switch r.Kind {
	case Record:
		c.checkRecord(r, w, path)
	case Enum:
		c.checkEnum(r, w, path)
	case Fixed:
		if c.checkName(r, w, path) && r.Size != w.Size {
			c.add("FIXED_SIZE_MISMATCH", path, "the size of fixed %s at '%s' changed from %d in the %s schema to %d in the %s schema",
				r.Name, pathOrRoot(path), w.Size, c.writer, r.Size, c.reader)
		}
		c.checkDecimal(r, w, path)
	case Array:
		c.check(r.Items, w.Items, path+"/items")
	case Map:
		c.check(r.Values, w.Values, path+"/values")
	default:
		c.checkDecimal(r, w, path)
	}
}

// promotable is Avro's list of writer → reader promotions.
func promotable(w, r Kind) bool {
	switch w {
	case Int:
		return r == Long || r == Float || r == Double
	case Long:
		return r == Float || r == Double
	case Float:
		return r == Double
	case String:
		return r == Bytes
	case Bytes:
		return r == String
	}
	return false
}

// checkReaderUnion resolves a non-union writer against a reader union as
// Avro does: the first branch of the same type (same name for named
// types), else the first branch the writer's type promotes to.
func (c *checker) checkReaderUnion(r, w *Type, path string) {
	i := readerBranch(r, w)
	if i < 0 {
		i = promotedBranch(r, w)
	}
	if i >= 0 {
		c.check(r.Branches[i], w, fmt.Sprintf("%s/%d", path, i))
		return
	}
	c.add("MISSING_UNION_BRANCH", path, "the %s schema's union at '%s' has no branch that reads %s written by the %s schema",
		c.reader, pathOrRoot(path), describe(w), c.writer)
}

// nameMatches is Avro's rule for named types: the same unqualified name,
// or a reader alias equal to the writer's full name.
func nameMatches(r, w *Type) bool {
	return shortName(r.Name) == shortName(w.Name) || contains(r.Aliases, w.Name)
}

func shortName(full string) string { return full[strings.LastIndexByte(full, '.')+1:] }

func (c *checker) checkName(r, w *Type, path string) bool {
	if nameMatches(r, w) {
		return true
	}
	c.add("NAME_MISMATCH", path, "the name of the %s at '%s' changed from %s in the %s schema to %s in the %s schema, which has no alias for it",
		r.Kind, pathOrRoot(path), w.Name, c.writer, r.Name, c.reader)
	return false
}

func (c *checker) checkRecord(r, w *Type, path string) {
	if !c.checkName(r, w, path) {
		return
	}
	for _, rf := range r.Fields {
		fpath := path + "/fields/" + rf.Name
		wf := writerField(w, rf)
		if wf == nil {
			if rf.Default == nil {
				c.add("READER_FIELD_MISSING_DEFAULT_VALUE", fpath, "the field '%s' at '%s' in the %s schema has no default value and is missing in the %s schema",
					rf.Name, fpath, c.reader, c.writer)
			}
			continue
		}
		c.check(rf.Type, wf.Type, fpath)
	}
}

// writerField finds the writer's field for a reader field, by name or by
// one of the reader field's aliases.
func writerField(w *Type, rf *Field) *Field {
	if w.fieldByName != nil {
		if wf := w.fieldByName[rf.Name]; wf != nil {
			return wf
		}
		for _, a := range rf.Aliases {
			if wf := w.fieldByName[a]; wf != nil {
				return wf
			}
		}
		return nil
	}
	for _, wf := range w.Fields {
		if wf.Name == rf.Name {
			return wf
		}
	}
	for _, a := range rf.Aliases {
		for _, wf := range w.Fields {
			if wf.Name == a {
				return wf
			}
		}
	}
	return nil
}

func (c *checker) checkEnum(r, w *Type, path string) {
	if !c.checkName(r, w, path) || r.EnumDefault != nil {
		return
	}
	var missing []string
	for _, s := range w.Symbols {
		if !hasSymbol(r, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		c.add("MISSING_ENUM_SYMBOLS", path, "the enum %s at '%s' in the %s schema lacks symbols [%s] of the %s schema and has no default",
			r.Name, pathOrRoot(path), c.reader, strings.Join(missing, ", "), c.writer)
	}
}

// checkDecimal: when both sides are decimals, their precision and scale
// say what the bytes mean, so changing them breaks readers even though
// Avro's resolution would decode the bytes. A logical type on one side
// only resolves as its underlying type, as Avro's own rules say.
func (c *checker) checkDecimal(r, w *Type, path string) {
	if r.Logical != "decimal" || w.Logical != "decimal" || (r.Precision == w.Precision && r.Scale == w.Scale) {
		return
	}
	c.add("DECIMAL_MISMATCH", path, "the decimal at '%s' changed from %s in the %s schema to %s in the %s schema; its values would be read with another precision or scale",
		pathOrRoot(path), describe(w), c.writer, describe(r), c.reader)
}
