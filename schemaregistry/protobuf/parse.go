package protobuf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Bounds on an untrusted schema. They are far above any schema seen in
// practice (Confluent's own tests stay under a few hundred types) and keep
// every pass over a schema, including Check's, linear and small.
const (
	// MaxSchemaBytes bounds one schema's text, as the registry does for Avro.
	MaxSchemaBytes = 1 << 20
	// MaxDependencyBytes bounds the text of all referenced schemas together.
	MaxDependencyBytes = 16 << 20
	// MaxImports bounds the referenced schemas one schema may bring in.
	MaxImports = 1000
	// MaxDepth bounds the nesting of blocks ({…} and […]) in a schema.
	MaxDepth = 64
	// MaxTypes bounds messages and enums, nested ones included, over the
	// schema and its dependencies.
	MaxTypes = 20000
	// MaxFields bounds fields and enum values over the schema and its
	// dependencies.
	MaxFields = 100000
)

// ErrInvalidSchema is wrapped by every error Parse returns for bad input.
var ErrInvalidSchema = errors.New("invalid protobuf schema")

// File is a parsed, linked Protobuf schema. It is immutable.
type File struct {
	// fd is the schema rebuilt with google.golang.org/protobuf's own
	// descriptors: protocompile's find fields by number and name with a
	// linear scan, which makes decoding a payload of a wide message
	// quadratic; these index them.
	fd protoreflect.FileDescriptor
	// source is protocompile's result, kept for what only the source
	// says (the descriptor proto as written, for the normalized form).
	source linker.File
	// resolver finds every type of the schema and of its dependencies, for
	// Any, extensions and protojson.
	resolver *dynamicpb.Types
	// fromDescriptor is the text a base64 FileDescriptorProto was turned
	// into, "" for a schema given as text.
	fromDescriptor string
	// imports of the schema file itself, in declaration order.
	imports []string
	// messages is the tree of messages that message indexes count.
	messages []textMessage
}

// mainFileName is the path the schema compiles under; it only shows in
// error positions. It changes when a dependency already uses the name.
const mainFileName = "schema.proto"

// Parse compiles a .proto schema (proto2 or proto3), given as text or, as
// Confluent's Python serializers send it, as a base64 FileDescriptorProto
// (which becomes text: Written and Canonical are then those of the text
// the descriptor stands for). deps maps each import
// path to the text of the schema that the reference names; Google's
// well-known types (google/protobuf/*.proto) and Confluent's
// confluent/meta.proto and confluent/type/decimal.proto are built in.
func Parse(text string, deps map[string]string) (*File, error) {
	if err := checkInputBounds(text, deps); err != nil {
		return nil, err
	}
	if isBase64Descriptor(text) {
		converted, err := descriptorText(text, deps)
		if err != nil {
			return nil, err
		}
		f, err := Parse(converted, deps)
		if err != nil {
			return nil, err
		}
		f.fromDescriptor = converted
		return f, nil
	}
	name := mainFileName
	for i := 0; ; i++ {
		if _, taken := deps[name]; !taken {
			break
		}
		name = fmt.Sprintf("schema-%d.proto", i)
	}
	form := textForm{}
	compiled := text
	if strings.Contains(text, "map_entry") {
		form = readTextForm(name, text)
		if form.rewritten != "" {
			compiled = form.rewritten
		}
	}
	fd, err := compile(name, compiled, deps)
	if err != nil {
		return nil, err
	}
	if err := checkCompiledBounds(fd); err != nil {
		return nil, err
	}
	std, files, err := standardDescriptors(fd)
	if err != nil {
		return nil, err
	}
	f := &File{fd: std, source: fd, resolver: dynamicpb.NewTypes(files), messages: form.messages}
	if form.messages == nil {
		f.messages = descriptorMessages(std.Messages())
	}
	imps := fd.Imports()
	for i := 0; i < imps.Len(); i++ {
		f.imports = append(f.imports, imps.Get(i).Path())
	}
	return f, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSchema, fmt.Sprintf(format, args...))
}

