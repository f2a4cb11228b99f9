package protobuf

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// isBase64Descriptor tells a schema sent as Confluent's Python (and C#)
// serializers send it, base64 of a serialized FileDescriptorProto, from
// .proto text: text always holds a ';', '{', a space or a quote, none of
// which base64 uses.
func isBase64Descriptor(text string) bool {
	if len(text) == 0 || len(text)%4 != 0 {
		return false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// descriptorText turns a base64 FileDescriptorProto into .proto text in
// declaration order, as Confluent's registry does when it is given one
// (it stores and serves the text form), so the schema is then parsed,
// stored and compared as if the text had been registered. deps are the
// referenced schemas' texts, which the descriptor's imports name.
func descriptorText(text string, deps map[string]string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return "", invalid("the schema is neither .proto text nor a base64 FileDescriptorProto: %v", err)
	}
	var fp descriptorpb.FileDescriptorProto
	// Nesting in the descriptor costs recursion here and in the printer;
	// the text it becomes is held to MaxDepth afterwards anyway.
	if err := (proto.UnmarshalOptions{RecursionLimit: 2*MaxDepth + 8}).Unmarshal(raw, &fp); err != nil {
		return "", invalid("the schema is base64 but not a FileDescriptorProto: %v", err)
	}
	if len(fp.Dependency) > MaxImports {
		return "", invalid("%d imports, more than the %d allowed", len(fp.Dependency), MaxImports)
	}
	// The imports are resolved by compiling a file that only imports them,
	// from the references' texts and the built-in files, as Parse would.
	stubName := "descriptor-imports.proto"
	for i := 0; ; i++ {
		if _, taken := deps[stubName]; !taken {
			break
		}
		stubName = fmt.Sprintf("descriptor-imports-%d.proto", i)
	}
	var stub strings.Builder
	stub.WriteString("syntax = \"proto3\";\n")
	for _, dep := range fp.Dependency {
		stub.WriteString("import " + strconv.Quote(dep) + ";\n")
	}
	linked, err := compile(stubName, stub.String(), deps)
	if err != nil {
		return "", err
	}
	_, files, err := standardDescriptors(linked)
	if err != nil {
		return "", err
	}
	fp.Name = proto.String(mainFileName)
	fd, err := protodesc.NewFile(&fp, files)
	if err != nil {
		return "", invalid("the FileDescriptorProto does not link: %v", err)
	}
	c := canonicalizer{f: &File{fd: fd, resolver: dynamicpb.NewTypes(files)}, keepOrder: true}
	return c.file(&fp), nil
}
