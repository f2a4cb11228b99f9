package zookeeper

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
)

const (
	topicsPath         = "/brokers/topics"
	topicConfigsPath   = "/config/topics"
	configChangesPath  = "/config/changes"
	configChangePrefix = "config_change_"
)

func topicPath(t string) string       { return topicsPath + "/" + t }
func topicConfigPath(t string) string { return topicConfigsPath + "/" + t }
func partitionStatePath(t string, p int32) string {
	return topicPath(t) + "/partitions/" + strconv.Itoa(int(p)) + "/state"
}

// validTopic applies Kafka's topic name rule, which also keeps a name
// from escaping its znode.
func validTopic(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("zookeeper: invalid topic name %q", truncate(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("zookeeper: invalid topic name %q: only [a-zA-Z0-9._-]", truncate(name))
		}
	}
	return nil
}

// CreateTopic writes /brokers/topics/<t> and /config/topics/<t> in one
// multi, so no broker ever sees a topic without its configs (Kafka
// writes them one after the other). ErrTopicExists when the topic znode
// exists.
func (c *Client) CreateTopic(t TopicAssignment, configs map[string]string) error {
	if err := validTopic(t.Name); err != nil {
		return err
	}
	for p, rs := range t.Partitions {
		if p < 0 || len(rs) == 0 || validReplicas(rs) != nil {
			return fmt.Errorf("zookeeper: topic %s partition %d: invalid replicas %v", t.Name, p, rs)
		}
	}
	topicData, configData := encodeTopic(t), encodeConfig(configs)
	err := c.do(func(retried bool) error {
		if err := c.ensurePath(topicsPath); err != nil {
			return err
		}
		if err := c.ensurePath(topicConfigsPath); err != nil {
			return err
		}
		configOp, err := c.createOrSetOp(topicConfigPath(t.Name), configData)
		if err != nil {
			return err
		}
		res, err := c.conn.Multi(&zk.CreateRequest{Path: c.abs(topicPath(t.Name)), Data: topicData, Acl: openACL}, configOp)
		i, opErr := multiError(res, err)
		if i == 0 && errors.Is(opErr, zk.ErrNodeExists) {
			if retried && c.topicHasID(t) {
				return nil // our earlier attempt was applied
			}
			return fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
		}
		return opErr
	})
	if err != nil && !errors.Is(err, ErrTopicExists) {
		return fmt.Errorf("zookeeper: create topic %s: %w", t.Name, err)
	}
	return err
}

func (c *Client) topicHasID(t TopicAssignment) bool {
	got, err := c.Topic(t.Name)
	return err == nil && !t.ID.IsZero() && got.ID == t.ID
}

// createOrSetOp is a create of p, or a set when a leftover exists (a
// deleted topic's configs stay until the controller removes them).
func (c *Client) createOrSetOp(p string, data []byte) (any, error) {
	ok, _, err := c.conn.Exists(c.abs(p))
	if err != nil {
		return nil, err
	}
	if ok {
		return &zk.SetDataRequest{Path: c.abs(p), Data: data, Version: -1}, nil
	}
	return &zk.CreateRequest{Path: c.abs(p), Data: data, Acl: openACL}, nil
}

