package fetchsession

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzSessionOps drives a small cache with fetches from fuzzed bytes —
// any id, epoch, version, partitions listed and forgotten, answers with
// any values and errors — and checks its accounting after each: the
// sessions within their bounds, the partition count the sum of theirs,
// every session's order holding exactly its partitions.
func FuzzSessionOps(f *testing.F) {
	f.Add([]byte{0, 0, 12, 3, 1, 2, 3, 0, 1, 1, 12, 1, 9, 1, 0})
	f.Add([]byte{0, 0, 13, 2, 5, 6, 1, 2, 255, 255, 7, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		c := New(Config{Slots: 3, EvictionAge: 5 * time.Millisecond, MaxSessionPartitions: 6, MaxTotalPartitions: 10})
		var ids []int32
		now := t0
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		for len(ops) > 0 {
			now = now.Add(time.Duration(next()) * time.Millisecond)
			r := Request{Version: int16(next() % 18), Follower: next()%2 == 1, Owner: alice}
			if len(ids) > 0 && next()%4 != 0 {
				r.SessionID = ids[int(next())%len(ids)]
			}
			r.SessionEpoch = int32(int8(next()))
			for n := next() % 8; n > 0; n-- {
				t := kmsg.NewFetchRequestTopic()
				t.Topic, t.TopicID = string(rune('a'+next()%3)), [16]byte{next() % 3}
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset = int32(next()%4), int64(next())
				t.Partitions = append(t.Partitions, rp)
				r.Topics = append(r.Topics, t)
			}
			for n := next() % 4; n > 0; n-- {
				r.Forgotten = append(r.Forgotten, kmsg.FetchRequestForgottenTopic{Topic: string(rune('a' + next()%3)),
					TopicID: [16]byte{next() % 3}, Partitions: []int32{int32(next() % 4)}})
			}
			fe := c.Begin(r, now)
			resp := kmsg.NewPtrFetchResponse()
			for _, t := range fe.Topics {
				rt := kmsg.NewFetchResponseTopic()
				for _, p := range t.Partitions {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition, rp.HighWatermark, rp.ErrorCode = p.Partition, int64(next()%3), int16(next()%2)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			if id, _ := fe.Answer(fe.Topics, resp, nil, now); id != 0 {
				ids = append(ids, id)
			}
			checkAccounting(t, c)
		}
	})
}

func checkAccounting(t *testing.T, c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) > c.cfg.Slots {
		t.Fatalf("%d sessions, %d slots", len(c.mu.sessions), c.cfg.Slots)
	}
	n := 0
	for _, s := range c.mu.sessions {
		n += len(s.parts)
		if len(s.order) != len(s.parts) || len(s.parts) > c.cfg.MaxSessionPartitions {
			t.Fatalf("session %d: %d partitions, %d in order", s.id, len(s.parts), len(s.order))
		}
		for _, p := range s.order {
			if s.parts[p.key] != p {
				t.Fatalf("session %d orders a partition it does not hold", s.id)
			}
		}
	}
	if n != c.mu.partitions || n > c.cfg.MaxTotalPartitions {
		t.Fatalf("%d partitions counted, %d held, cap %d", c.mu.partitions, n, c.cfg.MaxTotalPartitions)
	}
}
