package replication

import (
	"bytes"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

func plainBatch(t *testing.T, values ...string) []byte {
	t.Helper()
	var b records.Builder
	for _, v := range values {
		b.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
	}
	data, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readAll returns the partition's batches from offset up to its log end.
func readAll(t *testing.T, p *Replica, offset int64) []byte {
	t.Helper()
	if offset >= p.LogEndOffset() {
		return nil
	}
	rr, err := p.Read(storage.ReadOptions{Offset: offset, MaxBytes: 64 << 20, MinOneBatch: true, MaxOffset: p.LogEndOffset()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rr.Data
}

// follow copies what the leader has beyond the follower's log end, as a
// replica fetcher does, and passes the leader's high watermark on.
func follow(t *testing.T, leader, follower *Replica) {
	t.Helper()
	if data := readAll(t, leader, follower.LogEndOffset()); data != nil {
		if _, err := follower.AppendAsFollower(data); err != nil {
			t.Fatalf("follower append at %d: %v", follower.LogEndOffset(), err)
		}
	}
	follower.FollowHighWatermark(leader.HighWatermark())
}

func TestFollowerCopiesTheLeaderExactly(t *testing.T) {
	leader, _ := newTestPartition(t)
	follower, _ := newTestPartition(t, func(c *Config) { c.BrokerID = 2 })
	for i := range 3 {
		if _, err := leader.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := produceIdem(t, leader, idemBatch(t, 9, 0, int32(2*i), 2)); err != nil {
			t.Fatal(err)
		}
	}
	if follower.HighWatermark() != 0 {
		t.Fatalf("follower high watermark %d before it copied anything", follower.HighWatermark())
	}
	follow(t, leader, follower)
	if !bytes.Equal(readAll(t, leader, 0), readAll(t, follower, 0)) || follower.LogEndOffset() != 12 {
		t.Fatalf("follower log end %d; its bytes differ from the leader's", follower.LogEndOffset())
	}
	if follower.HighWatermark() != 12 {
		t.Fatalf("follower high watermark %d, want the leader's 12", follower.HighWatermark())
	}
	follower.FollowHighWatermark(1000)
	if follower.HighWatermark() != 12 {
		t.Fatalf("a leader high watermark above the follower's log end moved it to %d", follower.HighWatermark())
	}

	// The follower takes over: a producer's retry of its last batch is a
	// duplicate there too, and its next batch continues the sequence.
	if off, err := produceIdem(t, follower, idemBatch(t, 9, 0, 4, 2)); err != nil || off != 10 {
		t.Fatalf("retry on the new leader: offset %d, %v; want the original 10", off, err)
	}
	if off, err := produceIdem(t, follower, idemBatch(t, 9, 0, 6, 2)); err != nil || off != 12 {
		t.Fatalf("next batch on the new leader: offset %d, %v", off, err)
	}
}

// A divergent tail (KIP-101) is cut at a batch boundary, the producer
// state forgets the cut batches, the high watermark comes down to the new
// log end, and fetches waiting on the partition answer at once.
func TestTruncationDropsTheTailAndItsProducers(t *testing.T) {
	pg := delayed.New(nil)
	p, _ := newTestPartition(t, func(c *Config) { c.Waiters = pg })
	produceSeqs(t, p, 9, 4, 2) // offsets 0..7, batches at 0, 2, 4, 6
	p.FollowHighWatermark(8)
	op := pg.Register(delayed.NewFetch(1, []delayed.Wait{{Key: p.key(), Offset: 8, BaseBytes: p.WaitState().VisibleBytes}}),
		time.Minute, func(delayed.Key) (delayed.State, bool) { return p.WaitState(), true })
	if err := p.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if p.LogEndOffset() != 4 || p.HighWatermark() != 4 {
		t.Fatalf("after truncating to 4: log end %d, high watermark %d", p.LogEndOffset(), p.HighWatermark())
	}
	select {
	case <-op.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a fetch waiting on the truncated partition was not answered")
	}
	// The batch at 4 is gone, so it is appended again, not a duplicate.
	if off, err := produceIdem(t, p, idemBatch(t, 9, 0, 4, 2)); err != nil || off != 4 {
		t.Fatalf("the cut batch again: offset %d, %v; want appended at 4", off, err)
	}
	if off, err := produceIdem(t, p, idemBatch(t, 9, 0, 2, 2)); err != nil || off != 2 {
		t.Fatalf("retry of a kept batch: offset %d, %v; want the original 2", off, err)
	}
	if err := p.TruncateTo(-1); err == nil {
		t.Fatal("truncating below the log start succeeded")
	}
}

// A follower's lag is the leader's high watermark in its last fetch
// answer less its own log end (Kafka's fetcher lag, behind MaxLag); a
// leader lags nobody.
func TestFollowerLagIsBehindTheLeadersHighWatermark(t *testing.T) {
	leader, _ := newTestPartition(t)
	follower, _ := newTestPartition(t, func(c *Config) { c.BrokerID = 2 })
	if err := follower.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if lag := follower.FollowerLag(); lag != 0 {
		t.Fatalf("lag %d before any fetch answer", lag)
	}
	if _, err := leader.Append(plainBatch(t, "a", "b", "c", "d", "e"), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	follower.FollowHighWatermark(leader.HighWatermark()) // an answer that brought no records yet
	if lag := follower.FollowerLag(); lag != 5 {
		t.Fatalf("lag %d with 5 records to copy", lag)
	}
	follow(t, leader, follower)
	if lag := follower.FollowerLag(); lag != 0 {
		t.Fatalf("lag %d after copying everything", lag)
	}
	if lag := leader.FollowerLag(); lag != 0 {
		t.Fatalf("a leader's lag is %d", lag)
	}
}
