package zookeeper

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

const (
	isrChangesPath  = "/isr_change_notification"
	isrChangePrefix = "isr_change_"
	// maxOpsPerMulti keeps one multi well under ZooKeeper's 1 MiB request
	// limit.
	maxOpsPerMulti = 500
)

// CreatePartitionStates creates each partition's state znode (and the
// partitions/<p> parents) behind the controller epoch check, in as few
// multis as fit: ErrControllerMoved when this controller is fenced.
func (c *Client) CreatePartitionStates(topic string, states map[int32]PartitionState, epochVersion int32) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	parts := make([]int32, 0, len(states))
	for p := range states {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for chunk := range slices.Chunk(parts, maxOpsPerMulti/2) {
		ops, err := c.partitionCreateOps(topic, chunk, states)
		if err != nil {
			return err
		}
		_, err = c.fencedMulti(epochVersion, ops...)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s (create the topic first)", ErrNotFound, topicPath(topic))
		}
		if err != nil {
			return fmt.Errorf("zookeeper: create partition states of %s: %w", topic, err)
		}
	}
	return nil
}

func (c *Client) partitionCreateOps(topic string, parts []int32, states map[int32]PartitionState) ([]any, error) {
	var ops []any
	parent := topicPath(topic) + "/partitions"
	ok, _, err := c.conn.Exists(c.abs(parent))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %s: %w", parent, err)
	}
	if !ok {
		ops = append(ops, &zk.CreateRequest{Path: c.abs(parent), Acl: openACL})
	}
	for _, p := range parts {
		st := states[p]
		if err := validReplicas(st.ISR); err != nil {
			return nil, fmt.Errorf("zookeeper: %s-%d: isr: %v", topic, p, err)
		}
		ops = append(ops,
			&zk.CreateRequest{Path: c.abs(parent + "/" + strconv.Itoa(int(p))), Acl: openACL},
			&zk.CreateRequest{Path: c.abs(partitionStatePath(topic, p)), Data: encodeState(st), Acl: openACL})
	}
	return ops, nil
}

// PartitionState reads a partition's state with its znode version.
func (c *Client) PartitionState(topic string, partition int32) (PartitionState, error) {
	if err := validTopic(topic); err != nil {
		return PartitionState{}, err
	}
	p := partitionStatePath(topic, partition)
	data, version, err := c.get(p)
	if err != nil {
		return PartitionState{}, err
	}
	return decodeState(p, data, version)
}

// UpdatePartitionState is the controller's write: conditional on
// st.Version (ErrStalePartitionState when someone wrote since) and
// fenced by the controller epoch (ErrControllerMoved). It returns the
// znode's new version.
func (c *Client) UpdatePartitionState(topic string, partition int32, st PartitionState, epochVersion int32) (int32, error) {
	if err := validTopic(topic); err != nil {
		return 0, err
	}
	p := partitionStatePath(topic, partition)
	res, err := c.fencedMulti(epochVersion, &zk.SetDataRequest{Path: c.abs(p), Data: encodeState(st), Version: st.Version})
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("%w: %s is not at version %d", ErrStalePartitionState, p, st.Version)
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("%w: %s", ErrNotFound, p)
	case err != nil:
		return 0, fmt.Errorf("zookeeper: update %s: %w", p, err)
	}
	return res[0].Stat.Version, nil
}

