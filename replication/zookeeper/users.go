package zookeeper

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/server/auth"
)

// SCRAM credentials live where Kafka keeps them: /config/users/<name>,
// {"version":1,"config":{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=4096"}},
// beside the user's quotas, announced like topic configs with a
// /config/changes notification naming users/<name>. Kafka sanitises
// quota entity names; user names here are written as they are, and a
// name that cannot be a znode ('/', "." or "..") is refused.

const usersConfigPath = "/config/users"

// UserConfig reads /config/users/<name>; none is an empty map.
func (c *Client) UserConfig(name string) (map[string]string, error) {
	if err := auth.CheckUserName(name); err != nil {
		return nil, err
	}
	p := usersConfigPath + "/" + name
	data, _, err := c.get(p)
	if errors.Is(err, ErrNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeConfig(p, data)
}

// Users lists the names under /config/users.
func (c *Client) Users() ([]string, error) {
	names, err := c.children(usersConfigPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return names, err
}

// UserStore is the cluster's SCRAM credentials, read from ZooKeeper into
// memory and kept current by Reload as change notifications name users
// (cmd/ferry follows /config/changes). Lookup never touches ZooKeeper.
type UserStore struct {
	c   *Client
	set *auth.CredentialSet
}

// OpenUserStore reads every user's credentials.
func (c *Client) OpenUserStore() (*UserStore, error) {
	s := &UserStore{c: c, set: auth.NewCredentialSet()}
	return s, s.ReloadAll()
}

// ReloadAll re-reads every user, as after a missed notification.
func (s *UserStore) ReloadAll() error {
	names, err := s.c.Users()
	if err != nil {
		return err
	}
	users := make(map[string]auth.UserCredentials, len(names))
	var firstErr error
	for _, n := range names {
		u, err := s.read(n)
		if err != nil {
			// One unreadable user must not lock every other one out.
			s.c.log.Warn("unreadable user credentials", "user", n, "err", err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		users[n] = u
	}
	s.set.Replace(users)
	return firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Reload re-reads the named users.
func (s *UserStore) Reload(names []string) error {
	var firstErr error
	for _, n := range names {
		u, err := s.read(n)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		s.set.SetUser(n, u)
	}
	return firstErr
}

func (s *UserStore) read(name string) (auth.UserCredentials, error) {
	cfg, err := s.c.UserConfig(name)
	if err != nil {
		return nil, err
	}
	u, err := auth.ParseUserCredentials(cfg)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %s/%s: %w", usersConfigPath, name, err)
	}
	return u, nil
}

// Lookup answers from memory.
func (s *UserStore) Lookup(user string, m auth.ScramMechanism) (auth.ScramCredential, bool) {
	return s.set.Lookup(user, m)
}

// Users lists the users with a verifier, as last read.
func (s *UserStore) Users() []string { return s.set.Users() }

// User is one user's verifiers, as last read.
func (s *UserStore) User(name string) auth.UserCredentials { return s.set.User(name) }

// Upsert sets one verifier of user, keeping the user's other configs.
func (s *UserStore) Upsert(user string, c auth.ScramCredential) error {
	return s.change(user, func(cfg map[string]string) error {
		cfg[c.Mechanism.String()] = auth.FormatScramCredential(c)
		return nil
	})
}

// Delete removes one verifier of user.
func (s *UserStore) Delete(user string, m auth.ScramMechanism) error {
	return s.change(user, func(cfg map[string]string) error {
		if _, ok := cfg[m.String()]; !ok {
			return fmt.Errorf("%w: %s for %q", auth.ErrUnknownUser, m, user)
		}
		delete(cfg, m.String())
		return nil
	})
}

// change applies edit to the user's znode, conditionally on what it read
// (a quota set meanwhile beside the verifiers is kept), writes it back
// announced, and applies it here at once (the notification reaches the
// others).
func (s *UserStore) change(user string, edit func(map[string]string) error) error {
	if err := auth.CheckUserName(user); err != nil {
		return err
	}
	var u auth.UserCredentials
	_, err := s.c.editConfigAnnounced(usersConfigPath, user, "users/"+user, func(cfg map[string]string) error {
		if err := edit(cfg); err != nil {
			return err
		}
		var err error
		u, err = auth.ParseUserCredentials(cfg)
		return err
	})
	if err != nil {
		return err
	}
	s.set.SetUser(user, u)
	return nil
}
