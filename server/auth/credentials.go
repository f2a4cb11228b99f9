package auth

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"
)

// ErrUnknownUser is a user, or a user's mechanism, that has no credential.
var ErrUnknownUser = errors.New("no such user credential")

// CheckUserName refuses names no store can keep: empty, not UTF-8, with
// control characters, or with '/' (a ZooKeeper znode separator; Kafka
// would write such a user to a nested znode it cannot read back).
func CheckUserName(name string) error {
	switch {
	case name == "":
		return errors.New("user name is empty")
	case len(name) > 255:
		return fmt.Errorf("user name of %d bytes: at most 255", len(name))
	case !utf8.ValidString(name):
		return errors.New("user name is not UTF-8")
	}
	for _, r := range name {
		if r == '/' {
			return fmt.Errorf("user name %q holds '/', which cannot name a ZooKeeper znode", name)
		}
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("user name %q holds a control character", name)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("user name %q cannot name a ZooKeeper znode", name)
	}
	return nil
}

// UserCredentials is one user's verifiers, by mechanism.
type UserCredentials map[ScramMechanism]ScramCredential

// CredentialSet is users' SCRAM verifiers in memory, safe for concurrent
// use: the in-memory twin of every store, and what stores answer from.
type CredentialSet struct {
	mu struct {
		sync.RWMutex
		users map[string]UserCredentials
	}
}

// NewCredentialSet returns an empty set.
func NewCredentialSet() *CredentialSet {
	s := &CredentialSet{}
	s.mu.users = map[string]UserCredentials{}
	return s
}

// Lookup is the user's verifier for m.
func (s *CredentialSet) Lookup(user string, m ScramMechanism) (ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.mu.users[user][m]
	return c, ok
}

// User is a copy of one user's verifiers; nil when none.
func (s *CredentialSet) User(user string) UserCredentials {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return copyUser(s.mu.users[user])
}

// Users lists the users with at least one verifier, sorted.
func (s *CredentialSet) Users() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.mu.users))
	for n := range s.mu.users {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SetUser replaces one user's verifiers; none removes the user.
func (s *CredentialSet) SetUser(user string, creds UserCredentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(creds) == 0 {
		delete(s.mu.users, user)
		return
	}
	s.mu.users[user] = copyUser(creds)
}

// Replace swaps in a whole new set of users.
func (s *CredentialSet) Replace(users map[string]UserCredentials) {
	m := make(map[string]UserCredentials, len(users))
	for n, c := range users {
		if len(c) > 0 {
			m[n] = copyUser(c)
		}
	}
	s.mu.Lock()
	s.mu.users = m
	s.mu.Unlock()
}

// Snapshot is a copy of every user's verifiers.
func (s *CredentialSet) Snapshot() map[string]UserCredentials {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := make(map[string]UserCredentials, len(s.mu.users))
	for n, c := range s.mu.users {
		m[n] = copyUser(c)
	}
	return m
}

func copyUser(c UserCredentials) UserCredentials {
	if c == nil {
		return nil
	}
	out := make(UserCredentials, len(c))
	for m, v := range c {
		out[m] = v
	}
	return out
}

// CredentialStore is Credentials that can be changed: the data dir's file
// on a single node, ZooKeeper on a cluster. Changes are durable when the
// call returns; Lookup answers from memory.
type CredentialStore interface {
	Credentials
	// Users lists the users with a verifier, sorted.
	Users() []string
	// User is one user's verifiers (nil: none).
	User(name string) UserCredentials
	// Upsert sets the user's verifier for c.Mechanism, keeping the others.
	Upsert(user string, c ScramCredential) error
	// Delete removes the user's verifier for m (ErrUnknownUser if none).
	Delete(user string, m ScramMechanism) error
}
