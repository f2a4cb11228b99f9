package fetchsession

import (
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Answer takes the fetch's answer: topics are what was fetched (f.Topics
// as the handler left them: duplicates collapsed, names resolved) and
// resp's partitions answer them in order; hasRecords(k), when not nil,
// says the k-th partition's answer carries records not in RecordBatches
// (sent from the segment files). It returns the session id to
// answer with (0: none) and, for an incremental fetch, which partitions to
// send (send[k]; nil: all). Answer may be called again for the same fetch
// read once more: it compares with what the client knew before this
// fetch, not with the first answer.
func (f *Fetch) Answer(topics []kmsg.FetchRequestTopic, resp *kmsg.FetchResponse, hasRecords func(k int) bool, now time.Time) (sessionID int32, send []bool) {
	if f.ErrorCode != 0 {
		return 0, nil
	}
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case f.s != nil && !f.open:
		return f.s.id, f.s.answer(f.told, resp, hasRecords, now)
	case f.s != nil: // opened by an earlier Answer of this fetch
		if c.mu.sessions[f.s.id] == f.s {
			f.s.remember(topics, resp)
			return f.s.id, nil
		}
		return 0, nil
	case f.open:
		f.s = c.open(f, topics, now)
		if f.s == nil {
			return 0, nil
		}
		f.s.remember(topics, resp)
		return f.s.id, nil
	}
	return 0, nil
}

// Unanswered is the session id for an answer that reads nothing (a
// throttled consumer's, KIP-219): an incremental fetch's session, which
// stays as it was but for the epoch; a full fetch opens none.
func (f *Fetch) Unanswered() int32 {
	if f.ErrorCode != 0 || f.open || f.s == nil {
		return 0
	}
	return f.s.id
}

// answer marks which partitions an incremental answer sends, remembers
// what they told, and moves them to the end of the fetch order. c.mu is
// held.
func (s *session) answer(was []told, resp *kmsg.FetchResponse, hasRecords func(int) bool, now time.Time) []bool {
	send := make([]bool, len(was))
	k := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if k >= len(was) {
				break
			}
			rp := &resp.Topics[ti].Partitions[pi]
			t := &was[k]
			send[k] = len(rp.RecordBatches) > 0 || hasRecords != nil && hasRecords(k) || rp.ErrorCode != 0 ||
				rp.HighWatermark != t.highWatermark || rp.LastStableOffset != t.lastStable || rp.LogStartOffset != t.logStart
			if !t.p.gone {
				t.p.tell(rp)
				t.p.sent = send[k]
			}
			k++
		}
	}
	s.lastUsed = now
	s.sentToEnd()
	return send
}

// tell remembers what an answer told of the partition; after an error,
// nothing, so that the next answer sends it again.
func (p *partition) tell(rp *kmsg.FetchResponseTopicPartition) {
	if rp.ErrorCode != 0 {
		p.highWatermark, p.lastStable, p.logStart = -1, -1, -1
		return
	}
	p.highWatermark, p.lastStable, p.logStart = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset
}

// sentToEnd moves the partitions just sent behind the others, keeping the
// order within each group, and clears their marks.
func (s *session) sentToEnd() {
	s.scratch = s.scratch[:0]
	kept := s.order[:0]
	for _, p := range s.order {
		if p.sent {
			p.sent = false
			s.scratch = append(s.scratch, p)
		} else {
			kept = append(kept, p)
		}
	}
	s.order = append(kept, s.scratch...)
	clear(s.scratch)
}

// remember records, for a full fetch's session, what its answer told.
func (s *session) remember(topics []kmsg.FetchRequestTopic, resp *kmsg.FetchResponse) {
	for ti := range resp.Topics {
		if ti >= len(topics) {
			return
		}
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if p := s.parts[s.key(topics[ti].Topic, topics[ti].TopicID, rp.Partition)]; p != nil {
				p.tell(rp)
			}
		}
	}
}

// open makes a session of a full fetch's partitions, if there is room.
// c.mu is held.
func (c *Cache) open(f *Fetch, topics []kmsg.FetchRequestTopic, now time.Time) *session {
	n := 0
	for _, t := range topics {
		n += len(t.Partitions)
	}
	if n == 0 || n > c.cfg.MaxSessionPartitions || n > c.cfg.MaxTotalPartitions {
		return nil
	}
	c.dropStale(now)
	if !c.makeRoom(f.follower, n, now) {
		return nil
	}
	s := &session{id: c.newID(), epoch: 1, owner: f.owner, follower: f.follower,
		topicIDs: f.version >= firstTopicIDVersion, createdAt: now, lastUsed: now,
		parts: make(map[Key]*partition, n), order: make([]*partition, 0, n)}
	for ti := range topics {
		t := &topics[ti]
		for pi := range t.Partitions {
			k := s.key(t.Topic, t.TopicID, t.Partitions[pi].Partition)
			if s.parts[k] != nil {
				continue // the handler collapses duplicates; a caller that did not
			}
			p := &partition{key: k, fetch: t.Partitions[pi], highWatermark: -1, lastStable: -1, logStart: -1}
			s.parts[k] = p
			s.order = append(s.order, p)
		}
	}
	c.mu.sessions[s.id] = s
	c.mu.partitions += len(s.parts)
	return s
}

// newID picks an unused positive id: random, so that an id does not
// tell how many sessions there were nor which comes next. c.mu is held.
func (c *Cache) newID() int32 {
	for {
		id := rand.Int32N(1<<31-1) + 1
		if c.mu.sessions[id] == nil {
			return id
		}
	}
}

// dropStale removes the sessions unused for EvictionAge. c.mu is held.
func (c *Cache) dropStale(now time.Time) {
	for _, s := range c.mu.sessions {
		if now.Sub(s.lastUsed) > c.cfg.EvictionAge {
			c.remove(s)
			c.mu.evictions++
		}
	}
}

// makeRoom evicts sessions until one with n partitions fits, as Kafka's
// FetchSessionCache.tryEvict decides; false when none may go. c.mu is
// held, the stale sessions already dropped.
func (c *Cache) makeRoom(follower bool, n int, now time.Time) bool {
	for len(c.mu.sessions) >= c.cfg.Slots || c.mu.partitions+n > c.cfg.MaxTotalPartitions {
		victim := c.leastValuable(follower, now)
		if victim == nil || !outweighs(follower, n, victim) {
			return false
		}
		c.remove(victim)
		c.mu.evictions++
	}
	return true
}

// leastValuable is the session a new one may take the place of:
// consumers' first, then the smallest; a consumer's new session may only
// take one older than EvictionAge. c.mu is held.
func (c *Cache) leastValuable(follower bool, now time.Time) *session {
	var best *session
	for _, s := range c.mu.sessions {
		old := now.Sub(s.createdAt) > c.cfg.EvictionAge
		if !old && !(follower && !s.follower) {
			continue
		}
		if best == nil || lessValuable(s, best) {
			best = s
		}
	}
	return best
}

func lessValuable(a, b *session) bool {
	if a.follower != b.follower {
		return !a.follower
	}
	if len(a.parts) != len(b.parts) {
		return len(a.parts) < len(b.parts)
	}
	return a.id < b.id
}

// outweighs: a new session of n partitions is worth more than victim
// (as in Kafka, where the new key's id 0 sorts below any session's, an
// equal size is not enough).
func outweighs(follower bool, n int, victim *session) bool {
	if follower != victim.follower {
		return follower
	}
	return n > len(victim.parts)
}
