package schemaregistry

import (
	"context"
	"fmt"
	"strings"
)

// Change is one semantic difference between an old and a new schema,
// with what it does to readers on each side.
type Change struct {
	// Kind, for Avro: FIELD_ADDED, FIELD_REMOVED, FIELD_RENAMED,
	// TYPE_PROMOTED, TYPE_CHANGED, DEFAULT_ADDED, DEFAULT_REMOVED,
	// DEFAULT_CHANGED, ENUM_SYMBOL_ADDED, ENUM_SYMBOL_REMOVED,
	// ENUM_DEFAULT_CHANGED, UNION_BRANCH_ADDED, UNION_BRANCH_REMOVED,
	// NAME_CHANGED, FIXED_SIZE_CHANGED, DECIMAL_CHANGED,
	// LOGICAL_TYPE_CHANGED. For JSON Schema: Confluent's Difference.Type
	// names (jsonschema_compat.go), paths as JSON pointers ("#/properties/a").
	// For Protobuf: Confluent's Difference.Type names (package
	// schemaregistry/protobuf), paths "#/Message/oneof/number", the
	// field's name in Old (a removal) or New when the change is about a field.
	Kind string `json:"kind"`
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	// Backward: readers with the new schema still read data written with
	// the old one. Forward: readers with the old schema read new data.
	Backward bool `json:"backward"`
	Forward  bool `json:"forward"`
	// Levels is the verdict under each compatibility level.
	Levels map[string]bool `json:"levels"`
}

// Diff lists the semantic changes from old to new, each judged on its
// own (CheckLevel judges the whole pair).
func Diff(old, new *Type) []Change {
	d := &differ{seen: map[[2]*Type]bool{}}
	d.diff(old, new, "")
	for i := range d.changes {
		c := &d.changes[i]
		c.Levels = map[string]bool{None: true,
			Backward: c.Backward, BackwardTransitive: c.Backward,
			Forward: c.Forward, ForwardTransitive: c.Forward,
			Full: c.Backward && c.Forward, FullTransitive: c.Backward && c.Forward}
	}
	return d.changes
}

type differ struct {
	changes []Change
	seen    map[[2]*Type]bool
}

func (d *differ) add(kind, path, old, new string, backward, forward bool) {
	d.changes = append(d.changes, Change{Kind: kind, Path: pathOrRoot(path), Old: old, New: new, Backward: backward, Forward: forward})
}

// readable reports whether reader reads writer's data.
func readable(reader, writer *Type) bool {
	return len(CheckReadable(reader, writer, "new", "old")) == 0
}

func (d *differ) diff(o, n *Type, path string) {
	pair := [2]*Type{o, n}
	if d.seen[pair] {
		return
	}
	d.seen[pair] = true
	switch {
	case o.Kind == Union && n.Kind == Union:
		d.diffUnions(o, n, path)
		return
	case o.Kind != n.Kind:
		kind := "TYPE_CHANGED"
		if promotable(o.Kind, n.Kind) && o.Kind != Bytes && o.Kind != String {
			kind = "TYPE_PROMOTED"
		}
		d.add(kind, path, describe(o), describe(n), readable(n, o), readable(o, n))
		return
	}
	if o.named() && shortName(o.Name) != shortName(n.Name) {
		d.add("NAME_CHANGED", path, o.Name, n.Name, nameMatches(n, o), nameMatches(o, n))
	}
	d.diffLogical(o, n, path)
	switch o.Kind {
	case Record:
		d.diffRecords(o, n, path)
	case Enum:
		d.diffEnums(o, n, path)
	case Fixed:
		if o.Size != n.Size {
			d.add("FIXED_SIZE_CHANGED", path, fmt.Sprint(o.Size), fmt.Sprint(n.Size), false, false)
		}
	case Array:
		d.diff(o.Items, n.Items, path+"/items")
	case Map:
		d.diff(o.Values, n.Values, path+"/values")
	}
}

func (d *differ) diffLogical(o, n *Type, path string) {
	switch {
	case o.Logical == "decimal" && n.Logical == "decimal":
		if o.Precision != n.Precision || o.Scale != n.Scale {
			d.add("DECIMAL_CHANGED", path, describe(o), describe(n), false, false)
		}
	case o.Logical != n.Logical:
		d.add("LOGICAL_TYPE_CHANGED", path, o.Logical, n.Logical, true, true)
	}
}

func (d *differ) diffRecords(o, n *Type, path string) {
	for _, nf := range n.Fields {
		fpath := path + "/fields/" + nf.Name
		of := writerField(o, nf)
		switch {
		case of == nil:
			d.add("FIELD_ADDED", fpath, "", describe(nf.Type)+defaultNote(nf), nf.Default != nil, true)
			continue
		case of.Name != nf.Name:
			d.add("FIELD_RENAMED", fpath, of.Name, nf.Name, true, contains(of.Aliases, nf.Name))
		}
		d.diffDefaults(of, nf, fpath)
		d.diff(of.Type, nf.Type, fpath)
	}
	for _, of := range o.Fields {
		if writerField(n, of) == nil && !renamedTo(n, of.Name) {
			d.add("FIELD_REMOVED", path+"/fields/"+of.Name, describe(of.Type)+defaultNote(of), "", true, of.Default != nil)
		}
	}
}

