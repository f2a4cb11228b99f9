package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/server/internal/atomicfile"
)

// API tokens are static bearer tokens for the HTTP gateway (scripts, CI,
// Prometheus): "ferry_<id>_<secret>", the id public (it names the token
// in lists and revocations), the secret 32 random bytes kept only as its
// SHA-256 — a fast hash is enough for a secret nobody chose — so the
// store never holds what would let anyone use a token.

// APITokenPrefix starts every API token, so secret scanners can find them.
const APITokenPrefix = "ferry_"

// APIToken is a token as stored.
type APIToken struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	User      string            `json:"user"`
	Hash      [sha256.Size]byte `json:"-"`
	HashHex   string            `json:"sha256"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at,omitzero"`
}

var tokenName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// NewAPIToken makes a token for user, expiring after ttl (0: never). It
// returns the token to hand out once and what is stored.
func NewAPIToken(name, user string, ttl time.Duration, now time.Time) (token string, stored APIToken, err error) {
	if !tokenName.MatchString(name) {
		return "", APIToken{}, fmt.Errorf("token name %q: 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	if user == "" {
		return "", APIToken{}, errors.New("a token needs the user it acts as")
	}
	if ttl < 0 {
		return "", APIToken{}, errors.New("a token's lifetime must not be negative")
	}
	id := make([]byte, 6)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return "", APIToken{}, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", APIToken{}, err
	}
	s := base64.RawURLEncoding.EncodeToString(secret)
	stored = APIToken{ID: hex.EncodeToString(id), Name: name, User: user, Hash: sha256.Sum256([]byte(s)), CreatedAt: now.UTC()}
	stored.HashHex = hex.EncodeToString(stored.Hash[:])
	if ttl > 0 {
		stored.ExpiresAt = now.Add(ttl).UTC()
	}
	return APITokenPrefix + stored.ID + "_" + s, stored, nil
}

// ParseAPIToken splits a token into its id and secret.
func ParseAPIToken(token string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, APITokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	return id, secret, ok && id != "" && secret != ""
}

// DecodeAPIToken reads a stored token (JSON), checking what it holds.
func DecodeAPIToken(data []byte) (APIToken, error) {
	var t APIToken
	if err := json.Unmarshal(data, &t); err != nil {
		return APIToken{}, fmt.Errorf("api token: %w", err)
	}
	h, err := hex.DecodeString(t.HashHex)
	if err != nil || len(h) != sha256.Size || t.ID == "" || t.User == "" {
		return APIToken{}, errors.New("api token: missing id, user or sha256")
	}
	copy(t.Hash[:], h)
	return t, nil
}

// TokenSet is the tokens in memory, by id; safe for concurrent use.
type TokenSet struct {
	mu     sync.RWMutex
	tokens map[string]APIToken
}

// LookupAPIToken finds a token by id.
func (s *TokenSet) LookupAPIToken(id string) (APIToken, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tokens[id]
	return t, ok
}

// List is every token, by creation time.
func (s *TokenSet) List() []APIToken {
	s.mu.RLock()
	out := make([]APIToken, 0, len(s.tokens))
	for _, t := range s.tokens {
		out = append(out, t)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b APIToken) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// Replace sets the whole set (a reload).
func (s *TokenSet) Replace(tokens []APIToken) {
	m := make(map[string]APIToken, len(tokens))
	for _, t := range tokens {
		m[t.ID] = t
	}
	s.mu.Lock()
	s.tokens = m
	s.mu.Unlock()
}

func (s *TokenSet) put(t APIToken) {
	s.mu.Lock()
	if s.tokens == nil {
		s.tokens = map[string]APIToken{}
	}
	s.tokens[t.ID] = t
	s.mu.Unlock()
}

func (s *TokenSet) remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tokens[id]
	delete(s.tokens, id)
	return ok
}

// TokenStore keeps API tokens: a single node's file, or ZooKeeper's
// (ZKTokenStore).
type TokenStore interface {
	LookupAPIToken(id string) (APIToken, bool)
	List() []APIToken
	Add(t APIToken) error
	// Revoke removes a token; false when there was none.
	Revoke(id string) (bool, error)
}

// ErrTokenNotFound: no token has the id.
var ErrTokenNotFound = errors.New("no such API token")

// TokenFileStore is a single node's tokens, in <data-dir>/api-tokens.json
// (mode 0600), rewritten atomically on every change.
type TokenFileStore struct {
	path string
	mu   sync.Mutex // serialises writes
	set  TokenSet
}

// OpenTokenFileStore reads dir's tokens (none when the file is absent).
func OpenTokenFileStore(dir string) (*TokenFileStore, error) {
	s := &TokenFileStore{path: filepath.Join(dir, "api-tokens.json")}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	var tokens []APIToken
	for _, r := range raw {
		t, err := DecodeAPIToken(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.path, err)
		}
		tokens = append(tokens, t)
	}
	s.set.Replace(tokens)
	return s, nil
}

// File is where the tokens are kept.
func (s *TokenFileStore) File() string { return s.path }

func (s *TokenFileStore) LookupAPIToken(id string) (APIToken, bool) { return s.set.LookupAPIToken(id) }
func (s *TokenFileStore) List() []APIToken                          { return s.set.List() }

func (s *TokenFileStore) Add(t APIToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeWith(append(s.set.List(), t)); err != nil {
		return err
	}
	s.set.put(t)
	return nil
}

func (s *TokenFileStore) Revoke(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := slices.DeleteFunc(s.set.List(), func(t APIToken) bool { return t.ID == id })
	if _, ok := s.set.LookupAPIToken(id); !ok {
		return false, nil
	}
	if err := s.writeWith(kept); err != nil {
		return false, err
	}
	return s.set.remove(id), nil
}

func (s *TokenFileStore) writeWith(tokens []APIToken) error {
	data, err := json.MarshalIndent(tokens, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path, append(data, '\n'), 0o600)
}
