package auth

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/ferry-mq/ferry/server/internal/atomicfile"
)

// UsersFileName is the single node's credential file in its data dir.
const UsersFileName = "users.json"

// FileStore keeps a single node's SCRAM verifiers in one file of the data
// dir, in Kafka's ZooKeeper form per user:
//
//	{"version":1,"users":{"alice":{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=4096"}}}
//
// Every change rewrites the file whole and atomically (a temp file,
// fsync, rename, fsync of the directory), mode 0600; lookups answer from
// memory. One process owns the file: the node, or `ferry users --data-dir`
// before the node first starts.
type FileStore struct {
	path string
	set  *CredentialSet
	// mu serialises writers, so the file always holds the latest set.
	mu sync.Mutex
}

type usersFile struct {
	Version int                          `json:"version"`
	Users   map[string]map[string]string `json:"users"`
}

// OpenFileStore reads dir's credential file; none is no users.
func OpenFileStore(dir string) (*FileStore, error) {
	s := &FileStore{path: filepath.Join(dir, UsersFileName), set: NewCredentialSet()}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	var f usersFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("credentials %s: %w", s.path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("credentials %s: unknown version %d", s.path, f.Version)
	}
	users := make(map[string]UserCredentials, len(f.Users))
	for name, cfg := range f.Users {
		u, err := ParseUserCredentials(cfg)
		if err != nil {
			return nil, fmt.Errorf("credentials %s: user %q: %w", s.path, name, err)
		}
		users[name] = u
	}
	s.set.Replace(users)
	return s, nil
}

// Lookup answers from memory.
func (s *FileStore) Lookup(user string, m ScramMechanism) (ScramCredential, bool) {
	return s.set.Lookup(user, m)
}

// Users lists the users with a verifier.
func (s *FileStore) Users() []string { return s.set.Users() }

// User is one user's verifiers.
func (s *FileStore) User(name string) UserCredentials { return s.set.User(name) }

// Upsert sets one verifier of user and rewrites the file.
func (s *FileStore) Upsert(user string, c ScramCredential) error {
	if err := CheckUserName(user); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set.User(user)
	if u == nil {
		u = UserCredentials{}
	}
	u[c.Mechanism] = c
	return s.write(user, u)
}

// Delete removes one verifier of user and rewrites the file.
func (s *FileStore) Delete(user string, m ScramMechanism) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set.User(user)
	if _, ok := u[m]; !ok {
		return fmt.Errorf("%w: %s for %q", ErrUnknownUser, m, user)
	}
	delete(u, m)
	return s.write(user, u)
}

// write saves the set with user's verifiers replaced by u, then applies
// it in memory: a failed write changes nothing. Needs s.mu.
func (s *FileStore) write(user string, u UserCredentials) error {
	all := s.set.Snapshot()
	if len(u) == 0 {
		delete(all, user)
	} else {
		all[user] = u
	}
	f := usersFile{Version: 1, Users: make(map[string]map[string]string, len(all))}
	for name, creds := range all {
		f.Users[name] = FormatUserCredentials(creds)
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	s.set.SetUser(user, u)
	return nil
}

// saslSecretFileName holds a single node's key for unknown users' salts.
const saslSecretFileName = "sasl-secret"

// LoadOrCreateSecret reads dir's SASL secret, creating a random one the
// first time, so unknown users' salts stay the same across restarts.
func LoadOrCreateSecret(dir string) ([]byte, error) {
	return LoadOrCreateSecretFile(filepath.Join(dir, saslSecretFileName))
}

// LoadOrCreateSecretFile reads a 32-byte random secret from path (mode
// 0600), making it the first time.
func LoadOrCreateSecretFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) >= 16 {
		return data, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("secret %s: %w", path, err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, secret, 0o600); err != nil {
		return nil, fmt.Errorf("secret %s: %w", path, err)
	}
	return secret, nil
}
