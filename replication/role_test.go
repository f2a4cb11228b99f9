package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func TestRoleChanges(t *testing.T) {
	pg := delayed.New(nil)
	p, _ := newTestPartition(t, func(c *Config) { c.Waiters = pg })
	if !p.IsLeader() || p.LeaderEpoch() != 0 || len(p.Replicas()) != 1 {
		t.Fatalf("a new partition: %+v, want this broker leading alone in epoch 0", p.Role())
	}
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plainBatch(t, "a"), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := recordbatch.ParseHeader(readAll(t, p, 0))
	if err != nil || h.LeaderEpoch != 3 {
		t.Fatalf("stored batch epoch %d (%v), want the leader epoch 3", h.LeaderEpoch, err)
	}

	op := pg.Register(delayed.NewProduce([]delayed.Wait{{Key: p.key(), Offset: 5}}), time.Minute,
		func(delayed.Key) (delayed.State, bool) { return p.WaitState(), true })
	if err := p.SetRole(Role{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-op.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an acks wait on the old leader was not answered when it became a follower")
	}
	if _, err := p.Append(plainBatch(t, "b"), storage.AppendOptions{}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on a follower: %v", err)
	}
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a role from an older epoch: %v", err)
	}
	if err := p.SetRole(Role{Leader: 2, LeaderEpoch: 5, Replicas: []int32{2, 3}, ISR: []int32{2}}); err == nil {
		t.Fatal("a role that does not assign this broker was applied")
	}
	if p.LeaderEpoch() != 4 || p.Leader() != 2 {
		t.Fatalf("role after refusals: %+v", p.Role())
	}
}

// A cluster's broker opens its partitions without a role: it neither
// leads nor serves until the controller says, and keeps the epoch
// history its log has.
func TestPartitionAwaitingItsRole(t *testing.T) {
	p, cfg := newTestPartition(t)
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	p.Append(plainBatch(t, "a"), storage.AppendOptions{})
	p.Close()
	cfg.AwaitRole = true
	p = openPartition(t, cfg)
	if p.Leader() != NoLeader || p.IsLeader() || p.LeaderEpoch() != 2 {
		t.Fatalf("reopened awaiting its role: %+v", p.Role())
	}
	if _, err := p.Append(plainBatch(t, "b"), storage.AppendOptions{}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before the controller spoke: %v", err)
	}
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plainBatch(t, "b"), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := p.LeaderEpochs(); len(got) != 2 || got[1].Epoch != 3 || got[1].StartOffset != 1 {
		t.Fatalf("epoch history %v, want epoch 3 from offset 1 after epoch 2", got)
	}
}
