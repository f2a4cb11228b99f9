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
// subcommands' --tls flags write it before they dial (one command runs
// per process).
var TLS TLSSettings

// TLSSettings are the client side of an SSL listener.
type TLSSettings struct {
	// Enable speaks TLS to the brokers.
	Enable bool
	// CAFile holds the PEM CA certificates the brokers' certificates must
	// chain to; empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate (its chain may
	// follow) and its key, for listeners with ssl.client.auth.
	CertFile, KeyFile string
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
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate", s.CAFile)
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return []kgo.Opt{kgo.DialTLSConfig(cfg)}, nil
}
