// Package schemaregistry is ferry's schema registry for Avro, JSON Schema
// and Protobuf (package protobuf, adapted in protobuf_type.go), with Confluent
// Schema Registry's subjects, versions, ids, compatibility levels, modes
// and delete rules; package api serves it at Confluent's paths.
//
// Schema types: everything a schema's content decides — parsing,
// references, the canonical identity form, compatibility, what a payload
// framed with its id must be — sits behind SchemaType and Schema
// (schematype.go), implemented for AVRO (avro.go, compat.go, bounded.go)
// JSON (jsonschema*.go; docs/registry-jsonschema.md has its rules) and
// PROTOBUF (protobuf_type.go; docs/registry-protobuf.md).
// Subjects, versions, ids, references, modes and deletes are the same for
// every type.
//
// Data flow: a request reaches Registry, which resolves the references,
// parses the schema with its type, applies the rules (compatibility from
// the type, mode, deletes) and writes through a Store. Store keeps only rows and enforces uniqueness
// atomically; it has three implementations:
//
//   - EmbeddedStore: an append-only, fsynced JSON-lines journal in the
//     data dir with in-memory indexes, for the single-node default;
//   - TopicStore: the default on a cluster, the replicated single-partition
//     _schemas topic that every node consumes (read_committed) into the
//     same in-memory indexes (indexes.go). A write is decided by the node
//     it reached, against the whole committed state, inside a Kafka
//     transaction whose transactional id all nodes share: taking the id's
//     epoch fences the previous decider, so one decider at a time commits
//     and ids and versions stay unique (topicstore_decider.go). It writes
//     decided records keyed like Confluent's (SCHEMA subject+version,
//     the id high mark, settings) that state outcomes, so compaction keeps
//     about one record per live version and setting
//     (topicstore_decided.go). Older topics' intent records, decided by
//     every node as it applies them, are still read, and converted by the
//     first decision (topicstore.go);
//   - PostgresStore: pgx over PostgreSQL, migrations embedded; ids come
//     from a sequence and a subject's versions are assigned under a
//     transaction-scoped advisory lock on that subject (permanent deletes
//     take a registry-wide one), so nodes sharing a database never hand
//     out the same id or version while registrations to different
//     subjects commit concurrently; one registration is one function call
//     (migrations/0002_concurrent_writes.sql). Writes NOTIFY the other
//     nodes, whose caches drop what changed.
//
// Registry caches parsed schemas by id (immutable until a permanent
// delete), fingerprints → ids, and each subject's version rows. It stays
// correct when another node writes: a miss (unknown subject, version or
// schema) rereads the store before answering, a Store reports other
// writers' changes through Watch (PostgreSQL: LISTEN/NOTIFY; the topic:
// every record applied) so stale hits are dropped, and a registration whose
// view was stale fails its precondition in the store and is retried. On
// PostgreSQL a registration reads nothing its caches hold, nor the
// versions of a subject or the id of a fingerprint they lack (taken as
// none), nor a new subject's own settings: it hands the store what it
// assumed (NewVersion.Assumed) and the store refuses the write when any of
// it was wrong; the retry reads everything fresh. A
// store whose reads lag other nodes (TopicStore) is caught up to the
// topic's high watermark before every write and before those rereads.
//
// Untrusted JSON Schema: schemas are bounded in size, nesting and counts
// before the validator or the compatibility model sees them, a check stops
// after a fixed number of comparisons, and payloads are bounded in nesting
// before they are decoded; no $ref is ever loaded from outside the
// registry (jsonschema.go).
//
// Untrusted Avro: every decode of binary values (ParsedSchema.DecodeBinary,
// RenderBinary; broker enforcement through ValidateValue) first walks the
// value against the schema without allocating (bounded.go): counts and
// lengths must fit in the bytes left, the values one value holds are
// bounded, nesting stops at MaxAvroDepth (100) and a rendering at the
// caller's byte budget; only then does goavro decode it. Schemas are
// bounded too (MaxSchemaBytes, 20,000 named types, fields, symbols and
// union branches), and compatibility checks and diffs are linear in them.
//
// Identity: two registrations are the same schema when their fingerprints
// match — SHA-256 over the schema type, the canonical form (JSON Schema:
// the document with sorted keys; Avro: the normalized form, with full
// names, fixed key order, no doc or custom properties, but logicalType,
// precision, scale, defaults, aliases, order and enum defaults kept) and
// the references. Avro's Parsing Canonical Form alone would drop logical
// types and make decimal(10,2) and decimal(12,4) one schema. Protobuf's
// identity is its canonical form only with normalize=true; without it the
// written form (declaration order of fields, oneofs, enum values and
// imports kept), as Confluent's is (writtenIdentity, identityForm). Entries
// stored before the registry was multi-type carry no type and are AVRO.
package schemaregistry
