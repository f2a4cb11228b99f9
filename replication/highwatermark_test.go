package replication

import (
	"testing"

	"github.com/ferry-mq/ferry/storage"
)

// A cluster's replica (AwaitRole) starts at the high watermark the broker
// checkpointed, kept within the log as it is now; a single node's
// partition ignores it and starts at its log end, as before checkpoints
// existed.
func TestOpenSeedsTheHighWatermarkWithinTheLog(t *testing.T) {
	p, cfg := newTestPartition(t)
	for range 5 {
		if _, err := p.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AdvanceStartOffset(3); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		awaitRole    bool
		checkpointed int64
		want         int64
	}{
		{"within the log", true, 6, 6},
		{"at the log end", true, 10, 10},
		{"beyond the log end (a crash cut the tail)", true, 25, 10},
		{"below the log start (retention ran)", true, 1, 3},
		{"none recorded", true, 0, 3},
		{"single node", false, 6, 10},
		{"single node, none recorded", false, 0, 10},
	} {
		c := cfg
		c.AwaitRole, c.HighWatermark = tc.awaitRole, tc.checkpointed
		q, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		got := q.HighWatermark()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: checkpointed %d, high watermark %d, want %d", tc.name, tc.checkpointed, got, tc.want)
		}
	}
}

// A replica that becomes leader before its followers fetch keeps the
// recovered high watermark: the followers' log ends are unknown, so
// nothing above it is known to be committed, and nothing at or below it
// is hidden again.
func TestNewLeaderStartsFromTheRecoveredHighWatermark(t *testing.T) {
	p, cfg := newTestPartition(t)
	for range 4 {
		if _, err := p.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.AwaitRole, cfg.HighWatermark = true, 5
	p = openPartition(t, cfg)
	if err := p.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 5 {
		t.Fatalf("leader's high watermark %d before its follower fetched, want the recovered 5", p.HighWatermark())
	}
	if err := p.FollowerFetched(2, 1, 8); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 8 {
		t.Fatalf("leader's high watermark %d after its follower fetched to 8", p.HighWatermark())
	}
}