// Topics lists the topics, sorted.
func (c *Client) Topics() ([]string, error) {
	names, err := c.children(topicsPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}

// Topic reads a topic's assignment (ErrNotFound when there is none).
func (c *Client) Topic(name string) (TopicAssignment, error) {
	a, _, err := c.TopicVersioned(name)
	return a, err
}

// TopicVersioned reads a topic's assignment and its znode's version, the
// one AddPartitions expects.
func (c *Client) TopicVersioned(name string) (TopicAssignment, int32, error) {
	if err := validTopic(name); err != nil {
		return TopicAssignment{}, 0, err
	}
	data, version, err := c.get(topicPath(name))
	if err != nil {
		return TopicAssignment{}, 0, err
	}
	a, err := decodeTopic(name, data)
	return a, version, err
}

// AddPartitions rewrites /brokers/topics/<t> with the partitions of added
// joined to those it holds, as Kafka's AdminZkClient.addPartitions does:
// the topic id, the existing partitions and a reassignment's adding and
// removing replicas stay as they are. added must number on from the
// znode's last partition. The write is conditional on version (from
// TopicVersioned), so a concurrent change, such as another broker adding
// partitions, is never overwritten: ErrStaleTopic then. The controller's
// topic watch takes it from there (partition states, LeaderAndIsr).
func (c *Client) AddPartitions(name string, added map[int32][]int32, version int32) error {
	if err := validTopic(name); err != nil {
		return err
	}
	for p, rs := range added {
		if len(rs) == 0 || validReplicas(rs) != nil {
			return fmt.Errorf("zookeeper: topic %s partition %d: invalid replicas %v", name, p, rs)
		}
	}
	p := topicPath(name)
	err := c.do(func(retried bool) error {
		data, st, err := c.conn.Get(c.abs(p))
		if err != nil {
			return err
		}
		cur, err := decodeTopic(name, data)
		if err != nil {
			return err
		}
		if st.Version != version {
			if retried && holdsAssignment(cur, added) {
				return nil // our earlier attempt was applied
			}
			return fmt.Errorf("%w: %s is at version %d, not %d", ErrStaleTopic, p, st.Version, version)
		}
		merged, err := withPartitions(cur, added)
		if err != nil {
			return err
		}
		_, err = c.conn.Set(c.abs(p), encodeTopic(merged), version)
		if errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("%w: %s changed after version %d", ErrStaleTopic, p, version)
		}
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	if err != nil && !errors.Is(err, ErrStaleTopic) {
		return fmt.Errorf("zookeeper: add partitions to %s: %w", name, err)
	}
	return err
}

// withPartitions is cur with added joined, which must continue its
// numbering without a gap.
func withPartitions(cur TopicAssignment, added map[int32][]int32) (TopicAssignment, error) {
	n := int32(len(cur.Partitions))
	for p := range added {
		if p < n || p >= n+int32(len(added)) {
			return TopicAssignment{}, fmt.Errorf("%w: topic %s has %d partitions; partition %d does not follow them",
				ErrStaleTopic, cur.Name, n, p)
		}
	}
	merged := cur
	merged.Partitions = maps.Clone(cur.Partitions)
	maps.Copy(merged.Partitions, added)
	return merged, nil
}

func holdsAssignment(cur TopicAssignment, added map[int32][]int32) bool {
	for p, rs := range added {
		if got, ok := cur.Partitions[p]; !ok || !slices.Equal(got, rs) {
			return false
		}
	}
	return true
}

// WatchTopics delivers the sorted topic names now and after every
// creation or deletion.
func (c *Client) WatchTopics() *Watch[[]string] {
	return c.watchChildNames(topicsPath)
}

func (c *Client) watchChildNames(p string) *Watch[[]string] {
	return startWatch(c, p, func() ([]string, <-chan zk.Event, error) {
		names, fired, err := c.watchChildren(p)
		slices.Sort(names)
		return names, fired, err
	})
}

// TopicConfig reads /config/topics/<t>: the topic's overrides.
func (c *Client) TopicConfig(name string) (map[string]string, error) {
	if err := validTopic(name); err != nil {
		return nil, err
	}
	data, _, err := c.get(topicConfigPath(name))
	if err != nil {
		return nil, err
	}
	return decodeConfig(topicConfigPath(name), data)
}

// SetTopicConfig replaces the topic's overrides and, in the same multi,
// adds the /config/changes/config_change_<seq> notification
// {"version":2,"entity_path":"topics/<t>"} Kafka's brokers watch.
func (c *Client) SetTopicConfig(name string, configs map[string]string) error {
	if err := validTopic(name); err != nil {
		return err
	}
	return c.setConfigAnnounced(topicConfigsPath, name, "topics/"+name, configs)
}

// setConfigAnnounced replaces <parent>/<name> with configs and, in the
// same multi, adds the /config/changes notification naming entity, so
// every broker re-reads it.
func (c *Client) setConfigAnnounced(parent, name, entity string, configs map[string]string) error {
	_, err := c.editConfigAnnounced(parent, name, entity, func(cfg map[string]string) error {
		clear(cfg)
		maps.Copy(cfg, configs)
		return nil
	})
	return err
}

// TopicSnapshot is a topic znode as WatchTopic sees it.
type TopicSnapshot struct {
	Assignment TopicAssignment
	Present    bool
}

// WatchTopic delivers one topic's assignment now and after every change
// (partitions added, a reassignment's progress, deletion).
func (c *Client) WatchTopic(name string) (*Watch[TopicSnapshot], error) {
	if err := validTopic(name); err != nil {
		return nil, err
	}
	p := topicPath(name)
	return startWatch(c, p, func() (TopicSnapshot, <-chan zk.Event, error) {
		data, _, present, fired, err := c.watchData(p)
		if err != nil || !present {
			return TopicSnapshot{}, fired, err
		}
		ta, err := decodeTopic(name, data)
		if err != nil {
			c.log.Warn("unreadable topic znode", "topic", name, "err", err)
		}
		return TopicSnapshot{Assignment: ta, Present: err == nil}, fired, nil
	}), nil
}

// DeleteTopicZnodes removes what a deleted topic leaves in ZooKeeper —
// /brokers/topics/<t> with its partition states, /config/topics/<t> and
// the /admin/delete_topics/<t> request — deepest first, each multi fenced
// by the controller epoch, as the controller does when a deletion
// completes.
func (c *Client) DeleteTopicZnodes(topic string, epochVersion int32) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	var paths []string
	for _, root := range []string{topicPath(topic), topicConfigPath(topic), deleteTopicsPath + "/" + topic} {
		found, err := c.subtree(root)
		if err != nil {
			return fmt.Errorf("zookeeper: delete topic %s: %w", topic, err)
		}
		paths = append(paths, found...)
	}
	for chunk := range slices.Chunk(paths, maxOpsPerMulti) {
		ops := make([]any, len(chunk))
		for i, p := range chunk {
			ops[i] = &zk.DeleteRequest{Path: c.abs(p), Version: -1}
		}
		if _, err := c.fencedMulti(epochVersion, ops...); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("zookeeper: delete topic %s: %w", topic, err)
		}
	}
	return nil
}

