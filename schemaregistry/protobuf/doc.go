// Package protobuf is the Protobuf schema type of ferry's schema registry:
// it parses a .proto schema with its references, gives the normalized form
// that identity and normalize=true use, checks compatibility with
// Confluent Schema Registry's rules, and handles the payloads that
// Confluent's Protobuf serializers write.
//
// Data flow: the registry hands Parse the schema text and the text of every
// referenced subject's schema, keyed by import path. Parse bounds the input
// (MaxSchemaBytes, MaxDepth, MaxImports, MaxTypes, MaxFields) before and
// after compiling it with protocompile, so hostile text costs at most a
// linear pass and a parse of a bounded size; the result is rebuilt as
// google.golang.org/protobuf descriptors, whose field lookups are indexed
// (protocompile's scan). The resulting *File is immutable and safe for
// concurrent use.
//
// Compatibility (compat.go) follows Confluent's protobuf-provider
// (SchemaDiff, MessageSchemaDiff, FieldSchemaDiff, EnumSchemaDiff): Diff
// lists every difference between two schemas with Confluent's difference
// names and paths ("#/Message/3"), and Check keeps the ones Confluent holds
// incompatible. Check takes the reader and the writer: BACKWARD passes the
// new schema as reader and the old one as writer, FORWARD the reverse.
//
// Payloads (framing.go, payload.go): a Confluent Protobuf record is the
// magic byte and schema id (the caller's business), then the message-index
// list (EncodeIndexes / DecodeIndexes) that names which message of the
// schema follows, then the message in Protobuf binary. Validate, ToJSON and
// FromJSON work on that message. Every decode first walks the bytes
// without allocating per value (walker): depth and the number of nested
// messages are bounded before dynamicpb allocates anything, and ToJSON
// proves the rendering fits the caller's budget, in bytes and in fields
// visited, before it renders (jsonbound.go).
package protobuf
