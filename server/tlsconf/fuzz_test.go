package tlsconf

import (
	"bytes"
	"testing"

	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
)

// FuzzParseStores feeds arbitrary bytes to the keystore and truststore
// parsers: no panic, and a keystore that parses has a certificate.
func FuzzParseStores(f *testing.F) {
	ca := tlstest.NewCA(f, "fuzz CA")
	leaf := ca.Server(f, "broker")
	f.Add(leaf.KeystorePEM)
	f.Add(ca.PEM)
	f.Add(append(bytes.Clone(leaf.CertPEM), leaf.KeyPEM...))
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if cert, err := parseKeystore(data); err == nil && (cert == nil || len(cert.Certificate) == 0) {
			t.Fatal("a keystore parsed without a certificate")
		}
		if pool, err := parseTruststore(data); err == nil && pool == nil {
			t.Fatal("a truststore parsed without a pool")
		}
	})
}