func checkInputBounds(text string, deps map[string]string) error {
	if len(text) == 0 {
		return invalid("the schema is empty")
	}
	if len(text) > MaxSchemaBytes {
		return invalid("the schema has %d bytes, more than the %d allowed", len(text), MaxSchemaBytes)
	}
	if len(deps) > MaxImports {
		return invalid("%d referenced schemas, more than the %d allowed", len(deps), MaxImports)
	}
	if err := checkNesting("the schema", text); err != nil {
		return err
	}
	total := 0
	for path, dep := range deps {
		if len(dep) > MaxSchemaBytes {
			return invalid("referenced schema %q has %d bytes, more than the %d allowed", path, len(dep), MaxSchemaBytes)
		}
		total += len(dep)
		if total > MaxDependencyBytes {
			return invalid("referenced schemas have more than the %d bytes allowed together", MaxDependencyBytes)
		}
		if err := checkNesting(fmt.Sprintf("referenced schema %q", path), dep); err != nil {
			return err
		}
	}
	return nil
}

// checkNesting measures block nesting with a linear scan that skips
// comments and string literals, so the parser never recurses deeper than
// MaxDepth on hostile text.
func checkNesting(what, text string) error {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '/':
			if i+1 < len(text) && text[i+1] == '/' {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			} else if i+1 < len(text) && text[i+1] == '*' {
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					return nil // unterminated comment: the parser reports it
				}
				i += end + 3
			}
		case '"', '\'':
			for i++; i < len(text) && text[i] != c && text[i] != '\n'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '{', '[', '(', '<':
			depth++
			if depth > MaxDepth {
				return invalid("%s nests blocks deeper than %d", what, MaxDepth)
			}
		case '}', ']', ')', '>':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

func compile(name, text string, deps map[string]string) (linker.File, error) {
	accessor := func(path string) (io.ReadCloser, error) {
		if path == name {
			return io.NopCloser(strings.NewReader(text)), nil
		}
		if dep, ok := deps[path]; ok {
			if strings.Contains(dep, "map_entry") {
				if form := readTextForm(path, dep); form.rewritten != "" {
					dep = form.rewritten
				}
			}
			return io.NopCloser(strings.NewReader(dep)), nil
		}
		if builtin, ok := confluentBuiltins[path]; ok {
			return io.NopCloser(strings.NewReader(builtin)), nil
		}
		return nil, os.ErrNotExist
	}
	var errs []string
	rep := reporter.NewReporter(func(err reporter.ErrorWithPos) error {
		if len(errs) < 10 {
			errs = append(errs, err.Error())
		}
		return nil // keep going, to report several errors at once
	}, nil)
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: accessor}),
		MaxParallelism: 1,
		Reporter:       rep,
	}
	files, err := c.Compile(context.Background(), name)
	if len(errs) > 0 {
		return nil, invalid("%s", strings.Join(errs, "; "))
	}
	var crashed protocompile.PanicError
	if errors.As(err, &crashed) {
		// protocompile's lexer panics on some malformed literals.
		return nil, invalid("%s: malformed text the parser cannot read (check string literals)", crashed.File)
	}
	if err != nil {
		var notFound interface{ Unwrap() error }
		if errors.As(err, &notFound) && errors.Is(err, os.ErrNotExist) {
			return nil, invalid("%v (each import needs a reference to a registered schema)", err)
		}
		return nil, invalid("%v", err)
	}
	return files[0], nil
}

// standardDescriptors rebuilds the compiled file and everything it imports
// as google.golang.org/protobuf descriptors in a registry of their own. The
// well-known types protocompile took from this binary are reused as they
// are.
func standardDescriptors(fd linker.File) (protoreflect.FileDescriptor, *protoregistry.Files, error) {
	files := new(protoregistry.Files)
	built := map[string]protoreflect.FileDescriptor{}
	var build func(f protoreflect.FileDescriptor) (protoreflect.FileDescriptor, error)
	build = func(f protoreflect.FileDescriptor) (protoreflect.FileDescriptor, error) {
		if std, ok := built[f.Path()]; ok {
			return std, nil
		}
		imps := f.Imports()
		for i := 0; i < imps.Len(); i++ {
			if _, err := build(imps.Get(i).FileDescriptor); err != nil {
				return nil, err
			}
		}
		std := unwrapGlobal(f)
		if std == nil {
			var err error
			if std, err = protodesc.NewFile(protodesc.ToFileDescriptorProto(f), files); err != nil {
				return nil, invalid("%v", err)
			}
		}
		if err := files.RegisterFile(std); err != nil {
			return nil, invalid("%v", err)
		}
		built[f.Path()] = std
		return std, nil
	}
	std, err := build(fd)
	if err != nil {
		return nil, nil, err
	}
	return std, files, nil
}

