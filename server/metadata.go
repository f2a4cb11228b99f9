package server

import "github.com/ferry-mq/ferry/replication"

// metadataFile is the single node's topic table (replication.LocalMetadata).
const metadataFile = replication.LocalMetadataFile

// topicMeta is one topic's durable description, as the core uses it.
type topicMeta struct {
	Name              string
	ID                string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	// replicas[p] is partition p's assignment, preferred leader first.
	replicas [][]int32
}

func topicMetaOf(t replication.TopicMetadata) topicMeta {
	return topicMeta{Name: t.Name, ID: t.ID, Partitions: t.Partitions(), ReplicationFactor: t.ReplicationFactor(),
		Configs: t.Configs, replicas: t.Replicas}
}

// recorded is tm as the cluster metadata records it; a single node
// assigns every partition to itself.
func (b *Broker) recorded(tm topicMeta) replication.TopicMetadata {
	replicas := tm.replicas
	for p := int32(len(replicas)); p < tm.Partitions; p++ {
		replicas = append(replicas, []int32{b.cfg.BrokerID})
	}
	return replication.TopicMetadata{Name: tm.Name, ID: tm.ID, Replicas: replicas[:tm.Partitions], Configs: tm.Configs}
}