// subtree lists root and its descendants, children before parents; a
// missing root is an empty list. Depth is bounded: a topic's tree is
// four levels deep.
func (c *Client) subtree(root string) ([]string, error) {
	var walk func(p string, depth int) ([]string, error)
	walk = func(p string, depth int) ([]string, error) {
		if depth > 8 {
			return nil, fmt.Errorf("%s is deeper than a topic's znodes", p)
		}
		kids, err := c.children(p)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []string
		for _, k := range kids {
			sub, err := walk(p+"/"+k, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return append(out, p), nil
	}
	return walk(root, 0)
}

// maxConfigEditAttempts bounds editConfigAnnounced's retries when other
// writers keep changing the znode between its read and its write.
const maxConfigEditAttempts = 16

// ErrConfigContended: a config znode changed under every attempt of an
// edit, which gave up rather than lose a write.
var ErrConfigContended = errors.New("changed by another writer on every attempt")

// editConfigAnnounced is a read-modify-write of parent/name that loses no
// concurrent change: edit gets the configs as read, and the write is
// conditional on the version read (or on the znode still being absent),
// so a change made meanwhile by another broker (a quota beside a SCRAM
// verifier in /config/users/<u>) is re-read and edit applied to it again.
// The notification is created in the same multi. It answers the configs
// written.
func (c *Client) editConfigAnnounced(parent, name, entity string, edit func(map[string]string) error) (map[string]string, error) {
	p := parent + "/" + name
	notice := encodeConfigChange(entity)
	for range maxConfigEditAttempts {
		data, version, err := c.get(p)
		absent := errors.Is(err, ErrNotFound)
		if err != nil && !absent {
			return nil, err
		}
		cfg, err := decodeConfig(p, data)
		if err != nil {
			return nil, err
		}
		if err := edit(cfg); err != nil {
			return nil, err
		}
		encoded := encodeConfig(cfg)
		conflict := false
		err = c.do(func(retried bool) error {
			if retried { // the write may have been applied before the connection broke
				now, _, err := c.conn.Get(c.abs(p))
				if err == nil && bytes.Equal(now, encoded) {
					return nil
				}
			}
			if err := c.ensurePath(parent); err != nil {
				return err
			}
			if err := c.ensurePath(configChangesPath); err != nil {
				return err
			}
			var op any = &zk.SetDataRequest{Path: c.abs(p), Data: encoded, Version: version}
			if absent {
				op = &zk.CreateRequest{Path: c.abs(p), Data: encoded, Acl: openACL}
			}
			i, err := multiError(c.conn.Multi(op, &zk.CreateRequest{
				Path: c.abs(configChangesPath + "/" + configChangePrefix), Data: notice, Acl: openACL, Flags: zk.FlagSequence}))
			if i == 0 && (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists)) {
				conflict = true
				return nil
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("zookeeper: set %s: %w", p, err)
		}
		if !conflict {
			return cfg, nil
		}
	}
	return nil, fmt.Errorf("zookeeper: set %s: %w", p, ErrConfigContended)
}
