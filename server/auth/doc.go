// Package auth is ferry's one identity and permission vocabulary, shared by
// every surface (the Kafka listener, the HTTP gateway, the schema registry
// and the admin page): who a request runs as (Principal), what it asks to
// do (Action: an operation on a resource, from a host), and the interface
// that decides (Authorizer).
//
// The names and codes are Kafka's (KafkaPrincipal, AclOperation,
// ResourceType, PatternType, AclPermissionType) so ACLs written with
// Kafka's tools mean the same here; SUBJECT is ferry's addition for the
// schema registry. Decisions are plain code fed an Action, without I/O:
// the stores that feed them credentials and ACLs live beside it.
//
// Identity: SaslExchange is the server side of SCRAM-SHA-256/512 (RFC
// 5802, 7677) and PLAIN (RFC 4616), fed the client's tokens by the Kafka
// listener; it checks them against ScramCredential verifiers, never
// passwords. Credentials answer lookups from memory: CredentialSet is the
// in-memory twin, FileStore a single node's users.json (rewritten
// atomically, mode 0600), and ZKUserStore a
// cluster's /config/users in Kafka's own format (zkstore.go, over
// replication/zookeeper's entity-config znodes). API tokens likewise: a
// node's file or ZKTokenStore's /ferry/tokens.
package auth
