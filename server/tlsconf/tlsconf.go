package tlsconf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// ClientAuth is ssl.client.auth.
type ClientAuth int8

const (
	ClientAuthNone      ClientAuth = iota // none: no client certificate is asked for
	ClientAuthRequested                   // requested: asked for, verified when given
	ClientAuthRequired                    // required: a handshake without a valid one fails
)

// ParseClientAuth reads ssl.client.auth.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return ClientAuthNone, nil
	case "requested":
		return ClientAuthRequested, nil
	case "required":
		return ClientAuthRequired, nil
	}
	return ClientAuthNone, fmt.Errorf("ssl.client.auth %q: want none, requested or required", s)
}

func (a ClientAuth) String() string {
	return [...]string{"none", "requested", "required"}[a]
}

// DefaultCheckInterval is how often a Source looks at its files.
const DefaultCheckInterval = 2 * time.Second

// Files are one listener's (or client's) TLS settings, Kafka's names.
type Files struct {
	// KeystoreLocation is ssl.keystore.location: PEM, the private key
	// (unencrypted, PKCS#1, PKCS#8 or SEC 1) and the certificate chain,
	// leaf first. Required to serve; optional for a client (its
	// certificate, for servers that ask for one).
	KeystoreLocation string
	// KeyPassword is ssl.key.password. Encrypted keys are refused: a
	// password in a properties file next to the key protects nothing.
	KeyPassword string
	// TruststoreLocation is ssl.truststore.location: PEM CA certificates
	// that client certificates (server side) or the server's certificate
	// (client side) must chain to. Empty on a client: the system's roots.
	TruststoreLocation string
	// ClientAuth is ssl.client.auth, for servers.
	ClientAuth ClientAuth
	// SkipHostnameVerification is ssl.endpoint.identification.algorithm
	// set empty: as a client, the server's certificate must still chain
	// to the truststore, but need not name the host dialled.
	SkipHostnameVerification bool
	// CheckInterval bounds how often the files are looked at again
	// (default DefaultCheckInterval; negative: never).
	CheckInterval time.Duration
}

// material is what the files held when they were last loaded.
type material struct {
	cert  *tls.Certificate // nil: no keystore
	roots *x509.CertPool   // nil: no truststore
}

// fileStamp identifies a version of a file by its content: a replacement
// written within the file system's timestamp granularity and of the same
// size (a renewed certificate often is) has the old modification time and
// size, and was missed when those were the stamp (TestReload, 2 in 30).
// The files are small and read at most every CheckInterval.
type fileStamp [sha256.Size]byte

// Source is TLS material that follows its files. Safe for concurrent use.
type Source struct {
	files  Files
	logger *slog.Logger
	now    func() time.Time

	mu struct {
		sync.Mutex
		current       material
		checked       time.Time
		key, trust    fileStamp
		failedKey     fileStamp // the broken version last logged, so it is logged once
		failedTrust   fileStamp
		reloads       int
		lastReloadErr error
	}
}

// Open loads the files; a file that is missing or does not parse is an
// error here, where an operator sees it at once.
func Open(files Files, logger *slog.Logger) (*Source, error) {
	if files.CheckInterval == 0 {
		files.CheckInterval = DefaultCheckInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	if files.KeyPassword != "" {
		return nil, errors.New("ssl.key.password: encrypted private keys are not supported; store the key unencrypted in ssl.keystore.location and protect the file (mode 0600)")
	}
	if files.ClientAuth != ClientAuthNone && files.TruststoreLocation == "" {
		return nil, fmt.Errorf("ssl.client.auth=%s needs ssl.truststore.location: the CA certificates client certificates must chain to", files.ClientAuth)
	}
	s := &Source{files: files, logger: logger.With("component", "tls"), now: time.Now}
	m, key, trust, err := s.load()
	if err != nil {
		return nil, err
	}
	s.mu.current, s.mu.key, s.mu.trust, s.mu.checked = m, key, trust, s.now()
	return s, nil
}

// HasCertificate reports whether a keystore is configured, as a server
// needs.
func (s *Source) HasCertificate() bool { return s.files.KeystoreLocation != "" }

// Reloads counts the times changed files were loaded after Open.
func (s *Source) Reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.reloads
}

