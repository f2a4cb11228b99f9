package idempotency

import (
	"context"
	"errors"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
)

// newOwnership follows this broker's leadership of the keys topic
// (package ownership: load on a goroutine, serve once installed, drop on
// losing it). A new epoch while leading keeps the keys loaded.
func (s *Store) newOwnership() *ownership.Table[map[string]storedKey] {
	return ownership.New(ownership.Hooks[map[string]storedKey]{
		Load: func(p, _ int32) (map[string]storedKey, error) { return s.loadPartition(p) },
		Install: func(p int32, o ownership.Owned, loaded map[string]storedKey, took time.Duration) (func(), error) {
			s.mu.Lock()
			s.tab.install(p, loaded)
			s.mu.Unlock()
			return func() {
				s.logger.Info("idempotency keys loaded", "partition", p, "leader_epoch", o.LeaderEpoch, "keys", len(loaded), "took", took)
			}, nil
		},
		Drop: func(p int32) {
			s.mu.Lock()
			n := s.tab.resign(p)
			s.mu.Unlock()
			if n > 0 {
				s.logger.Info("idempotency keys resigned", "partition", p, "keys", n)
			}
		},
		LoadFailed: func(p int32, attempt int, err error) {
			s.logger.Warn("loading idempotency keys failed", "partition", p, "attempt", attempt, "err", err)
		},
	}, s.life)
}

// loadPartition reads partition p: the last record per key wins, a
// tombstone forgets.
func (s *Store) loadPartition(p int32) (map[string]storedKey, error) {
	loaded := map[string]storedKey{}
	if err := s.keys.ReadRecords(p, func(r records.Record) { s.apply(loaded, p, r) }); err != nil {
		return nil, err
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
	return s.own.LoadLedPartitions(s.keys, func(p, _ int32) (map[string]storedKey, error) {
		return s.loadPartition(p) // on failure forgotten: the next request tries again
	})
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