// UpdateISR is the leader's own ISR write, conditional on st.Version
// only (as Kafka's leader writes are; the controller learns of it
// through NotifyISRChange). When the version moved on but the znode
// already holds exactly this state (our write landed and its reply was
// lost), it succeeds, as Kafka's checkLeaderAndIsrZkData does.
func (c *Client) UpdateISR(topic string, partition int32, st PartitionState) (int32, error) {
	if err := validTopic(topic); err != nil {
		return 0, err
	}
	p := partitionStatePath(topic, partition)
	var version int32
	err := c.do(func(bool) error {
		s, err := c.conn.Set(c.abs(p), encodeState(st), st.Version)
		if err == nil {
			version = s.Version
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		if cur, rerr := c.PartitionState(topic, partition); rerr == nil && sameState(cur, st) {
			return cur.Version, nil
		}
		return 0, fmt.Errorf("%w: %s is not at version %d", ErrStalePartitionState, p, st.Version)
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("%w: %s", ErrNotFound, p)
	case err != nil:
		return 0, fmt.Errorf("zookeeper: update %s: %w", p, err)
	}
	return version, nil
}

func sameState(a, b PartitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch &&
		a.ControllerEpoch == b.ControllerEpoch && slices.Equal(a.ISR, b.ISR)
}

// NotifyISRChange creates a persistent sequential
// /isr_change_notification/isr_change_<seq> naming the partitions whose
// ISR this leader changed.
func (c *Client) NotifyISRChange(parts []TopicPartition) error {
	data := encodePartitionList(parts)
	err := c.do(func(bool) error {
		if err := c.ensurePath(isrChangesPath); err != nil {
			return err
		}
		_, err := c.conn.Create(c.abs(isrChangesPath+"/"+isrChangePrefix), data, zk.FlagSequence, openACL)
		return err
	})
	if err != nil {
		return fmt.Errorf("zookeeper: notify isr change: %w", err)
	}
	return nil
}

// ISRChange is one notification.
type ISRChange struct {
	Name       string // the znode name, isr_change_<seq>
	Partitions []TopicPartition
	Err        error // the znode did not decode; delete it all the same
}

// ISRChanges reads the pending notifications, oldest first; one that
// vanished meanwhile is left out.
func (c *Client) ISRChanges() ([]ISRChange, error) {
	names, err := c.children(isrChangesPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names) // the sequence suffix is zero-padded
	out := make([]ISRChange, 0, len(names))
	for _, name := range names {
		if !strings.HasPrefix(name, isrChangePrefix) {
			continue
		}
		p := isrChangesPath + "/" + name
		data, _, err := c.get(p)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		parts, derr := decodePartitionList(p, data)
		out = append(out, ISRChange{Name: name, Partitions: parts, Err: derr})
	}
	return out, nil
}

// DeleteISRChanges deletes handled notifications, fenced by the
// controller epoch; ones already gone are fine.
func (c *Client) DeleteISRChanges(names []string, epochVersion int32) error {
	for _, name := range names {
		if !strings.HasPrefix(name, isrChangePrefix) || strings.Contains(name, "/") {
			return fmt.Errorf("zookeeper: %q is not an isr change notification", truncate(name))
		}
		err := c.fenced(epochVersion, &zk.DeleteRequest{Path: c.abs(isrChangesPath + "/" + name), Version: -1})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("zookeeper: delete %s/%s: %w", isrChangesPath, name, err)
		}
	}
	return nil
}

// WatchISRChanges delivers the notification names now and whenever one
// is added or removed; the controller reads them with ISRChanges.
func (c *Client) WatchISRChanges() *Watch[[]string] { return c.watchChildNames(isrChangesPath) }

// PartitionStates reads every partition state of a topic (a new
// controller's first read); partitions without a state znode are left
// out.
func (c *Client) PartitionStates(topic string) (map[int32]PartitionState, error) {
	if err := validTopic(topic); err != nil {
		return nil, err
	}
	names, err := c.children(topicPath(topic) + "/partitions")
	if errors.Is(err, ErrNotFound) {
		return map[int32]PartitionState{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int32]PartitionState, len(names))
	for _, name := range names {
		p, err := strconv.ParseInt(name, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%w: %s/partitions/%s is not a partition", ErrCorrupt, topicPath(topic), truncate(name))
		}
		st, err := c.PartitionState(topic, int32(p))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[int32(p)] = st
	}
	return out, nil
}
