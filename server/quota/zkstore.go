package quota

import (
	"fmt"

	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// ZKStore keeps client quotas where Kafka keeps them: /config/users/<u>,
// /config/users/<u>/clients/<c>, /config/clients/<c>, /config/ips/<ip>
// (KIP-612's connection_creation_rate), <default> for the default entity,
// each announced with a /config/changes notification naming the entity
// path, so every broker reloads it. /config/users/<u> also holds the
// user's SCRAM credentials: a quota write keeps them, as a credential
// write keeps the quotas. Names are written as given (see server/auth's
// ZKUserStore).
type ZKStore struct{ zk *zookeeper.Client }

var _ Store = ZKStore{}

// NewZKStore is the quota store of the cluster behind zk.
func NewZKStore(zk *zookeeper.Client) ZKStore { return ZKStore{zk: zk} }

// QuotaConfig reads one entity's quota keys.
func (s ZKStore) QuotaConfig(entityPath string) (map[string]string, error) {
	if _, err := ParsePath(entityPath); err != nil {
		return nil, err
	}
	all, err := s.zk.EntityConfig(entityPath)
	if err != nil {
		return nil, err
	}
	return quotaKeys(all), nil
}

func quotaKeys(cfg map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if IsQuotaKey(k) {
			out[k] = v
		}
	}
	return out
}

// SetQuotaConfig replaces an entity's quota keys, keeping its other keys
// (a user's SCRAM verifiers, even one written meanwhile), and notifies
// every broker in the same multi.
func (s ZKStore) SetQuotaConfig(entityPath string, cfg map[string]string) error {
	if _, err := ParsePath(entityPath); err != nil {
		return err
	}
	_, err := s.zk.EditEntityConfig(entityPath, func(all map[string]string) error {
		for k := range all {
			if IsQuotaKey(k) {
				delete(all, k)
			}
		}
		for k, v := range cfg {
			all[k] = v
		}
		return nil
	})
	return err
}

// QuotaConfigs reads every entity that has quota keys.
func (s ZKStore) QuotaConfigs() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	add := func(entityPath string) error {
		cfg, err := s.zk.EntityConfig(entityPath)
		if err != nil {
			return fmt.Errorf("zookeeper: /config/%s: %w", entityPath, err)
		}
		if q := quotaKeys(cfg); len(q) > 0 {
			out[entityPath] = q
		}
		return nil
	}
	users, err := s.zk.EntityNames("users")
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if err := add("users/" + u); err != nil {
			return nil, err
		}
		clients, err := s.zk.EntityNames("users/" + u + "/clients")
		if err != nil {
			return nil, err
		}
		for _, cl := range clients {
			if err := add("users/" + u + "/clients/" + cl); err != nil {
				return nil, err
			}
		}
	}
	for _, kind := range []string{"clients", "ips"} {
		names, err := s.zk.EntityNames(kind)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if err := add(kind + "/" + n); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
