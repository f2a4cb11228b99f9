package isr

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
)

// manualClock fires timers only when the test says so.
type manualClock struct{ timers []func() }

func (c *manualClock) AfterFunc(_ time.Duration, f func()) func() bool {
	c.timers = append(c.timers, f)
	return func() bool { return true }
}

func (c *manualClock) fireAll() {
	for _, f := range c.timers {
		f()
	}
}

var key = delayed.Key{Topic: "orders", Partition: 0}

// partition wires a script's leader to a purgatory as the partition will:
// it notifies after every high-watermark advance.
type partition struct {
	*script
	pg *delayed.Purgatory
}

func (p *partition) notify(u Update) {
	if u.HighWatermarkAdvanced {
		p.pg.Notify(key, delayed.State{HighWatermark: p.l.HighWatermark()})
	}
}

func (p *partition) lookup(delayed.Key) (delayed.State, bool) {
	return delayed.State{HighWatermark: p.l.HighWatermark()}, true
}

// produce appends n records with acks=all and registers the wait, as the
// produce path does: the refusal check first, then the append, then the
// wait for last offset + 1.
func (p *partition) produce(n int64) (*delayed.Op, int64, error) {
	if err := p.l.CheckEnoughReplicas(); err != nil {
		return nil, 0, err
	}
	p.notify(p.append(n))
	required := p.l.LogEndOffset()
	op := p.pg.Register(delayed.NewProduce([]delayed.Wait{{Key: key, Offset: required}}), time.Minute, p.lookup)
	return op, required, nil
}

func newPartition(t *testing.T, replicas, isr []int32, minISR int) (*partition, *manualClock) {
	clock := &manualClock{}
	return &partition{script: newScript(t, replicas, isr, 0, 0, minISR), pg: delayed.New(clock)}, clock
}

// acks=all completes exactly when the high watermark passes the produce's
// last offset: after the slowest ISR member fetched beyond it.
func TestAcksAllCompletesWhenHighWatermarkPasses(t *testing.T) {
	p, _ := newPartition(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 2)
	op, required, err := p.produce(5)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		replica int32
		offset  int64
	}{{2, 5}, {3, 2}, {3, 4}}
	for _, st := range steps {
		p.notify(p.fetch(st.replica, st.offset))
		if op.Outcome() != delayed.Pending {
			t.Fatalf("completed after %d fetched to %d, high watermark %d", st.replica, st.offset, p.l.HighWatermark())
		}
		if done, _ := p.l.AcksAllDone(required); done {
			t.Fatal("AcksAllDone before the high watermark passed")
		}
	}
	p.notify(p.fetch(3, 5))
	if op.Outcome() != delayed.Ready {
		t.Fatalf("outcome %v at high watermark %d", op.Outcome(), p.l.HighWatermark())
	}
	if done, err := p.l.AcksAllDone(required); !done || err != nil {
		t.Fatalf("AcksAllDone %v %v", done, err)
	}
}

// Fewer in-sync replicas than min.insync.replicas: refused before the
// append, nothing written.
func TestAcksAllRefusedBelowMinISR(t *testing.T) {
	p, _ := newPartition(t, []int32{1, 2, 3}, []int32{1, 2}, 3)
	if _, _, err := p.produce(1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("produce: %v", err)
	}
	if p.l.LogEndOffset() != 0 {
		t.Fatal("a refused produce was written")
	}
	if !p.l.Metrics().UnderMinISR {
		t.Fatal("not reported under min ISR")
	}
}

// The ISR shrinks below min.insync.replicas while a produce waits: the
// shrink lets the high watermark pass, and the answer is
// NOT_ENOUGH_REPLICAS_AFTER_APPEND. The next produce is refused up front.
func TestAcksAllAfterAppendWhenISRShrinks(t *testing.T) {
	p, _ := newPartition(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 2)
	p.fetch(2, 0)
	p.fetch(3, 0)
	op, required, err := p.produce(3)
	if err != nil {
		t.Fatal(err)
	}
	p.after(lag + time.Second)
	u := p.l.Tick(p.now)
	if u.Proposal == nil {
		t.Fatal("no shrink")
	}
	p.notify(u)
	if op.Outcome() != delayed.Pending {
		t.Fatal("completed while the shrink was in flight")
	}
	p.write(u.Proposal)
	p.notify(Update{HighWatermarkAdvanced: true})
	if op.Outcome() != delayed.Ready {
		t.Fatalf("outcome %v after the shrink", op.Outcome())
	}
	if done, err := p.l.AcksAllDone(required); !done || !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("AcksAllDone %v %v", done, err)
	}
	if _, _, err := p.produce(1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("next produce: %v", err)
	}
}

// The produce timeout passes first: the op expires and AcksAllDone is
// still false (REQUEST_TIMED_OUT); a partition no longer led here answers
// NOT_LEADER_OR_FOLLOWER.
func TestAcksAllTimeoutAndLostLeadership(t *testing.T) {
	p, clock := newPartition(t, []int32{1, 2}, []int32{1, 2}, 1)
	op, required, err := p.produce(1)
	if err != nil {
		t.Fatal(err)
	}
	clock.fireAll()
	if op.Outcome() != delayed.Expired {
		t.Fatalf("outcome %v", op.Outcome())
	}
	if done, err := p.l.AcksAllDone(required); done || err != nil {
		t.Fatalf("AcksAllDone %v %v", done, err)
	}
	var gone *Leader
	if done, err := gone.AcksAllDone(required); !done || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("nil leader: %v %v", done, err)
	}
}

// A leader cut off from ZooKeeper cannot commit its shrink, so the stalled
// followers keep holding the high watermark and acks=all writes are never
// acknowledged by it: the new leader, elected from the ISR ZooKeeper still
// holds, may not have them.
func TestLeaderCutOffFromZooKeeperStopsAcknowledging(t *testing.T) {
	p, clock := newPartition(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 1)
	p.fetch(2, 0)
	p.fetch(3, 0)
	op, required, err := p.produce(4)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p.after(lag)
		p.notify(p.l.Tick(p.now)) // the proposal's write never gets through
	}
	if op.Outcome() != delayed.Pending || p.l.HighWatermark() != 0 {
		t.Fatalf("acknowledged without ZooKeeper: outcome %v, high watermark %d", op.Outcome(), p.l.HighWatermark())
	}
	clock.fireAll()
	if done, _ := p.l.AcksAllDone(required); done {
		t.Fatal("AcksAllDone without ZooKeeper")
	}
}
