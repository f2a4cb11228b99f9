package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/ferry-mq/ferry/server/auth"
)

// tokensPath holds a cluster's HTTP API tokens, one znode per token id
// (its JSON: name, user, SHA-256 of the secret, times). Kafka has no
// such thing; ferry's own znodes live under /ferry.
const tokensPath = "/ferry/tokens"

// TokenStore is the cluster's API tokens, kept in memory and current
// through a watch on /ferry/tokens: a token made or revoked through any
// broker is honoured or refused by every one within a watch's delay.
type TokenStore struct {
	c     *Client
	log   *slog.Logger
	set   auth.TokenSet
	watch *Watch[[]string]
	done  chan struct{}
}

var _ auth.TokenStore = (*TokenStore)(nil)

// OpenTokenStore reads the tokens and follows their changes until Close.
func (c *Client) OpenTokenStore() (*TokenStore, error) {
	s := &TokenStore{c: c, log: c.log, done: make(chan struct{})}
	if err := s.reload(); err != nil {
		return nil, err
	}
	s.watch = c.watchChildNames(tokensPath)
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
func (s *TokenStore) Close() {
	if s.watch != nil {
		s.watch.Stop()
		<-s.done
	}
}

func (s *TokenStore) reload() error {
	ids, err := s.c.children(tokensPath)
	if errors.Is(err, ErrNotFound) {
		s.set.Replace(nil)
		return nil
	}
	if err != nil {
		return err
	}
	var tokens []auth.APIToken
	var firstErr error
	for _, id := range ids {
		data, _, err := s.c.get(tokensPath + "/" + id)
		if errors.Is(err, ErrNotFound) {
			continue // revoked meanwhile
		}
		if err == nil {
			var t auth.APIToken
			if t, err = auth.DecodeAPIToken(data); err == nil {
				tokens = append(tokens, t)
				continue
			}
		}
		firstErr = cmpErr(firstErr, fmt.Errorf("token %s: %w", id, err))
	}
	s.set.Replace(tokens)
	return firstErr
}

func (s *TokenStore) LookupAPIToken(id string) (auth.APIToken, bool) { return s.set.LookupAPIToken(id) }
func (s *TokenStore) List() []auth.APIToken                          { return s.set.List() }

// Add creates the token's znode.
func (s *TokenStore) Add(t auth.APIToken) error {
	p := tokensPath + "/" + t.ID
	if err := validatePath(p); err != nil {
		return err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = s.c.do(func(bool) error {
		if err := s.c.ensurePath(tokensPath); err != nil {
			return err
		}
		_, err := s.c.conn.Create(s.c.abs(p), data, 0, openACL)
		return err
	})
	if err != nil {
		return fmt.Errorf("zookeeper: create %s: %w", p, err)
	}
	return s.reload()
}

// Revoke deletes the token's znode.
func (s *TokenStore) Revoke(id string) (bool, error) {
	p := tokensPath + "/" + id
	if err := validatePath(p); err != nil {
		return false, err
	}
	err := s.c.do(func(bool) error { return s.c.conn.Delete(s.c.abs(p), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("zookeeper: delete %s: %w", p, err)
	}
	return true, s.reload()
}
