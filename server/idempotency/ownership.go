package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// onLeadership follows this broker's leadership of the keys topic. It runs
// on the goroutine applying the controller's request and must not block:
// the load runs on its own goroutine.
func (s *Store) onLeadership(ch server.LeadershipChange) {
	s.mu.Lock()
	if !ch.Leading {
		n := s.tab.resign(ch.Partition)
		s.mu.Unlock()
		if n > 0 {
			s.logger.Info("idempotency keys resigned", "partition", ch.Partition, "keys", n)
		}
		return
	}
	start := s.tab.lead(ch.Partition, ch.LeaderEpoch)
	s.mu.Unlock()
	if !start || s.closed() {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.loadOwned(ch.Partition, ch.LeaderEpoch)
	}()
}

// loadOwned reads partition p and serves its keys if this broker still
// leads it at the same epoch; a failed read is retried while it does.
func (s *Store) loadOwned(p, leaderEpoch int32) {
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		loading := s.tab.stillLoading(p, leaderEpoch)
		s.mu.Unlock()
		if !loading {
			return
		}
		start := time.Now()
		loaded, err := s.loadPartition(p)
		if err == nil {
			s.mu.Lock()
			ok := s.tab.install(p, leaderEpoch, loaded)
			s.mu.Unlock()
			if ok {
				s.logger.Info("idempotency keys loaded", "partition", p, "leader_epoch", leaderEpoch, "keys", len(loaded), "took", time.Since(start))
			}
			return
		}
		s.logger.Warn("loading idempotency keys failed", "partition", p, "attempt", attempt, "err", err)
		select {
		case <-s.closing:
			return
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// loadPartition reads partition p from its log start to its log end: the
// last record per key wins, a tombstone forgets. It reads past the high
// watermark: a new leader's log holds every key the old one acknowledged,
// some not yet below its high watermark.
func (s *Store) loadPartition(p int32) (map[string]storedKey, error) {
	part, err := s.broker.Partition(Topic, p)
	if err != nil {
		return nil, err
	}
	loaded := map[string]storedKey{}
	next, end := part.LogStartOffset(), part.LogEndOffset()
	maxDecompressed := s.broker.Config().MaxDecompressedBytes
	var buf []byte
	for next < end {
		data, err := s.broker.ReadBatches(Topic, p, next, end, 1<<20, buf[:0])
		if err != nil {
			return nil, fmt.Errorf("load %s-%d at %d: %w", Topic, p, next, err)
		}
		if len(data) == 0 {
			break
		}
		buf = data
		from := next
		err = records.Decode(data, from, maxDecompressed, func(r records.Record) bool {
			next = r.Offset + 1
			s.apply(loaded, p, r)
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("load %s-%d at %d: %w", Topic, p, from, err)
		}
		if next == from {
			break
		}
	}
	return loaded, nil
}

func (s *Store) apply(loaded map[string]storedKey, p int32, r records.Record) {
	key := string(r.Key)
	if r.Value == nil {
		delete(loaded, key)
		return
	}
	sk, err := decodeValue(r.Value)
	if err != nil {
		s.logger.Warn("idempotency key record skipped", "partition", p, "offset", r.Offset, "err", err)
		return
	}
	loaded[key] = sk
}

// loadLedPartitions loads, before New returns, the partitions this broker
// leads already: on a single node, all of them.
func (s *Store) loadLedPartitions() error {
	n := s.partitionCount()
	for p := int32(0); p < n; p++ {
		part, err := s.broker.Partition(Topic, p)
		if err != nil || part.Leader() != s.broker.BrokerID() {
			continue
		}
		epoch := part.LeaderEpoch()
		s.mu.Lock()
		fresh := s.tab.lead(p, epoch)
		s.mu.Unlock()
		if !fresh {
			continue // loaded, or being loaded by its leadership's loader
		}
		loaded, err := s.loadPartition(p)
		s.mu.Lock()
		if err != nil {
			s.tab.resign(p) // the next request tries again
		} else {
			s.tab.install(p, epoch, loaded)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// expiryLoop tombstones keys past the window every ExpiryInterval.
func (s *Store) expiryLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.ExpiryInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-tick.C:
			s.Expire(context.Background())
		}
	}
}

// Expire tombstones the keys whose window is over and forgets them; it
// reports how many. The background loop calls it; tests may too.
func (s *Store) Expire(ctx context.Context) int {
	now := s.now()
	s.mu.Lock()
	due := s.tab.expiredKeys(now)
	s.mu.Unlock()
	n := 0
	for p, keys := range due {
		for len(keys) > 0 {
			chunk := keys[:min(len(keys), 500)]
			keys = keys[len(chunk):]
			err := s.writeMany(ctx, p, chunk, make([][]byte, len(chunk)), true)
			if err != nil && !errors.Is(err, server.ErrShuttingDown) {
				s.logger.Warn("idempotency key expiry not written", "partition", p, "keys", len(chunk), "err", err)
			}
			if err != nil {
				chunk = append(chunk, keys...) // none of the rest is tried either
				keys = nil
			}
			s.mu.Lock()
			for _, k := range chunk {
				switch {
				case err != nil:
					s.tab.keep(p, k)
				case s.tab.forget(p, k):
					n++
				}
			}
			s.mu.Unlock()
		}
	}
	return n
}

// Stats is the store's state for metrics and tests.
type Stats struct {
	Keys  int
	Bytes int64
}

// Stats counts the keys this broker holds.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Bytes: s.tab.bytes}
	for _, op := range s.tab.parts {
		st.Keys += len(op.keys)
	}
	return st
}
