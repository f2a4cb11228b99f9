package protobuf

import (
	"regexp"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile/ast"
	"github.com/bufbuild/protocompile/parser"
	"github.com/bufbuild/protocompile/reporter"
)

// textMessage is a message as declared in the schema text, with the
// messages declared inside it: what Confluent's message indexes count.
type textMessage struct {
	name     string
	children []textMessage
}

// textForm is what the schema text says beyond its descriptor.
type textForm struct {
	// messages in declaration order, explicit map-entry messages included
	// and groups and map<K, V> fields' entries not.
	messages []textMessage
	// rewritten is the text with explicit map entries turned into map
	// fields, or "" when there were none.
	rewritten string
}

type textEdit struct {
	start, end int
	with       string
}

var mapEntryOption = regexp.MustCompile(`^option\s+map_entry\s*=\s*true\s*;$`)

// readTextForm parses the text (without validating it; compiling does
// that) for its message tree and for explicit map entries. Confluent's
// serializers register a schema they built from a compiled descriptor, and
// that text writes each map field as a repeated field of a nested message
// carrying `option map_entry = true;` — which protoc and protocompile
// refuse. Such a pair is rewritten into the map<K, V> field it stands for;
// the message still counts for message indexes, as it is in the text the
// registry stores.
func readTextForm(name, text string) (form textForm) {
	// protocompile's lexer can panic on malformed literals; its compiler
	// recovers and reports that, and so must this direct use of its parser.
	defer func() {
		if recover() != nil {
			form = textForm{}
		}
	}()
	// Any syntax error leaves the text as written: the compiler reports
	// it, and a partial syntax tree has missing parts.
	failed := false
	handler := reporter.NewHandler(reporter.NewReporter(func(reporter.ErrorWithPos) error {
		failed = true
		return nil
	}, nil))
	file, err := parser.Parse(name, strings.NewReader(text), handler)
	if err != nil || failed || file == nil {
		return textForm{}
	}
	r := textReader{file: file, text: text}
	for _, decl := range file.Decls {
		if m, ok := decl.(*ast.MessageNode); ok {
			form.messages = append(form.messages, r.message(m))
		}
	}
	if len(r.edits) > 0 {
		form.rewritten = r.apply()
	}
	return form
}

type textReader struct {
	file  *ast.FileNode
	text  string
	edits []textEdit
}

// span is the node's byte range; End's offset is that of the node's last
// byte.
func (r *textReader) span(n ast.Node) (int, int) {
	info := r.file.NodeInfo(n)
	return info.Start().Offset, info.End().Offset + 1
}

func (r *textReader) source(n ast.Node) string {
	start, end := r.span(n)
	if start < 0 || end > len(r.text) || start > end {
		return ""
	}
	return r.text[start:end]
}

func (r *textReader) message(m *ast.MessageNode) textMessage {
	tm := textMessage{name: m.Name.Val}
	entries := map[string]*ast.MessageNode{}
	for _, decl := range m.Decls {
		if nested, ok := decl.(*ast.MessageNode); ok {
			tm.children = append(tm.children, r.message(nested))
			if r.isMapEntry(nested) {
				entries[nested.Name.Val] = nested
			}
		}
	}
	used := map[string]bool{}
	for _, decl := range m.Decls {
		f, ok := decl.(*ast.FieldNode)
		if !ok || f.Name == nil || f.Tag == nil || f.FldType == nil || !f.Label.Repeated {
			continue
		}
		typeName := string(f.FldType.AsIdentifier())
		entryName := typeName[strings.LastIndex(typeName, ".")+1:]
		entry, ok := entries[entryName]
		if !ok || used[entryName] {
			continue
		}
		used[entryName] = true
		r.rewriteField(f, entry)
	}
	for name := range used {
		start, end := r.span(entries[name])
		r.edits = append(r.edits, textEdit{start, end, ""})
	}
	return tm
}

// isMapEntry reports a message that is exactly what protoc makes of a map
// field: the map_entry option, key = 1 and value = 2, nothing else.
func (r *textReader) isMapEntry(m *ast.MessageNode) bool {
	option, key, value := false, false, false
	for _, decl := range m.Decls {
		switch d := decl.(type) {
		case *ast.OptionNode:
			if !mapEntryOption.MatchString(r.source(d)) {
				return false
			}
			option = true
		case *ast.FieldNode:
			if d.Name == nil || d.Tag == nil || d.Label.KeywordNode != nil && d.Label.Val != "optional" {
				return false
			}
			switch {
			case d.Name.Val == "key" && d.Tag.Val == 1:
				key = true
			case d.Name.Val == "value" && d.Tag.Val == 2:
				value = true
			default:
				return false
			}
		case *ast.EmptyDeclNode:
		default:
			return false
		}
	}
	return option && key && value
}

func (r *textReader) rewriteField(f *ast.FieldNode, entry *ast.MessageNode) {
	var keyType, valueType string
	for _, decl := range entry.Decls {
		if fd, ok := decl.(*ast.FieldNode); ok {
			if fd.Name.Val == "key" {
				keyType = r.source(fd.FldType)
			} else {
				valueType = r.source(fd.FldType)
			}
		}
	}
	field := "map<" + keyType + ", " + valueType + "> " + f.Name.Val + " = " + r.source(f.Tag)
	if f.Options != nil {
		field += " " + r.source(f.Options)
	}
	start, end := r.span(f)
	r.edits = append(r.edits, textEdit{start, end, field + ";"})
}

func (r *textReader) apply() string {
	sort.Slice(r.edits, func(i, j int) bool { return r.edits[i].start > r.edits[j].start })
	text := r.text
	last := len(text) + 1
	for _, e := range r.edits {
		if e.start < 0 || e.end > len(text) || e.start > e.end || e.end > last {
			return "" // overlapping or odd spans: compile the text as written
		}
		text = text[:e.start] + e.with + text[e.end:]
		last = e.start
	}
	return text
}
