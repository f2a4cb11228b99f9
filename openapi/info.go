package openapi

// The general description that swag puts at the top of the spec (it reads
// this file first: `swag init -g info.go`).

//	@title			ferry
//	@version		1
//	@description	ferry is a Kafka-compatible broker with an HTTP gateway first: produce with
//	@description	`curl -X POST /kafka/orders -d '{"id":1}'` and read the record back over HTTP or with any Kafka client.
//	@description	One port serves the gateway (/kafka, /topics, /brokers, /cluster), Confluent REST Proxy v2 consumers
//	@description	(/consumers) and consumer groups (/groups), a Confluent-compatible schema registry (/subjects,
//	@description	/schemas, /config, /compatibility, /mode) and this description.
//	@description
//	@description	Every error answer is JSON `{"error_code": <int>, "message": "<what and why>"}`; the first three
//	@description	digits of error_code are the HTTP status (REST Proxy's habit).
//	@BasePath		/
//	@schemes		http https
//	@tag.name		gateway
//	@tag.description	Produce and read records over HTTP.
//	@tag.name		browser
//	@tag.description	Search a topic across partitions (key, value, header, JSON field, time range) with a scan budget and a resumable cursor; export as JSON lines or CSV; republish records.
//	@tag.name		topics
//	@tag.description	Create, describe, alter and delete topics; REST Proxy v2 produce.
//	@tag.name		cluster
//	@tag.description	Brokers, cluster and health.
//	@tag.name		consumers
//	@tag.description	Confluent REST Proxy v2 consumer instances backed by the group coordinator.
//	@tag.name		groups
//	@tag.description	Consumer groups, Kafka clients and HTTP consumers alike: members, offsets and lag.
//	@tag.name		schemas
//	@tag.description	Confluent-compatible schema registry.
//	@tag.name		ui
//	@tag.description	The admin page (web/).
//	@tag.name		docs
//	@tag.description	This description and Swagger UI.
