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
package auth
