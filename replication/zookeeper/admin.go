package zookeeper

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

const (
	deleteTopicsPath = "/admin/delete_topics"
	reassignPath     = "/admin/reassign_partitions"
)

// ErrReassignmentInProgress: /admin/reassign_partitions exists already.
var ErrReassignmentInProgress = errors.New("zookeeper: a partition reassignment is in progress")

// MarkTopicForDeletion creates /admin/delete_topics/<t>, the request the
// controller acts on; marking twice is fine.
func (c *Client) MarkTopicForDeletion(topic string) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	err := c.do(func(bool) error { return c.ensurePath(deleteTopicsPath + "/" + topic) })
	if err != nil {
		return fmt.Errorf("zookeeper: mark %s for deletion: %w", topic, err)
	}
	return nil
}

// TopicsMarkedForDeletion lists the pending deletions, sorted.
func (c *Client) TopicsMarkedForDeletion() ([]string, error) {
	names, err := c.children(deleteTopicsPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}

// RemoveTopicDeletions deletes handled deletion requests, fenced by the
// controller epoch.
func (c *Client) RemoveTopicDeletions(topics []string, epochVersion int32) error {
	for _, t := range topics {
		if err := validTopic(t); err != nil {
			return err
		}
		err := c.fenced(epochVersion, &zk.DeleteRequest{Path: c.abs(deleteTopicsPath + "/" + t), Version: -1})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("zookeeper: delete %s/%s: %w", deleteTopicsPath, t, err)
		}
	}
	return nil
}

// WatchTopicDeletions delivers the pending deletions now and after every
// change.
func (c *Client) WatchTopicDeletions() *Watch[[]string] { return c.watchChildNames(deleteTopicsPath) }

// CreateReassignment writes /admin/reassign_partitions (the legacy,
// pre-KIP-455 way kafka-reassign-partitions starts one):
// ErrReassignmentInProgress when one exists.
func (c *Client) CreateReassignment(rs []Reassignment) error {
	if err := validReassignments(rs); err != nil {
		return err
	}
	data := encodeReassignments(rs)
	err := c.do(func(retried bool) error {
		if err := c.ensurePath("/admin"); err != nil {
			return err
		}
		_, err := c.conn.Create(c.abs(reassignPath), data, 0, openACL)
		if errors.Is(err, zk.ErrNodeExists) && retried {
			return nil
		}
		return err
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return ErrReassignmentInProgress
	}
	if err != nil {
		return fmt.Errorf("zookeeper: create %s: %w", reassignPath, err)
	}
	return nil
}

func validReassignments(rs []Reassignment) error {
	for _, r := range rs {
		if err := validTopic(r.Topic); err != nil {
			return err
		}
		if r.Partition < 0 || validReplicas(r.Replicas) != nil {
			return fmt.Errorf("zookeeper: reassignment of %s-%d: invalid replicas %v", r.Topic, r.Partition, r.Replicas)
		}
	}
	return nil
}

// Reassignments reads the pending reassignment (none: nil).
func (c *Client) Reassignments() ([]Reassignment, error) {
	data, _, err := c.get(reassignPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeReassignments(data)
}

// SetReassignments rewrites the pending reassignment (the controller
// drops the finished partitions), fenced by the controller epoch.
func (c *Client) SetReassignments(rs []Reassignment, epochVersion int32) error {
	if err := validReassignments(rs); err != nil {
		return err
	}
	err := c.fenced(epochVersion, &zk.SetDataRequest{Path: c.abs(reassignPath), Data: encodeReassignments(rs), Version: -1})
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrNotFound, reassignPath)
	}
	return err
}

// DeleteReassignments removes the finished reassignment, fenced by the
// controller epoch.
func (c *Client) DeleteReassignments(epochVersion int32) error {
	err := c.fenced(epochVersion, &zk.DeleteRequest{Path: c.abs(reassignPath), Version: -1})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: delete %s: %w", reassignPath, err)
	}
	return nil
}

// WatchReassignments delivers the pending reassignment (nil: none) now
// and after every change.
func (c *Client) WatchReassignments() *Watch[[]Reassignment] {
	return startWatch(c, reassignPath, func() ([]Reassignment, <-chan zk.Event, error) {
		data, _, present, fired, err := c.watchData(reassignPath)
		if err != nil || !present {
			return nil, fired, err
		}
		rs, err := decodeReassignments(data)
		if err != nil {
			c.log.Warn("ignoring an unreadable reassignment", "err", err)
		}
		return rs, fired, nil
	})
}
