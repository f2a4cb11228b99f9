// Package tlstest makes throwaway certificates for tests: a CA, and
// server and client certificates it signs, written as PEM files in the
// layout ferry reads (a keystore holds the key and the chain, a
// truststore the CA). Nothing here is for production use; keys are made
// fresh per test and never checked in.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, as a truststore holds it.
	PEM []byte
}

// NewCA makes a CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Leaf is a certificate the CA signed, with its key.
type Leaf struct {
	Cert *x509.Certificate
	// KeystorePEM is the private key followed by the certificate and the
	// CA's (a chain), as ssl.keystore.location holds it.
	KeystorePEM []byte
	// CertPEM and KeyPEM are the two halves, for clients that take them
	// apart (kcat's ssl.certificate.location and ssl.key.location).
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// Server signs a server certificate for localhost and 127.0.0.1.
func (ca *CA) Server(t testing.TB, cn string) *Leaf {
	t.Helper()
	return ca.sign(t, cn, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client signs a client certificate whose subject CN is cn.
func (ca *CA) Client(t testing.TB, cn string) *Leaf {
	t.Helper()
	return ca.sign(t, cn, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) sign(t testing.TB, cn string, usage ...x509.ExtKeyUsage) *Leaf {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"ferry tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := &Leaf{Cert: cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
	l.KeystorePEM = append(append(append([]byte{}, l.KeyPEM...), l.CertPEM...), ca.PEM...)
	if l.TLS, err = tls.X509KeyPair(append(append([]byte{}, l.CertPEM...), ca.PEM...), l.KeyPEM); err != nil {
		t.Fatal(err)
	}
	return l
}

// Files is a keystore and truststore written to disk.
type Files struct {
	Dir, Keystore, Truststore string
	// Cert and Key are the leaf certificate and its key on their own.
	Cert, Key string
}

// Write writes leaf's keystore and ca's truststore (and the halves) to
// dir, under names that start with prefix.
func Write(t testing.TB, dir, prefix string, ca *CA, leaf *Leaf) Files {
	t.Helper()
	f := Files{Dir: dir,
		Keystore:   filepath.Join(dir, prefix+"-keystore.pem"),
		Truststore: filepath.Join(dir, prefix+"-truststore.pem"),
		Cert:       filepath.Join(dir, prefix+"-cert.pem"),
		Key:        filepath.Join(dir, prefix+"-key.pem")}
	for path, data := range map[string][]byte{f.Keystore: leaf.KeystorePEM, f.Truststore: ca.PEM, f.Cert: leaf.CertPEM, f.Key: leaf.KeyPEM} {
		WriteFile(t, path, data)
	}
	return f
}

// WriteFile replaces path with data atomically (a rename), as an
// operator's tooling should.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
