package zookeeper

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/ferry-mq/ferry/server/quota"
)

// Client quotas live where Kafka keeps them: /config/users/<u>,
// /config/users/<u>/clients/<c>, /config/clients/<c>, /config/ips/<ip>
// (KIP-612's connection_creation_rate), <default> for the default entity,
// each {"version":1,"config":{…}}, announced with a /config/changes
// notification naming the entity path (users/<u>, clients/<c>,
// users/<u>/clients/<c>, ips/<ip>), so every broker reloads it. /config/users/<u> also holds the
// user's SCRAM credentials: a quota write keeps them, as a credential
// write keeps the quotas. Names are written as given (see users.go).

const (
	clientsConfigPath = "/config/clients"
	ipsConfigPath     = "/config/ips"
)

// QuotaConfig reads one entity's quota keys (quota.Store).
func (c *Client) QuotaConfig(entityPath string) (map[string]string, error) {
	if _, err := quota.ParsePath(entityPath); err != nil {
		return nil, err
	}
	all, err := c.entityConfig(entityPath)
	if err != nil {
		return nil, err
	}
	return quotaKeys(all), nil
}

func (c *Client) entityConfig(entityPath string) (map[string]string, error) {
	p := "/config/" + entityPath
	data, _, err := c.get(p)
	if errors.Is(err, ErrNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeConfig(p, data)
}

func quotaKeys(cfg map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if quota.IsQuotaKey(k) {
			out[k] = v
		}
	}
	return out
}

// SetQuotaConfig replaces an entity's quota keys, keeping its other keys
// (a user's SCRAM verifiers, even one written meanwhile), and notifies
// every broker in the same multi (quota.Store).
func (c *Client) SetQuotaConfig(entityPath string, cfg map[string]string) error {
	if _, err := quota.ParsePath(entityPath); err != nil {
		return err
	}
	i := strings.LastIndexByte(entityPath, '/')
	_, err := c.editConfigAnnounced("/config/"+entityPath[:i], entityPath[i+1:], entityPath, func(all map[string]string) error {
		for k := range all {
			if quota.IsQuotaKey(k) {
				delete(all, k)
			}
		}
		maps.Copy(all, cfg)
		return nil
	})
	return err
}

// QuotaConfigs reads every entity that has quota keys (quota.Store).
func (c *Client) QuotaConfigs() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	add := func(entityPath string) error {
		cfg, err := c.entityConfig(entityPath)
		if err != nil {
			return fmt.Errorf("zookeeper: /config/%s: %w", entityPath, err)
		}
		if q := quotaKeys(cfg); len(q) > 0 {
			out[entityPath] = q
		}
		return nil
	}
	users, err := c.Users()
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if err := add("users/" + u); err != nil {
			return nil, err
		}
		clients, err := c.childrenOrNone(usersConfigPath + "/" + u + "/clients")
		if err != nil {
			return nil, err
		}
		for _, cl := range clients {
			if err := add("users/" + u + "/clients/" + cl); err != nil {
				return nil, err
			}
		}
	}
	clients, err := c.childrenOrNone(clientsConfigPath)
	if err != nil {
		return nil, err
	}
	for _, cl := range clients {
		if err := add("clients/" + cl); err != nil {
			return nil, err
		}
	}
	ips, err := c.childrenOrNone(ipsConfigPath)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if err := add("ips/" + ip); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) childrenOrNone(p string) ([]string, error) {
	names, err := c.children(p)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return names, err
}
