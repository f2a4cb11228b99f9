// Package api is ferry's HTTP gateway: chi routes that decode JSON, REST
// Proxy v2 and NDJSON bodies into records, hand them to the broker core
// (server.Broker) and encode its answers. It owns content types, encodings
// and error bodies; every rule about topics, partitions, sizes and offsets
// belongs to the core, so a Kafka client and an HTTP client meet the same ones.
//
// Every error answer is JSON {"error_code": <int>, "message": "..."} with the
// HTTP status of the first three digits of error_code (REST Proxy's habit),
// from the one table in errors.go.
package api
