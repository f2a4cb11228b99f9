package zookeeper

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Entity configs live where Kafka keeps them: /config/<type>/<name>
// (users/<u>, users/<u>/clients/<c>, clients/<c>, ips/<ip>; <default> for
// the default entity), each {"version":1,"config":{…}}, announced with a
// /config/changes notification naming the entity path so every broker
// rereads it. What the keys mean (SCRAM verifiers, quotas) belongs to
// their owners, server/auth and server/quota; this file only reads and
// writes the znodes, so replication never names a type of the core.

// DefaultEntity is Kafka's name for the default user, client id or ip.
const DefaultEntity = "<default>"

// EntityConfig reads /config/<entityPath>; none is an empty map.
func (c *Client) EntityConfig(entityPath string) (map[string]string, error) {
	p := "/config/" + entityPath
	if err := validatePath(p); err != nil {
		return nil, err
	}
	data, _, err := c.get(p)
	if errors.Is(err, ErrNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeConfig(p, data)
}

// EditEntityConfig is the conditional read-modify-write of
// /config/<entityPath> (editConfigAnnounced): edit gets the keys as read,
// including those another writer keeps there, and the write announces
// the entity. It answers the keys written.
func (c *Client) EditEntityConfig(entityPath string, edit func(map[string]string) error) (map[string]string, error) {
	p := "/config/" + entityPath
	if err := validatePath(p); err != nil {
		return nil, err
	}
	parent, name := splitLast(p)
	return c.editConfigAnnounced(parent, name, entityPath, edit)
}

func splitLast(p string) (parent, name string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// EntityNames lists the children of /config/<parentPath> (e.g. "users",
// "users/alice/clients"); none is nil.
func (c *Client) EntityNames(parentPath string) ([]string, error) {
	p := "/config/" + parentPath
	if err := validatePath(p); err != nil {
		return nil, err
	}
	names, err := c.children(p)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return names, err
}

// tokensPath holds a cluster's HTTP API tokens, one znode per token id.
// Kafka has no such thing; ferry's own znodes live under /ferry. What a
// token's bytes say is server/auth's.
const tokensPath = "/ferry/tokens"

// TokenIDs lists the token znodes; none is nil.
func (c *Client) TokenIDs() ([]string, error) {
	ids, err := c.children(tokensPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return ids, err
}

// Token reads one token's bytes; ErrNotFound when it was revoked.
func (c *Client) Token(id string) ([]byte, error) {
	p := tokensPath + "/" + id
	if err := validatePath(p); err != nil {
		return nil, err
	}
	data, _, err := c.get(p)
	return data, err
}

// WatchTokens delivers the token ids now and after every creation or
// revocation.
func (c *Client) WatchTokens() *Watch[[]string] { return c.watchChildNames(tokensPath) }

// CreateToken writes a new token's znode.
func (c *Client) CreateToken(id string, data []byte) error {
	p := tokensPath + "/" + id
	if err := validatePath(p); err != nil {
		return err
	}
	err := c.do(func(bool) error {
		if err := c.ensurePath(tokensPath); err != nil {
			return err
		}
		_, err := c.conn.Create(c.abs(p), data, 0, openACL)
		return err
	})
	if err != nil {
		return fmt.Errorf("zookeeper: create %s: %w", p, err)
	}
	return nil
}

// DeleteToken removes a token's znode; false when there was none.
func (c *Client) DeleteToken(id string) (bool, error) {
	p := tokensPath + "/" + id
	if err := validatePath(p); err != nil {
		return false, err
	}
	err := c.do(func(bool) error { return c.conn.Delete(c.abs(p), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("zookeeper: delete %s: %w", p, err)
	}
	return true, nil
}
