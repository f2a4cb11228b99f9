// Package schemaregistry is ferry's Avro schema registry, with Confluent
// Schema Registry's subjects, versions, ids, compatibility levels, modes
// and delete rules; package api serves it at Confluent's paths.
//
// Data flow: a request reaches Registry, which parses the schema
// (ParseAvro: validation, references, the normalized identity form),
// applies the rules (compatibility from compat.go, mode, deletes) and
// writes through a Store. Store keeps only rows and enforces uniqueness
// atomically; it has three implementations:
//
//   - EmbeddedStore: an append-only, fsynced JSON-lines journal in the
//     data dir with in-memory indexes, for the single-node default;
//   - TopicStore: the default on a cluster, the same entries as records of
//     the replicated single-partition _schemas topic that every node
//     consumes into the same in-memory indexes (indexes.go); a record is a
//     write's intent, decided identically on every node as it is applied,
//     so the partition's order alone makes ids unique (topicstore.go);
//   - PostgresStore: pgx over PostgreSQL, migrations embedded, ids and
//     versions assigned under a transaction-scoped advisory lock so nodes
//     sharing a database never hand out the same id or version; writes
//     NOTIFY the other nodes, whose caches drop what changed.
//
// Registry caches parsed schemas by id (immutable until a permanent
// delete), fingerprints → ids, and each subject's version rows. It stays
// correct when another node writes: a miss (unknown subject, version or
// schema) rereads the store before answering, a Store reports other
// writers' changes through Watch (PostgreSQL: LISTEN/NOTIFY; the topic:
// every record applied) so stale hits are dropped, and a registration whose
// view was stale fails its precondition in the store and is retried. A
// store whose reads lag other nodes (TopicStore) is caught up to the
// topic's high watermark before every write and before those rereads.
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
// match — SHA-256 over the schema type, the normalized form (full names,
// fixed key order, no doc or custom properties, but logicalType,
// precision, scale, defaults, aliases, order and enum defaults kept) and
// the references. Avro's Parsing Canonical Form alone would drop logical
// types and make decimal(10,2) and decimal(12,4) one schema.
package schemaregistry
