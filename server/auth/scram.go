package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// ScramMechanism is a SCRAM SASL mechanism Kafka supports (RFC 7677 and
// its SHA-512 sibling), with the codes of DescribeUserScramCredentials.
type ScramMechanism int8

const (
	ScramUnknown ScramMechanism = 0
	ScramSHA256  ScramMechanism = 1
	ScramSHA512  ScramMechanism = 2
)

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("SCRAM(%d)", int8(m))
}

// ParseScramMechanism reads "SCRAM-SHA-256" or "SCRAM-SHA-512".
func ParseScramMechanism(s string) (ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "SCRAM-SHA-256":
		return ScramSHA256, nil
	case "SCRAM-SHA-512":
		return ScramSHA512, nil
	}
	return ScramUnknown, fmt.Errorf("unknown SCRAM mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

// Hash is the mechanism's hash function.
func (m ScramMechanism) Hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations, and
// AlterUserScramCredentials refuses more than 16384).
const (
	MinScramIterations     = 4096
	MaxScramIterations     = 16384
	DefaultScramIterations = 4096
)

// ScramCredential is what is kept of a password: the salted SCRAM
// verifier of RFC 5802 (StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key")). The password itself is
// never stored.
type ScramCredential struct {
	Mechanism  ScramMechanism
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// NewScramCredential salts and hashes password with a fresh random salt.
func NewScramCredential(m ScramMechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, err
	}
	return ScramCredentialFromSalt(m, password, salt, iterations)
}

// ScramCredentialFromSalt derives the verifier from a given salt, as
// AlterUserScramCredentials' salted password arrives from the client.
func ScramCredentialFromSalt(m ScramMechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	if err := checkScram(m, iterations); err != nil {
		return ScramCredential{}, err
	}
	salted, err := SaltedPassword(m, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramCredentialFromSaltedPassword(m, salted, salt, iterations)
}

// SaltedPassword is RFC 5802's SaltedPassword, Hi(password, salt, i): what
// AlterUserScramCredentials carries instead of the password.
func SaltedPassword(m ScramMechanism, password string, salt []byte, iterations int) ([]byte, error) {
	if err := checkScram(m, iterations); err != nil {
		return nil, err
	}
	return pbkdf2.Key(m.Hash(), password, salt, iterations, m.Hash()().Size())
}

// ScramCredentialFromSaltedPassword is the verifier of an already salted
// password (AlterUserScramCredentials sends SaltedPassword, never the
// password).
func ScramCredentialFromSaltedPassword(m ScramMechanism, salted, salt []byte, iterations int) (ScramCredential, error) {
	if err := checkScram(m, iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		return ScramCredential{}, errors.New("empty SCRAM salt")
	}
	clientKey := hmacSum(m, salted, []byte("Client Key"))
	h := m.Hash()()
	h.Write(clientKey)
	return ScramCredential{
		Mechanism:  m,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  h.Sum(nil),
		ServerKey:  hmacSum(m, salted, []byte("Server Key")),
		Iterations: iterations,
	}, nil
}

// VerifyPassword checks a cleartext password (SASL PLAIN, HTTP Basic)
// against the verifier. It runs PBKDF2, so callers that see the same
// password often (HTTP) cache the outcome instead of calling it per request.
func (c ScramCredential) VerifyPassword(password string) bool {
	got, err := ScramCredentialFromSalt(c.Mechanism, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got.StoredKey, c.StoredKey) == 1
}

func checkScram(m ScramMechanism, iterations int) error {
	if m != ScramSHA256 && m != ScramSHA512 {
		return fmt.Errorf("unknown SCRAM mechanism %d", int8(m))
	}
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return fmt.Errorf("SCRAM iterations %d: must be between %d and %d", iterations, MinScramIterations, MaxScramIterations)
	}
	return nil
}

func hmacSum(m ScramMechanism, key, msg []byte) []byte {
	mac := hmac.New(m.Hash(), key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// Credentials looks up users' SCRAM verifiers, for SASL on the Kafka
// listener and Basic authentication on HTTP. Implementations are kept
// current from their store (the data dir, or ZooKeeper's /config/users)
// and answer from memory: Lookup never blocks on I/O.
type Credentials interface {
	Lookup(user string, m ScramMechanism) (ScramCredential, bool)
}

// FormatScramCredential writes a verifier as Kafka keeps it in ZooKeeper
// (/config/users/<name>, under the mechanism's name):
// salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>.
func FormatScramCredential(c ScramCredential) string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) +
		",iterations=" + strconv.Itoa(c.Iterations)
}

// ParseScramCredential reads FormatScramCredential's form for m. Keys
// sizes must match m's hash; iterations are taken as written (an older
// writer may have used fewer than Kafka's minimum today).
func ParseScramCredential(m ScramMechanism, s string) (ScramCredential, error) {
	c := ScramCredential{Mechanism: m}
	seen := 0
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return ScramCredential{}, fmt.Errorf("%s credential: %q is not key=value", m, kv)
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			continue // a newer writer's field
		}
		if err != nil {
			return ScramCredential{}, fmt.Errorf("%s credential: %s: %w", m, k, err)
		}
		seen++
	}
	size := m.Hash()().Size()
	switch {
	case seen < 4:
		return ScramCredential{}, fmt.Errorf("%s credential: want salt, stored_key, server_key and iterations", m)
	case len(c.Salt) == 0 || c.Iterations < 1:
		return ScramCredential{}, fmt.Errorf("%s credential: empty salt or iterations %d", m, c.Iterations)
	case len(c.StoredKey) != size || len(c.ServerKey) != size:
		return ScramCredential{}, fmt.Errorf("%s credential: keys of %d/%d bytes, want %d", m, len(c.StoredKey), len(c.ServerKey), size)
	}
	return c, nil
}

// FormatUserCredentials is one user's verifiers as a Kafka config map.
func FormatUserCredentials(u UserCredentials) map[string]string {
	out := make(map[string]string, len(u))
	for m, c := range u {
		out[m.String()] = FormatScramCredential(c)
	}
	return out
}

// ParseUserCredentials reads a user's Kafka config map; keys other than
// the SCRAM mechanisms (quotas live there too) are ignored.
func ParseUserCredentials(cfg map[string]string) (UserCredentials, error) {
	u := UserCredentials{}
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		v, ok := cfg[m.String()]
		if !ok {
			continue
		}
		c, err := ParseScramCredential(m, v)
		if err != nil {
			return nil, err
		}
		u[m] = c
	}
	return u, nil
}
