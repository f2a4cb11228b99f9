package fetcher

import (
	"sync"
)

// Manager runs this broker's Fetchers, one per leader broker it follows
// partitions of (Kafka's ReplicaFetcherManager, with one fetcher thread
// per source broker).
type Manager struct {
	// template is every Fetcher's Config but the leader's id and address.
	template Config
	mu       struct {
		sync.Mutex
		fetchers map[int32]*Fetcher
		// of is which leader each partition is copied from.
		of     map[key]int32
		closed bool
	}
}

// NewManager starts no Fetcher until a partition is followed.
func NewManager(template Config) *Manager {
	m := &Manager{template: template}
	m.mu.fetchers = map[int32]*Fetcher{}
	m.mu.of = map[key]int32{}
	return m
}

// Follow copies r from leader (at addr), moving it from the Fetcher of
// its previous leader; it truncates first (Fetcher.Add).
func (m *Manager) Follow(r Replica, leader int32, addr string) {
	k := key{r.Topic(), r.Index()}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	prev, had := m.mu.of[k]
	old := m.mu.fetchers[prev]
	f := m.mu.fetchers[leader]
	if f != nil && f.cfg.Addr != addr {
		// The leader moved to another address (a restart with a new
		// listener): its partitions follow to a new Fetcher.
		f = nil
	}
	if f == nil {
		cfg := m.template
		cfg.Leader, cfg.Addr = leader, addr
		f = Start(cfg)
		if stale := m.mu.fetchers[leader]; stale != nil {
			defer stale.Close()
			for pk, l := range m.mu.of {
				if l == leader && pk != k {
					if ps, ok := stale.take(pk); ok {
						f.Add(ps)
					}
				}
			}
		}
		m.mu.fetchers[leader] = f
	}
	m.mu.of[k] = leader
	m.mu.Unlock()
	if had && old != nil && old != f {
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
	leader, ok := m.mu.of[k]
	f := m.mu.fetchers[leader]
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
	leader, ok = m.mu.of[key{topic, partition}]
	return leader, ok
}

// Fetcher is the Fetcher copying from leader, or nil.
func (m *Manager) Fetcher(leader int32) *Fetcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.fetchers[leader]
}

// closeIdle stops the Fetchers left without partitions.
func (m *Manager) closeIdle() {
	m.mu.Lock()
	var idle []*Fetcher
	for id, f := range m.mu.fetchers {
		if f.Len() == 0 {
			idle = append(idle, f)
			delete(m.mu.fetchers, id)
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
	m.mu.fetchers = map[int32]*Fetcher{}
	m.mu.of = map[key]int32{}
	m.mu.Unlock()
	for _, f := range fs {
		f.Close()
	}
}
