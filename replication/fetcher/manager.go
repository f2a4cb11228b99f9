package fetcher

import (
	"sync"
)

// Manager runs this broker's Fetchers, one per leader it follows
// partitions of (Kafka's ReplicaFetcherManager, with one fetcher thread
// per source broker). A leader that comes back at another address gets a
// new Fetcher as its partitions are followed again (LeaderAndIsr); the old
// one stops once it has none.
type Manager struct {
	// template is every Fetcher's Config but the leader's id and address.
	template Config
	mu       struct {
		sync.Mutex
		fetchers map[source]*Fetcher
		// of is where each partition is copied from.
		of     map[key]source
		closed bool
	}
}

// source is a leader broker at one address.
type source struct {
	leader int32
	addr   string
}

// NewManager starts no Fetcher until a partition is followed.
func NewManager(template Config) *Manager {
	m := &Manager{template: template}
	m.mu.fetchers = map[source]*Fetcher{}
	m.mu.of = map[key]source{}
	return m
}

// Follow copies r from leader (at addr), moving it from the Fetcher of
// its previous leader; it truncates first (Fetcher.Add).
func (m *Manager) Follow(r Replica, leader int32, addr string) {
	k, src := key{r.Topic(), r.Index()}, source{leader, addr}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	old := m.mu.fetchers[m.mu.of[k]]
	f := m.mu.fetchers[src]
	if f == nil {
		cfg := m.template
		cfg.Leader, cfg.Addr = leader, addr
		f = Start(cfg)
		m.mu.fetchers[src] = f
	}
	m.mu.of[k] = src
	m.mu.Unlock()
	if old != nil && old != f {
		old.Remove(k.topic, k.partition)
	}
	f.Add(r)
	m.closeIdle()
}

// Unfollow stops copying a partition (it leads now, or left this broker);
// once it returns nothing more is appended to it.
func (m *Manager) Unfollow(topic string, partition int32) {
	k := key{topic, partition}
	m.mu.Lock()
	src, ok := m.mu.of[k]
	f := m.mu.fetchers[src]
	delete(m.mu.of, k)
	m.mu.Unlock()
	if ok && f != nil {
		f.Remove(topic, partition)
	}
	m.closeIdle()
}

// Leader is the broker a partition is copied from; ok is false when it
// is not followed.
func (m *Manager) Leader(topic string, partition int32) (leader int32, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src, ok := m.mu.of[key{topic, partition}]
	return src.leader, ok
}

// closeIdle stops the Fetchers left without partitions.
func (m *Manager) closeIdle() {
	m.mu.Lock()
	var idle []*Fetcher
	for src, f := range m.mu.fetchers {
		if f.Len() == 0 {
			idle = append(idle, f)
			delete(m.mu.fetchers, src)
		}
	}
	m.mu.Unlock()
	for _, f := range idle {
		f.Close()
	}
}

// Close stops every Fetcher.
func (m *Manager) Close() {
	m.mu.Lock()
	m.mu.closed = true
	fs := m.mu.fetchers
	m.mu.fetchers = map[source]*Fetcher{}
	m.mu.of = map[key]source{}
	m.mu.Unlock()
	for _, f := range fs {
		f.Close()
	}
}
