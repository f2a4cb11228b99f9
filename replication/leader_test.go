package replication

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/replication/isr"
	"github.com/ferry-mq/ferry/storage"
)

// The partition feeds its leader state: a follower that never fetches
// holds the high watermark back until it has lagged past
// replica.lag.time.max.ms, the shrink is proposed to the cluster, and once
// committed the ISR is the leader alone and the high watermark moves.
// A follower's fetches then advance it and propose it back.
func TestLeaderShrinksAndExpandsTheISR(t *testing.T) {
	var proposals []*isr.Proposal
	clock := time.Unix(1_700_000_000, 0)
	p, _ := newTestPartition(t, func(c *Config) {
		c.Replication = isr.Config{ReplicaLagTimeMax: 30 * time.Second}
		c.OnISRChange = func(_ *Replica, prop *isr.Proposal) { proposals = append(proposals, prop) }
		c.Now = func() time.Time { return clock }
	})
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZkVersion: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 0 {
		t.Fatalf("high watermark %d before the follower fetched", p.HighWatermark())
	}
	if got := p.LeaderEpochs(); len(got) != 1 || got[0].Epoch != 1 || got[0].StartOffset != 0 {
		t.Fatalf("epoch history %v, want epoch 1 from offset 0", got)
	}
	clock = clock.Add(10 * time.Second)
	p.Tick(clock)
	if len(proposals) != 0 {
		t.Fatalf("proposed %+v before the lag time", proposals[0])
	}
	clock = clock.Add(21 * time.Second)
	p.Tick(clock)
	if len(proposals) != 1 || proposals[0].Change != isr.Shrink || !slices.Equal(proposals[0].State.ISR, []int32{1}) {
		t.Fatalf("proposals %+v, want a shrink to [1]", proposals)
	}
	p.ISRCommitted(proposals[0], 5)
	if !slices.Equal(p.ISR(), []int32{1}) || p.Role().ZkVersion != 5 || p.HighWatermark() != 2 {
		t.Fatalf("after the commit: ISR %v version %d high watermark %d", p.ISR(), p.Role().ZkVersion, p.HighWatermark())
	}

	if err := p.FollowerFetched(2, 1, 2); err != nil {
		t.Fatal(err)
	}
	if len(proposals) != 2 || proposals[1].Change != isr.Expand || !slices.Equal(proposals[1].State.ISR, []int32{1, 2}) {
		t.Fatalf("after the follower caught up: proposals %+v, want an expand", proposals)
	}
	if err := p.FollowerFetched(3, 1, 2); err == nil {
		t.Fatal("a fetch from a broker that is not a replica was counted")
	}
	if err := p.FollowerFetched(2, 0, 2); err == nil {
		t.Fatal("a fetch from an older leader epoch was counted")
	}
}

// OffsetForLeaderEpoch's answers follow the history the partition keeps
// across leaderships and restarts.
func TestEpochHistoryAcrossLeaderships(t *testing.T) {
	p, cfg := newTestPartition(t)
	p.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}) // epoch 0: 0..1
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	p.Append(plainBatch(t, "c"), storage.AppendOptions{}) // epoch 3: 2
	p = reopen(t, p, cfg)
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		asked, wantEpoch int32
		wantOffset       int64
	}{{0, 0, 2}, {1, 0, 2}, {3, 3, 3}} {
		got, err := p.EndOffsetForEpoch(3, c.asked)
		if err != nil || got.Epoch != c.wantEpoch || got.Offset != c.wantOffset {
			t.Errorf("epoch %d: %+v %v, want epoch %d ending at %d", c.asked, got, err, c.wantEpoch, c.wantOffset)
		}
	}
	if _, err := p.EndOffsetForEpoch(2, 3); err == nil {
		t.Error("a request in an older current epoch was answered")
	}
}

// A single node's partitions stay in epoch 0 and write no
// leader-epoch-checkpoint (creating many partitions costs no file each);
// the first other epoch writes it.
func TestEpochZeroWritesNoCheckpoint(t *testing.T) {
	p, _ := newTestPartition(t)
	path := filepath.Join(p.Dir(), checkpoint.LeaderEpochFile)
	p.Append(plainBatch(t, "a"), storage.AppendOptions{})
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("epoch 0 wrote %s: %v", path, err)
	}
	if got, err := p.EndOffsetForEpoch(0, 0); err != nil || got.Epoch != 0 || got.Offset != 1 {
		t.Fatalf("epoch 0 ends at %+v (%v), want the log end 1", got, err)
	}
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("epoch 1 did not write the checkpoint: %v", err)
	}
}
