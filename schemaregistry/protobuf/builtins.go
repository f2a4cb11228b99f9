package protobuf

import "google.golang.org/protobuf/reflect/protoregistry"

// confluentBuiltins are the schemas Confluent's registry resolves without
// a reference: the field/message metadata options its serializers and rules
// use, and the decimal logical type. They are interface definitions, kept
// field-for-field identical to Confluent's so that payloads and options
// written against them read back the same.
var confluentBuiltins = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;

import "google/protobuf/descriptor.proto";

option java_package = "io.confluent.protobuf";
option java_outer_classname = "MetaProto";

message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}

message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}

extend google.protobuf.FileOptions {
  Meta file_meta = 1088;
}
extend google.protobuf.MessageOptions {
  Meta message_meta = 1088;
}
extend google.protobuf.FieldOptions {
  Meta field_meta = 1088;
}
extend google.protobuf.EnumOptions {
  Meta enum_meta = 1088;
}
extend google.protobuf.EnumValueOptions {
  Meta enum_value_meta = 1088;
}
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;

option java_package = "io.confluent.protobuf.type";
option java_multiple_files = true;
option java_outer_classname = "DecimalProto";

message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
}

// isStandardImport reports whether protocompile serves path from the
// well-known types compiled into this binary.
func isStandardImport(path string) bool {
	_, err := protoregistry.GlobalFiles.FindFileByPath(path)
	return err == nil
}
