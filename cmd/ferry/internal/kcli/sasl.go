package kcli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Auth is how the CLI authenticates to a SASL listener: the command-line
// flags --sasl-mechanism, --sasl-username and --sasl-password-file. The
// password is read from a file, never from a flag value, so it stays out
// of shell histories and process listings.
type Auth struct {
	Mechanism    string
	User         string
	PasswordFile string
	// Password is used when PasswordFile is empty: a Kafka client
	// config's sasl.jaas.config holds the password itself.
	Password string
}

// DefaultAuth is what Dial authenticates with; the flags of every client
// subcommand fill it (one command runs per process).
var DefaultAuth Auth

// Opt is the client option for a, none when no mechanism is set.
func (a Auth) Opt() ([]kgo.Opt, error) {
	if a.Mechanism == "" {
		if a.User != "" || a.PasswordFile != "" || a.Password != "" {
			return nil, fmt.Errorf("--sasl-username and --sasl-password-file need --sasl-mechanism")
		}
		return nil, nil
	}
	if a.User == "" || a.PasswordFile == "" && a.Password == "" {
		return nil, fmt.Errorf("--sasl-mechanism %s needs --sasl-username and --sasl-password-file", a.Mechanism)
	}
	pass := a.Password
	if a.PasswordFile != "" {
		var err error
		if pass, err = ReadPasswordFile(a.PasswordFile); err != nil {
			return nil, err
		}
	}
	switch strings.ToUpper(a.Mechanism) {
	case "PLAIN":
		return []kgo.Opt{kgo.SASL(plain.Auth{User: a.User, Pass: pass}.AsMechanism())}, nil
	case "SCRAM-SHA-256":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: a.User, Pass: pass}.AsSha256Mechanism())}, nil
	case "SCRAM-SHA-512":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: a.User, Pass: pass}.AsSha512Mechanism())}, nil
	}
	return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism)
}

// maxPasswordBytes bounds a password file or stdin.
const maxPasswordBytes = 1024

// ReadPasswordFile reads a password: the file's first line.
func ReadPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	defer f.Close()
	return ReadPassword(f)
}

// ReadPassword reads the first line of r (without its line ending).
func ReadPassword(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxPasswordBytes+1))
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if len(data) > maxPasswordBytes {
		return "", fmt.Errorf("password longer than %d bytes", maxPasswordBytes)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	pass := strings.TrimSuffix(string(line), "\r")
	if pass == "" {
		return "", fmt.Errorf("empty password")
	}
	return pass, nil
}