// load reads both files.
func (s *Source) load() (m material, key, trust fileStamp, err error) {
	if p := s.files.KeystoreLocation; p != "" {
		if key, err = stamp(p); err != nil {
			return m, key, trust, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		if m.cert, err = loadKeystore(p); err != nil {
			return m, key, trust, fmt.Errorf("ssl.keystore.location %s: %w", p, err)
		}
	}
	if p := s.files.TruststoreLocation; p != "" {
		if trust, err = stamp(p); err != nil {
			return m, key, trust, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		if m.roots, err = loadTruststore(p); err != nil {
			return m, key, trust, fmt.Errorf("ssl.truststore.location %s: %w", p, err)
		}
	}
	return m, key, trust, nil
}

func stamp(path string) (fileStamp, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fileStamp{}, err
	}
	return sha256.Sum256(data), nil
}

// current is the material to use now, loaded again first when a file
// changed since the last look (at most every CheckInterval).
func (s *Source) current() material {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.files.CheckInterval < 0 || now.Sub(s.mu.checked) < s.files.CheckInterval {
		return s.mu.current
	}
	s.mu.checked = now
	key, keyErr := s.stampOf(s.files.KeystoreLocation)
	trust, trustErr := s.stampOf(s.files.TruststoreLocation)
	if keyErr == nil && trustErr == nil && key == s.mu.key && trust == s.mu.trust {
		return s.mu.current
	}
	if keyErr == nil && trustErr == nil && key == s.mu.failedKey && trust == s.mu.failedTrust {
		return s.mu.current // this broken version was logged already
	}
	// Reading two small files under the lock: handshakes wait for it at
	// most once per CheckInterval, and only when a file changed.
	m, key, trust, err := s.load()
	if err != nil {
		s.mu.failedKey, s.mu.failedTrust, s.mu.lastReloadErr = key, trust, err
		s.logger.Error("TLS files changed but cannot be used; keeping the previous certificates", "err", err)
		return s.mu.current
	}
	s.mu.current, s.mu.key, s.mu.trust, s.mu.lastReloadErr = m, key, trust, nil
	s.mu.reloads++
	s.logger.Info("TLS files reloaded", "keystore", s.files.KeystoreLocation, "truststore", s.files.TruststoreLocation)
	return m
}

func (s *Source) stampOf(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	return stamp(path)
}

// ServerConfig serves TLS 1.2 and later with the current material, read
// again by every handshake.
func (s *Source) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.serverConfigFor(s.current()), nil
		},
	}
}

func (s *Source) serverConfigFor(m material) *tls.Config {
	// Full-size records from the first byte: Kafka responses are bulk
	// transfers, and the small records Go starts with after an idle
	// second (for web latency) cost throughput on every long poll.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: m.roots, DynamicRecordSizingDisabled: true}
	if m.cert != nil {
		cfg.Certificates = []tls.Certificate{*m.cert}
	}
	switch s.files.ClientAuth {
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// ClientConfig is a client config for serverName from the current
// material: the truststore's CAs (else the system's), the keystore's
// certificate when one is configured.
func (s *Source) ClientConfig(serverName string) *tls.Config {
	m := s.current()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: m.roots, ServerName: serverName, DynamicRecordSizingDisabled: true}
	if m.cert != nil {
		cfg.Certificates = []tls.Certificate{*m.cert}
	}
	if s.files.SkipHostnameVerification {
		// crypto/tls checks the chain and the name together; this checks
		// the chain alone, as Kafka does without endpoint identification.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, m.roots) }
	}
	return cfg
}

// verifyChain checks the peer's certificate chains to roots (nil: the
// system's), whatever names it holds.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// Dial connects to addr and completes a TLS handshake, verifying the
// server's certificate for addr's host. Its signature is the one
// franz-go's kgo.Dialer and net/http's DialTLSContext take.
func (s *Source) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.Over(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		if deadline, ok := ctx.Deadline(); ok {
			d.Deadline = deadline
		}
		return d.DialContext(ctx, network, addr)
	})(ctx, network, addr)
}

// Over is Dial on the connections base makes (a process reaching its
// own listener in process, over net.Pipe): the same handshake and
// verification, for addr's host.
func (s *Source) Over(base func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		nc, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(nc, s.ClientConfig(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// loadKeystore reads a PEM keystore: one private key and its chain.
func loadKeystore(path string) (*tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKeystore(data)
}

func parseKeystore(data []byte) (*tls.Certificate, error) {
	var certs, keys bytes.Buffer
	nkeys := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			pem.Encode(&certs, block)
		case block.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED"):
			return nil, errors.New("the private key is encrypted, which is not supported: store it unencrypted and protect the file (mode 0600)")
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			nkeys++
			pem.Encode(&keys, block)
		}
	}
	switch {
	case nkeys == 0:
		return nil, errors.New("no PEM private key (want the key and the certificate chain in one file)")
	case nkeys > 1:
		return nil, fmt.Errorf("%d private keys; want one", nkeys)
	case certs.Len() == 0:
		return nil, errors.New("no PEM certificate (want the key and the certificate chain in one file)")
	}
	cert, err := tls.X509KeyPair(certs.Bytes(), keys.Bytes())
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

// loadTruststore reads PEM CA certificates.
func loadTruststore(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTruststore(data)
}

func parseTruststore(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return pool, nil
}

// PeerPrincipal is the principal a verified client certificate stands
// for: User:<subject CN> (the subject's full name when it has no CN);
// Anonymous without a certificate.
func PeerPrincipal(cs tls.ConnectionState) auth.Principal {
	if len(cs.PeerCertificates) == 0 {
		return auth.Anonymous
	}
	subject := cs.PeerCertificates[0].Subject
	if subject.CommonName != "" {
		return auth.User(subject.CommonName)
	}
	return auth.User(subject.String())
}
