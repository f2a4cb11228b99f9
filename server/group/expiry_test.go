package group

import (
	"context"
	"testing"
	"time"
)

// TestOffsetsExpireFromEmptyGroups: a standalone group's commits expire
// offsets.retention.minutes after they were made, are tombstoned (so a
// restarted coordinator does not bring them back), and not before.
func TestOffsetsExpireFromEmptyGroups(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.OffsetsRetention = time.Hour })
	e.createTopic("t", 2)
	if codes := e.commit(commitReq(2, "old", "", -1, "t", map[int32]int64{0: 10, 1: 20})); codes[0]+codes[1] != 0 {
		t.Fatalf("commit: %v", codes)
	}
	e.clock.Advance(40 * time.Minute)
	if codes := e.commit(commitReq(2, "recent", "", -1, "t", map[int32]int64{0: 5})); codes[0] != 0 {
		t.Fatalf("commit: %v", codes)
	}
	ctx := context.Background()
	if n := e.c.ExpireOffsets(ctx, e.clock.Now()); n != 0 {
		t.Fatalf("%d offsets expired before the retention", n)
	}
	e.clock.Advance(30 * time.Minute)
	if n := e.c.ExpireOffsets(ctx, e.clock.Now()); n != 2 {
		t.Fatalf("%d offsets expired, want the old group's 2", n)
	}
	if got := e.fetchV1("old", "t", 0, 1); got[0] != -1 || got[1] != -1 {
		t.Fatalf("old group's offsets after expiry: %v", got)
	}
	if got := e.fetchV1("recent", "t", 0); got[0] != 5 {
		t.Fatalf("recent group's offset: %v", got)
	}
	e.close()
	e.open()
	if got := e.fetchV1("old", "t", 0, 1); got[0] != -1 || got[1] != -1 {
		t.Fatalf("expired offsets back after a restart: %v", got)
	}
	if got := e.fetchV1("recent", "t", 0); got[0] != 5 {
		t.Fatalf("recent group's offset after a restart: %v", got)
	}
}
