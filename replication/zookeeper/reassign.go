package zookeeper

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// WriteTopicAssignment replaces /brokers/topics/<t>'s partitions with t's
// (replicas, and adding/removing during a reassignment), keeping the
// topic id the znode holds, fenced by the controller epoch: the
// controller's write of a reassignment's steps (Kafka's
// updateReplicaAssignmentForPartition).
func (c *Client) WriteTopicAssignment(t TopicAssignment, epochVersion int32) error {
	if err := validTopic(t.Name); err != nil {
		return err
	}
	for p, rs := range t.Partitions {
		if len(rs) == 0 || validReplicas(rs) != nil {
			return fmt.Errorf("zookeeper: topic %s partition %d: invalid replicas %v", t.Name, p, rs)
		}
	}
	cur, err := c.Topic(t.Name)
	if err != nil {
		return err
	}
	t.ID = cur.ID
	if err := c.fenced(epochVersion, &zk.SetDataRequest{Path: c.abs(topicPath(t.Name)), Data: encodeTopic(t), Version: -1}); err != nil {
		return fmt.Errorf("zookeeper: write %s: %w", topicPath(t.Name), err)
	}
	return nil
}
