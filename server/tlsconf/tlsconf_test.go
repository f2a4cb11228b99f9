package tlsconf_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/tlsconf"
	"github.com/ferry-mq/ferry/server/tlsconf/tlstest"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serve accepts TLS connections with src until the test ends and
// reports each handshake's peer principal.
func serve(t *testing.T, src *tlsconf.Source) (addr string, principals <-chan auth.Principal) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", src.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan auth.Principal, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				out <- tlsconf.PeerPrincipal(tc.ConnectionState())
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), out
}

func TestServeAndClientCertificatePrincipal(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "broker"))
	cli := tlstest.Write(t, dir, "client", ca, ca.Client(t, "alice"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore, TruststoreLocation: srv.Truststore,
		ClientAuth: tlsconf.ClientAuthRequested}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, principals := serve(t, src)

	client, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: cli.Keystore, TruststoreLocation: cli.Truststore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := <-principals; p != auth.User("alice") {
		t.Fatalf("principal %v, want User:alice", p)
	}
	if v := c.(*tls.Conn).ConnectionState().Version; v < tls.VersionTLS12 {
		t.Fatalf("TLS version %x", v)
	}

	// requested: a client without a certificate is anonymous.
	anon, err := tlsconf.Open(tlsconf.Files{TruststoreLocation: cli.Truststore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := anon.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if p := <-principals; p != auth.Anonymous {
		t.Fatalf("principal %v, want anonymous", p)
	}
}

func TestRequiredClientAuthRefusesNoCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "broker"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore, TruststoreLocation: srv.Truststore,
		ClientAuth: tlsconf.ClientAuthRequired}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, src)
	anon, err := tlsconf.Open(tlsconf.Files{TruststoreLocation: srv.Truststore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c, err := anon.Dial(context.Background(), "tcp", addr)
	if err == nil {
		// TLS 1.3: the client learns of the refusal on its first read.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err %v, want a certificate-required alert", err)
	}
	// A certificate from another CA is refused too.
	other := tlstest.NewCA(t, "other CA")
	stranger := tlstest.Write(t, dir, "stranger", ca, other.Client(t, "mallory"))
	mallory, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: stranger.Keystore, TruststoreLocation: srv.Truststore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if c, err := mallory.Dial(context.Background(), "tcp", addr); err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a certificate from an unknown CA was accepted")
		}
		c.Close()
	}
}

func TestClientRefusesUntrustedServer(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "broker"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, src)
	wrong := filepath.Join(dir, "other-ca.pem")
	tlstest.WriteFile(t, wrong, other.PEM)
	client, err := tlsconf.Open(tlsconf.Files{TruststoreLocation: wrong}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Dial(context.Background(), "tcp", addr); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err %v, want an unknown-authority error", err)
	}
}

// TestReload: a replaced keystore serves the next handshake; a broken
// replacement keeps the previous certificate.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "first"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore, CheckInterval: time.Nanosecond}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, src)
	client, err := tlsconf.Open(tlsconf.Files{TruststoreLocation: srv.Truststore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	servedCN := func() string {
		t.Helper()
		c, err := client.Dial(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := servedCN(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	old, err := client.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	tlstest.WriteFile(t, srv.Keystore, ca.Server(t, "second").KeystorePEM)
	if cn := servedCN(); cn != "second" {
		t.Fatalf("after the keystore changed, served %q", cn)
	}
	if src.Reloads() != 1 {
		t.Fatalf("reloads %d", src.Reloads())
	}
	if _, err := old.Write([]byte("still open")); err != nil {
		t.Fatalf("a connection from before the reload broke: %v", err)
	}

	tlstest.WriteFile(t, srv.Keystore, []byte("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"))
	if cn := servedCN(); cn != "second" {
		t.Fatalf("after a broken keystore, served %q", cn)
	}
	if src.Reloads() != 1 {
		t.Fatalf("a broken file counted as a reload")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.Server(t, "broker")
	srv := tlstest.Write(t, dir, "server", ca, leaf)
	encrypted := filepath.Join(dir, "encrypted.pem")
	block, _ := pem.Decode(leaf.KeyPEM)
	tlstest.WriteFile(t, encrypted, append(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: block.Bytes}), leaf.CertPEM...))
	certOnly := filepath.Join(dir, "cert-only.pem")
	tlstest.WriteFile(t, certOnly, leaf.CertPEM)
	keyOnly := filepath.Join(dir, "key-only.pem")
	tlstest.WriteFile(t, keyOnly, leaf.KeyPEM)
	mismatched := filepath.Join(dir, "mismatched.pem")
	tlstest.WriteFile(t, mismatched, append(bytes.Clone(ca.Server(t, "other").KeyPEM), leaf.CertPEM...))
	empty := filepath.Join(dir, "empty.pem")
	tlstest.WriteFile(t, empty, nil)
	for _, tc := range []struct {
		name  string
		files tlsconf.Files
		want  string
	}{
		{"missing keystore", tlsconf.Files{KeystoreLocation: filepath.Join(dir, "nope.pem")}, "no such file"},
		{"encrypted key", tlsconf.Files{KeystoreLocation: encrypted}, "encrypted"},
		{"password", tlsconf.Files{KeystoreLocation: srv.Keystore, KeyPassword: "secret"}, "encrypted private keys are not supported"},
		{"no key", tlsconf.Files{KeystoreLocation: certOnly}, "no PEM private key"},
		{"no certificate", tlsconf.Files{KeystoreLocation: keyOnly}, "no PEM certificate"},
		{"key of another certificate", tlsconf.Files{KeystoreLocation: mismatched}, "does not match"},
		{"empty truststore", tlsconf.Files{KeystoreLocation: srv.Keystore, TruststoreLocation: empty}, "no PEM certificate"},
		{"client auth without truststore", tlsconf.Files{KeystoreLocation: srv.Keystore, ClientAuth: tlsconf.ClientAuthRequired}, "needs ssl.truststore.location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tlsconf.Open(tc.files, quiet())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := tlsconf.ParseClientAuth("sometimes"); err == nil {
		t.Fatal("ssl.client.auth=sometimes accepted")
	}
}

func TestTLS11Refused(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "broker"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, src)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := tls.Client(nc, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err := c.Handshake(); err == nil {
		t.Fatal("TLS 1.1 handshake succeeded")
	}
}

// TestSkipHostnameVerification: with ssl.endpoint.identification.algorithm
// empty, a certificate for another name is accepted if it chains to the
// truststore; one from another CA is still refused.
func TestSkipHostnameVerification(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	srv := tlstest.Write(t, dir, "server", ca, ca.Server(t, "broker"))
	src, err := tlsconf.Open(tlsconf.Files{KeystoreLocation: srv.Keystore}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, src)
	otherCA := filepath.Join(dir, "other-ca.pem")
	tlstest.WriteFile(t, otherCA, other.PEM)
	handshake := func(files tlsconf.Files) error {
		client, err := tlsconf.Open(files, quiet())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		return tls.Client(nc, client.ClientConfig("broker.elsewhere.example")).Handshake()
	}
	if err := handshake(tlsconf.Files{TruststoreLocation: srv.Truststore}); err == nil {
		t.Fatal("a certificate for another host was accepted with hostname verification on")
	}
	if err := handshake(tlsconf.Files{TruststoreLocation: srv.Truststore, SkipHostnameVerification: true}); err != nil {
		t.Fatalf("without hostname verification: %v", err)
	}
	if err := handshake(tlsconf.Files{TruststoreLocation: otherCA, SkipHostnameVerification: true}); err == nil {
		t.Fatal("without hostname verification, a certificate from an untrusted CA was accepted")
	}
}
