// Package tlsconf turns Kafka's PEM TLS settings (KIP-651) into crypto/tls
// configurations that follow their files: ssl.keystore.location is one PEM
// file holding the private key and the certificate chain,
// ssl.truststore.location one holding CA certificates, and
// ssl.client.auth is none, requested or required.
//
// A Source loads both files at Open and then, at most every CheckInterval,
// compares their modification times and sizes with what it loaded (one
// stat each, done on the handshake that asks for them). A changed file is
// loaded again and used by the next connection; a file that no longer
// parses keeps the previous material in use and logs an error, so an
// operator replacing certificates by hand never takes a listener down.
// Connections already open keep the certificates they were set up with.
//
// Servers take ServerConfig (GetConfigForClient hands each handshake the
// current material); clients take Dial or ClientConfig, which build a
// config per connection from the current material.
package tlsconf