func renamedTo(n *Type, oldName string) bool {
	if n.fieldByAlias != nil {
		return n.fieldByAlias[oldName] != nil
	}
	for _, f := range n.Fields {
		if contains(f.Aliases, oldName) {
			return true
		}
	}
	return false
}

func defaultNote(f *Field) string {
	if f.Default == nil {
		return " (no default)"
	}
	return " (default " + string(f.Default) + ")"
}

func (d *differ) diffDefaults(of, nf *Field, path string) {
	switch {
	case of.Default == nil && nf.Default != nil:
		d.add("DEFAULT_ADDED", path, "", string(nf.Default), true, true)
	case of.Default != nil && nf.Default == nil:
		d.add("DEFAULT_REMOVED", path, string(of.Default), "", true, true)
	case of.Default != nil && string(of.Default) != string(nf.Default):
		d.add("DEFAULT_CHANGED", path, string(of.Default), string(nf.Default), true, true)
	}
}

func (d *differ) diffEnums(o, n *Type, path string) {
	for _, s := range n.Symbols {
		if !hasSymbol(o, s) {
			d.add("ENUM_SYMBOL_ADDED", path, "", s, true, o.EnumDefault != nil)
		}
	}
	for _, s := range o.Symbols {
		if !hasSymbol(n, s) {
			d.add("ENUM_SYMBOL_REMOVED", path, s, "", n.EnumDefault != nil, true)
		}
	}
	od, nd := "", ""
	if o.EnumDefault != nil {
		od = *o.EnumDefault
	}
	if n.EnumDefault != nil {
		nd = *n.EnumDefault
	}
	if od != nd {
		d.add("ENUM_DEFAULT_CHANGED", path, od, nd, true, true)
	}
}

// diffUnions pairs branches by type (name for named types): unpaired new
// branches are added, unpaired old ones removed, pairs are compared.
func (d *differ) diffUnions(o, n *Type, path string) {
	matched := map[int]bool{}
	for ni, nb := range n.Branches {
		oi := branchIndex(o, nb)
		if oi < 0 {
			d.add("UNION_BRANCH_ADDED", fmt.Sprintf("%s/%d", path, ni), "", describe(nb), true, readable(o, nb))
			continue
		}
		matched[oi] = true
		d.diff(o.Branches[oi], nb, fmt.Sprintf("%s/%d", path, ni))
	}
	for oi, ob := range o.Branches {
		if !matched[oi] {
			d.add("UNION_BRANCH_REMOVED", fmt.Sprintf("%s/%d", path, oi), describe(ob), "", readable(n, ob), true)
		}
	}
}

func branchIndex(u, b *Type) int { return pairedBranch(u, b) }

// DescribeChanges is a one-line summary per change, for messages.
func DescribeChanges(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s at %s (%s → %s; backward %v, forward %v)", c.Kind, c.Path, c.Old, c.New, c.Backward, c.Forward)
	}
	return strings.Join(parts, "; ")
}

// DiffResult compares two versions of a subject, or a candidate schema
// with a version.
type DiffResult struct {
	Subject string  `json:"subject"`
	From    Version `json:"from"`
	// To is the newer version; zero for a candidate.
	To *Version `json:"to,omitempty"`
	// Compatibility is the verdict on the pair as a whole, per level.
	Compatibility map[string]bool `json:"compatibility"`
	Changes       []Change        `json:"changes"`
}

// Diff compares version from of subject with version to, or with the
// candidate when it is not nil. Versions may be Latest.
func (r *Registry) Diff(ctx context.Context, subject string, from, to int, candidate *SchemaRequest) (DiffResult, error) {
	fv, err := r.findVersion(ctx, subject, from, true)
	if err != nil {
		return DiffResult{}, err
	}
	old, err := r.schema(ctx, fv.ID)
	if err != nil {
		return DiffResult{}, err
	}
	res := DiffResult{Subject: subject, From: fv}
	var newer Schema
	if candidate != nil {
		p, err := r.prepare(ctx, *candidate)
		if err != nil {
			return DiffResult{}, err
		}
		newer = p.parsed
	} else {
		tv, err := r.findVersion(ctx, subject, to, true)
		if err != nil {
			return DiffResult{}, err
		}
		c, err := r.schema(ctx, tv.ID)
		if err != nil {
			return DiffResult{}, err
		}
		res.To, newer = &tv, c.parsed
	}
	res.Changes = changesBetween(old.parsed, newer)
	if res.Changes == nil {
		res.Changes = []Change{}
	}
	res.Compatibility = map[string]bool{}
	for _, level := range levels {
		res.Compatibility[level] = level == None || len(newer.Incompatibilities(level, old.parsed)) == 0
	}
	return res, nil
}

// changeLister is a Schema that lists its semantic changes from an older
// schema of its type.
type changeLister interface {
	Changes(older Schema) []Change
}

func changesBetween(older, newer Schema) []Change {
	if o, ok := older.(*avroSchema); ok {
		if n, ok := newer.(*avroSchema); ok {
			return Diff(o.Root, n.Root)
		}
	}
	if l, ok := newer.(changeLister); ok && older.Type() == newer.Type() {
		return l.Changes(older)
	}
	return nil
}
