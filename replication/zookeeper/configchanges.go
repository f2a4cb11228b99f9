package zookeeper

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Topic config changes reach every broker as Kafka's do: a writer replaces
// /config/topics/<t> and, in the same multi, creates the sequential
// notification /config/changes/config_change_<seq> naming the entity
// ({"version":2,"entity_path":"topics/<t>"}); each broker watches the
// notifications and re-reads the configs of the topics named by the ones
// newer than the last it handled. Notifications are not purged (Kafka
// deletes them 15 minutes after their creation): they are small and
// written only by config changes.

// WatchConfigChanges delivers the names of the notifications under
// /config/changes each time they change.
func (c *Client) WatchConfigChanges() *Watch[[]string] { return c.watchChildNames(configChangesPath) }

// ConfigChanges turns notification snapshots into the topics whose
// configs changed, each notification once.
type ConfigChanges struct {
	c    *Client
	last int64 // sequence number of the newest notification handled
}

// ConfigChangesAfter starts after the newest of names: whoever calls it
// has read the configs as they are now.
func (c *Client) ConfigChangesAfter(names []string) *ConfigChanges {
	cc := &ConfigChanges{c: c, last: -1}
	for _, n := range names {
		if seq, ok := configChangeSeq(n); ok && seq > cc.last {
			cc.last = seq
		}
	}
	return cc
}

// Changed is what a batch of notifications names: topics whose configs
// changed, whether some broker's (or every broker's) did, users whose
// configs (SCRAM credentials, quotas) did, and the client quota entities
// (users/<u>, clients/<c>, users/<u>/clients/<c>, ips/<ip>) that changed.
type Changed struct {
	Topics  []string
	Brokers bool
	Users   []string
	Quotas  []string
}

// Topics reads the notifications among names newer than the last one
// handled, in sequence order, and returns the topics they name (each
// once). On an error the notifications not read are read next time.
func (cc *ConfigChanges) Topics(names []string) ([]string, error) {
	ch, err := cc.Read(names)
	return ch.Topics, err
}

// Read is Topics with the broker and user config changes too.
func (cc *ConfigChanges) Read(names []string) (Changed, error) {
	type notice struct {
		name string
		seq  int64
	}
	var fresh []notice
	for _, n := range names {
		if seq, ok := configChangeSeq(n); ok && seq > cc.last {
			fresh = append(fresh, notice{n, seq})
		}
	}
	// ZooKeeper does not promise children in any order.
	slices.SortFunc(fresh, func(a, b notice) int { return cmp.Compare(a.seq, b.seq) })
	var ch Changed
	seen := map[string]bool{}
	for _, n := range fresh {
		data, _, err := cc.c.get(configChangesPath + "/" + n.name)
		if errors.Is(err, ErrNotFound) {
			cc.last = n.seq // purged by someone: nothing to read
			continue
		}
		if err != nil {
			return ch, err
		}
		cc.last = n.seq
		entity, err := decodeConfigChange(data)
		if err != nil {
			continue // not ours to understand (a newer writer): skip, as Kafka logs and skips
		}
		if t, ok := strings.CutPrefix(entity, "topics/"); ok && !seen[entity] {
			seen[entity] = true
			ch.Topics = append(ch.Topics, t)
		}
		if strings.HasPrefix(entity, "brokers/") {
			ch.Brokers = true
		}
		if strings.HasPrefix(entity, "users/") || strings.HasPrefix(entity, "clients/") || strings.HasPrefix(entity, "ips/") {
			if seen[entity] {
				continue
			}
			seen[entity] = true
			ch.Quotas = append(ch.Quotas, entity)
			// users/<u>/clients/<c> holds quotas only; users/<u> also
			// holds the user's credentials.
			if u, ok := strings.CutPrefix(entity, "users/"); ok && !strings.Contains(u, "/") && u != DefaultEntity {
				ch.Users = append(ch.Users, u)
			}
		}
	}
	return ch, nil
}

func configChangeSeq(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, configChangePrefix)
	if !ok || digits == "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil && seq >= 0
}

// decodeConfigChange reads a notification's entity path (version 2; a
// version 1 notification names a topic by itself, as Kafka 0.9 wrote).
func decodeConfigChange(data []byte) (string, error) {
	var v struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := decodeJSON(configChangesPath, data, &v); err != nil {
		return "", err
	}
	switch {
	case v.Version == 2 && v.EntityPath != "":
		return v.EntityPath, nil
	case v.Version == 1 && v.EntityType == "topics" && v.EntityName != "":
		return "topics/" + v.EntityName, nil
	}
	return "", fmt.Errorf("zookeeper: %s: unknown notification version %d", configChangesPath, v.Version)
}
