// Package acl is ferry's authorizer: Kafka's ACL model, bindings of
// (principal, host, operation, ALLOW/DENY) to resource patterns, and the
// rules Kafka's AclAuthorizer decides them by:
//
//   - a binding applies to a resource when its pattern is LITERAL with the
//     resource's name or the wildcard name "*", or PREFIXED with a prefix of
//     the resource's name;
//   - its principal is the request's or the wildcard User:*, its host the
//     client's IP or "*";
//   - DENY wins over ALLOW; ALL matches every operation; an ALLOW of READ,
//     WRITE, DELETE or ALTER also allows DESCRIBE, an ALLOW of ALTER_CONFIGS
//     also DESCRIBE_CONFIGS (a DENY implies nothing);
//   - super.users are always allowed; when no binding applies to the
//     resource at all, allow.everyone.if.no.acl.found decides (default:
//     denied).
//
// Data flow: a Store (FileStore on a single node, ZKStore on a cluster)
// holds the bindings durably and feeds every change into the Authorizer's
// in-memory index, which requests only read (Authorize takes no lock and
// allocates nothing: the index is an immutable snapshot swapped on each
// change). Manager is the one core the Kafka APIs (DescribeAcls,
// CreateAcls, DeleteAcls) and the HTTP routes call: it validates, matches
// filters against the index and writes through the store.
package acl