// unwrapGlobal returns the descriptor compiled into this binary that
// protocompile served for a well-known import, or nil.
func unwrapGlobal(f protoreflect.FileDescriptor) protoreflect.FileDescriptor {
	if u, ok := f.(interface {
		Unwrap() protoreflect.FileDescriptor
	}); ok {
		f = u.Unwrap()
	}
	if global, err := protoregistry.GlobalFiles.FindFileByPath(f.Path()); err == nil && global == f {
		return global
	}
	return nil
}

func checkCompiledBounds(fd linker.File) error {
	var types, fields int
	seen := map[string]bool{}
	var visitFile func(f protoreflect.FileDescriptor) error
	visitFile = func(f protoreflect.FileDescriptor) error {
		if seen[f.Path()] {
			return nil
		}
		seen[f.Path()] = true
		if f.Syntax() != protoreflect.Proto2 && f.Syntax() != protoreflect.Proto3 {
			return invalid("%s: only proto2 and proto3 syntax are supported, not %s", f.Path(), f.Syntax())
		}
		types += f.Enums().Len()
		fields += countEnumValues(f.Enums()) + f.Extensions().Len()
		for i := 0; i < f.Messages().Len(); i++ {
			countMessage(f.Messages().Get(i), &types, &fields)
		}
		if types > MaxTypes {
			return invalid("more than %d messages and enums", MaxTypes)
		}
		if fields > MaxFields {
			return invalid("more than %d fields and enum values", MaxFields)
		}
		imps := f.Imports()
		for i := 0; i < imps.Len(); i++ {
			if err := visitFile(imps.Get(i).FileDescriptor); err != nil {
				return err
			}
		}
		return nil
	}
	return visitFile(fd)
}

func countMessage(md protoreflect.MessageDescriptor, types, fields *int) {
	*types += 1 + md.Enums().Len()
	*fields += md.Fields().Len() + md.Extensions().Len() + countEnumValues(md.Enums())
	for i := 0; i < md.Messages().Len(); i++ {
		countMessage(md.Messages().Get(i), types, fields)
	}
}

func countEnumValues(enums protoreflect.EnumDescriptors) int {
	n := 0
	for i := 0; i < enums.Len(); i++ {
		n += enums.Get(i).Values().Len()
	}
	return n
}

// Imports returns the import paths of the schema, in declaration order,
// well-known and Confluent built-in imports included.
func (f *File) Imports() []string { return append([]string(nil), f.imports...) }

// DescriptorText is the .proto text of a schema that was given as a base64
// FileDescriptorProto, and false for one given as text: Confluent's
// registry stores and serves that text, not the base64.
func (f *File) DescriptorText() (string, bool) { return f.fromDescriptor, f.fromDescriptor != "" }

// Package returns the schema's package name ("" when it has none).
func (f *File) Package() string { return string(f.fd.Package()) }

// Syntax returns "proto2" or "proto3".
func (f *File) Syntax() string { return f.fd.Syntax().String() }

// Descriptor returns the linked file descriptor, for callers that build
// messages themselves.
func (f *File) Descriptor() protoreflect.FileDescriptor { return f.fd }

// MessageNames returns the full names of the schema's messages, nested ones
// included (map entries excluded), in the order of their message indexes.
func (f *File) MessageNames() []string {
	var names []string
	var walk func(prefix string, msgs []textMessage)
	walk = func(prefix string, msgs []textMessage) {
		for _, m := range msgs {
			names = append(names, prefix+m.name)
			walk(prefix+m.name+".", m.children)
		}
	}
	prefix := ""
	if pkg := f.Package(); pkg != "" {
		prefix = pkg + "."
	}
	walk(prefix, f.messages)
	return names
}

// IsBuiltinImport reports whether Parse resolves the import path itself,
// so the schema needs no reference for it.
func IsBuiltinImport(path string) bool {
	if _, ok := confluentBuiltins[path]; ok {
		return true
	}
	return strings.HasPrefix(path, "google/protobuf/") && isStandardImport(path)
}
