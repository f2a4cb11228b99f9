package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication"
)

// A cluster's broker serves produce for topics it holds no replica of
// (forwarding their records), so it needs their configs too: how many
// partitions, max.message.bytes, schema validation, min.insync.replicas,
// timestamps. They are read from the cluster metadata and kept here, not
// in the topic table, which lists what this broker holds. An entry is
// dropped when /config/changes names its topic (ReloadTopicConfigs), when
// the controller's view no longer describes the topic (deleted), and
// after remoteTopicTTL, which bounds what a missed change could cost.

const remoteTopicTTL = 30 * time.Second

type remoteTopics struct {
	mu struct {
		sync.Mutex
		m map[string]remoteTopic
	}
}

type remoteTopic struct {
	t    *topic
	read time.Time
}

// topicHeldElsewhere is a topic of the cluster this broker holds no
// replica of; ok is false when the cluster has no such topic (or this is
// a single node).
func (b *Broker) topicHeldElsewhere(name string) (t *topic, ok bool, err error) {
	view, onCluster := b.Cluster()
	if !onCluster {
		return nil, false, nil
	}
	if _, known := view.Partition(name, 0); !known {
		b.forgetRemoteTopic(name)
		return nil, false, nil
	}
	now := time.Now()
	b.remote.mu.Lock()
	e, cached := b.remote.mu.m[name]
	b.remote.mu.Unlock()
	if cached && now.Sub(e.read) < remoteTopicTTL {
		return e.t, true, nil
	}
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return nil, false, nil // being deleted
	}
	meta := topicMetaOf(tm)
	t = &topic{meta: meta, settings: b.resolveSettings(meta.Configs), partitions: make([]*replication.Replica, meta.Partitions)}
	b.remote.mu.Lock()
	if b.remote.mu.m == nil {
		b.remote.mu.m = map[string]remoteTopic{}
	}
	b.remote.mu.m[name] = remoteTopic{t: t, read: now}
	b.remote.mu.Unlock()
	return t, true, nil
}

func (b *Broker) forgetRemoteTopic(name string) {
	b.remote.mu.Lock()
	delete(b.remote.mu.m, name)
	b.remote.mu.Unlock()
}

// partitionCount is t's partition count as every broker of the cluster
// partitions by: the view's when it describes partitions beyond this
// broker's table (added where this broker holds none).
func (t *topic) partitionCount(view *ClusterView) int32 {
	n := int32(len(t.partitions))
	if view == nil {
		return n
	}
	return view.PartitionsFrom(t.meta.Name, n)
}
