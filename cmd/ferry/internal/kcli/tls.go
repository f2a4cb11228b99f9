package kcli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TLS is how every client of this process connects: the client
// subcommands' --tls flags (or a Kafka script's --command-config) write
// it before they dial (one command runs per process).
var TLS TLSSettings

// TLSSettings are the client side of an SSL listener.
type TLSSettings struct {
	// Enable speaks TLS to the brokers.
	Enable bool
	// CAFile holds the PEM CA certificates the brokers' certificates must
	// chain to; CAPEM holds them inline (Kafka's
	// ssl.truststore.certificates); both empty: the system's roots.
	CAFile, CAPEM string
	// CertFile and KeyFile are a PEM client certificate (its chain may
	// follow) and its key, for listeners with ssl.client.auth; CertPEM
	// and KeyPEM are the same inline.
	CertFile, KeyFile string
	CertPEM, KeyPEM   string
	// SkipHostname checks the brokers' chains but not their names
	// (Kafka's empty ssl.endpoint.identification.algorithm).
	SkipHostname bool
}

// opts are the kgo options that make a client speak TLS (none when off).
func (s TLSSettings) opts() ([]kgo.Opt, error) {
	if !s.Enable {
		if s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" {
			return nil, errors.New("--tls-ca-file, --tls-cert-file and --tls-key-file need --tls")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true}
	roots, err := s.roots()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots
	if (s.CertFile == "") != (s.KeyFile == "") || (s.CertPEM == "") != (s.KeyPEM == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	switch {
	case s.CertFile != "":
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case s.CertPEM != "":
		cert, err := tls.X509KeyPair([]byte(s.CertPEM), []byte(s.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.certificate.chain/ssl.keystore.key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if s.SkipHostname {
		skipHostnameCheck(cfg)
	}
	return []kgo.Opt{kgo.DialTLSConfig(cfg)}, nil
}

// roots are the CA certificates to trust; nil: the system's.
func (s TLSSettings) roots() (*x509.CertPool, error) {
	if s.CAFile == "" && s.CAPEM == "" {
		return nil, nil
	}
	pem := []byte(s.CAPEM)
	if s.CAFile != "" {
		data, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		pem = append(append(pem, '\n'), data...)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate", s.CAFile)
	}
	return pool, nil
}

// skipHostnameCheck verifies the chain itself, since turning off Go's
// check turns off both.
func skipHostnameCheck(cfg *tls.Config) {
	roots := cfg.RootCAs
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the broker sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}
