package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// SCRAM credentials live where Kafka keeps them: /config/users/<name>,
// {"version":1,"config":{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=4096"}},
// beside the user's quotas, announced like topic configs with a
// /config/changes notification naming users/<name>. Kafka sanitises
// quota entity names; user names here are written as they are, and a
// name that cannot be a znode ('/', "." or "..") is refused.

// ZKUserStore is the cluster's SCRAM credentials, read from ZooKeeper into
// memory and kept current by Reload as change notifications name users
// (cmd/ferry follows /config/changes). Lookup never touches ZooKeeper.
type ZKUserStore struct {
	zk  *zookeeper.Client
	log *slog.Logger
	set *CredentialSet
}

// OpenZKUserStore reads every user's credentials.
func OpenZKUserStore(zk *zookeeper.Client, logger *slog.Logger) (*ZKUserStore, error) {
	s := &ZKUserStore{zk: zk, log: logger, set: NewCredentialSet()}
	return s, s.ReloadAll()
}

// ZKUserConfig reads /config/users/<name>, every key (verifiers and
// quotas); none is an empty map.
func ZKUserConfig(zk *zookeeper.Client, name string) (map[string]string, error) {
	if err := CheckUserName(name); err != nil {
		return nil, err
	}
	return zk.EntityConfig("users/" + name)
}

// ReloadAll re-reads every user, as after a missed notification.
func (s *ZKUserStore) ReloadAll() error {
	names, err := s.zk.EntityNames("users")
	if err != nil {
		return err
	}
	users := make(map[string]UserCredentials, len(names))
	var errs []error
	for _, n := range names {
		u, err := s.read(n)
		if err != nil {
			// One unreadable user must not lock every other one out.
			s.log.Warn("unreadable user credentials", "user", n, "err", err)
			errs = append(errs, err)
			continue
		}
		users[n] = u
	}
	s.set.Replace(users)
	return firstError(errs)
}

func firstError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// Reload re-reads the named users.
func (s *ZKUserStore) Reload(names []string) error {
	var errs []error
	for _, n := range names {
		u, err := s.read(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.set.SetUser(n, u)
	}
	return firstError(errs)
}

func (s *ZKUserStore) read(name string) (UserCredentials, error) {
	cfg, err := ZKUserConfig(s.zk, name)
	if err != nil {
		return nil, err
	}
	u, err := ParseUserCredentials(cfg)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: /config/users/%s: %w", name, err)
	}
	return u, nil
}

// Lookup answers from memory.
func (s *ZKUserStore) Lookup(user string, m ScramMechanism) (ScramCredential, bool) {
	return s.set.Lookup(user, m)
}

// Users lists the users with a verifier, as last read.
func (s *ZKUserStore) Users() []string { return s.set.Users() }

// User is one user's verifiers, as last read.
func (s *ZKUserStore) User(name string) UserCredentials { return s.set.User(name) }

// Upsert sets one verifier of user, keeping the user's other configs.
func (s *ZKUserStore) Upsert(user string, c ScramCredential) error {
	return s.change(user, func(cfg map[string]string) error {
		cfg[c.Mechanism.String()] = FormatScramCredential(c)
		return nil
	})
}

// Delete removes one verifier of user.
func (s *ZKUserStore) Delete(user string, m ScramMechanism) error {
	return s.change(user, func(cfg map[string]string) error {
		if _, ok := cfg[m.String()]; !ok {
			return fmt.Errorf("%w: %s for %q", ErrUnknownUser, m, user)
		}
		delete(cfg, m.String())
		return nil
	})
}

// change applies edit to the user's znode, conditionally on what it read
// (a quota set meanwhile beside the verifiers is kept), writes it back
// announced, and applies it here at once (the notification reaches the
// others).
func (s *ZKUserStore) change(user string, edit func(map[string]string) error) error {
	if err := CheckUserName(user); err != nil {
		return err
	}
	var u UserCredentials
	_, err := s.zk.EditEntityConfig("users/"+user, func(cfg map[string]string) error {
		if err := edit(cfg); err != nil {
			return err
		}
		var err error
		u, err = ParseUserCredentials(cfg)
		return err
	})
	if err != nil {
		return err
	}
	s.set.SetUser(user, u)
	return nil
}

// ZKTokenStore is the cluster's API tokens (zookeeper's /ferry/tokens, one
// znode per token id holding its JSON: name, user, SHA-256 of the secret,
// times), kept in memory and current through a watch: a token made or
// revoked through any broker is honoured or refused by every one within
// a watch's delay.
type ZKTokenStore struct {
	zk    *zookeeper.Client
	log   *slog.Logger
	set   TokenSet
	watch *zookeeper.Watch[[]string]
	done  chan struct{}
}

var _ TokenStore = (*ZKTokenStore)(nil)

// OpenZKTokenStore reads the tokens and follows their changes until Close.
func OpenZKTokenStore(zk *zookeeper.Client, logger *slog.Logger) (*ZKTokenStore, error) {
	s := &ZKTokenStore{zk: zk, log: logger, done: make(chan struct{})}
	if err := s.reload(); err != nil {
		return nil, err
	}
	s.watch = zk.WatchTokens()
	go func() {
		defer close(s.done)
		for range s.watch.C {
			if err := s.reload(); err != nil {
				s.log.Warn("reading the API tokens; the ones read before stay", "err", err)
			}
		}
	}()
	return s, nil
}

// Close stops following changes.
func (s *ZKTokenStore) Close() {
	if s.watch != nil {
		s.watch.Stop()
		<-s.done
	}
}

func (s *ZKTokenStore) reload() error {
	ids, err := s.zk.TokenIDs()
	if err != nil {
		return err
	}
	var tokens []APIToken
	var errs []error
	for _, id := range ids {
		data, err := s.zk.Token(id)
		if errors.Is(err, zookeeper.ErrNotFound) {
			continue // revoked meanwhile
		}
		if err == nil {
			var t APIToken
			if t, err = DecodeAPIToken(data); err == nil {
				tokens = append(tokens, t)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("token %s: %w", id, err))
	}
	s.set.Replace(tokens)
	return firstError(errs)
}

func (s *ZKTokenStore) LookupAPIToken(id string) (APIToken, bool) { return s.set.LookupAPIToken(id) }
func (s *ZKTokenStore) List() []APIToken                          { return s.set.List() }

// Add creates the token's znode.
func (s *ZKTokenStore) Add(t APIToken) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := s.zk.CreateToken(t.ID, data); err != nil {
		return err
	}
	return s.reload()
}

// Revoke deletes the token's znode.
func (s *ZKTokenStore) Revoke(id string) (bool, error) {
	found, err := s.zk.DeleteToken(id)
	if err != nil || !found {
		return found, err
	}
	return true, s.reload()
}
