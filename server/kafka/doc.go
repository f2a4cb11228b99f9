// Package kafka is ferry's Kafka binary protocol listener: unmodified Kafka
// clients (franz-go, sarama, kafka-go, librdkafka/kcat, the Java client)
// produce, fetch and administer topics through it, over the same broker
// core (server.Broker) and group coordinator (group.Coordinator) as the
// HTTP gateway.
//
// Requests and responses are decoded and encoded with franz-go's kmsg,
// generated from Kafka's own message specs, so every version and flexible
// encoding (tagged fields) is handled by generated code; only the small
// request header is read here (dispatch.go). Each API lives in a file named
// by its key (00_produce.go, 01_fetch.go, …) that opens with the versions
// it serves and how it differs from Apache Kafka; apis.go is the one table
// of keys and version ranges, and ApiVersions advertises exactly that table.
//
// Data flow for one connection:
//
//	net.Conn ─► reader goroutine: frame (size checked against
//	            MaxRequestBytes; buffer grown as bytes arrive; large frames
//	            reserve from the node-wide budget) ─► header ─► kmsg decode
//	            ─► handler (core / coordinator) ─► encoded response
//	         ◄─ reader's own non-blocking write, when nothing is queued
//	         ◄─ writer goroutine ◄─ out channel (in request order)
//
// The reader serves one request at a time, as Kafka does per connection,
// so responses leave in request order. On plaintext TCP, when no response
// waits for the writer, the reader writes the answer itself with one
// non-blocking write (no goroutine wakeup per request); what the socket
// does not take, sendfile responses and every TLS response go through
// the writer, which overlaps the network write with reading the next
// request (pipelining) and alone waits for a slow client. A Fetch (v4+)
// response on a plaintext TCP connection is a hand-framed header plus open
// segment-file ranges the writer sends with sendfile (sendfile.go): its
// batches are never read into memory, so its allocations do not grow with
// its size; a small read at a log's tail is copied instead (one pread
// costs less than opening the file), as are Config.DisableSendfile and
// TLS listeners. A malformed or
// oversized frame, an unknown API key or a version outside the table closes
// that connection with a log line (ApiVersions is always answered); a panic
// in a handler is recovered, logged as a bug and closes only that
// connection.
//
// Identity (sasl.go): on a SASL_PLAINTEXT or SASL_SSL listener a
// connection serves only ApiVersions, SaslHandshake and SaslAuthenticate
// until one of server/auth's exchanges (SCRAM, PLAIN) ends well; then its
// requests carry User:<name> in their context, until the session's
// connections.max.reauth.ms runs out without a re-authentication. Frames
// before authentication are capped at 512 KiB, tokens at 4 KiB.
//
// Listeners (listeners.go): one Server serves every configured listener;
// each connection knows its listener's name and security protocol. A TLS
// listener's reader completes the handshake before the first request, and
// on SSL the client certificate's CN becomes the connection's principal.
// Metadata, FindCoordinator and DescribeCluster answer the endpoints of
// the listener the request came on.
//
// Resource limits (frame.go, Config): memory for frames is what has
// arrived, and frames above 64 KiB also hold their size of the node-wide
// QueuedMaxRequestBytes budget until served (a connection that does not
// fit stops reading); a started frame must arrive within
// RequestReadTimeout; connections beyond MaxConnections, or beyond their
// address's per-IP cap, are closed as soon as accepted; a Fetch answer is
// capped at FetchMaxBytes.
//
// Long-lived goroutines, all tracked by Server.wg and waited for by
// Shutdown: one accept loop per Serve call, and per connection a reader
// (fed by the socket) and a writer (fed by the reader's out channel).
// Shutdown stops accepting, lets each reader finish its current request
// (long-polling fetches return at once), and closes connections once their
// responses are written, or at once when its context ends.
package kafka
