package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server/records"
)

func TestRouteBatch(t *testing.T) {
	view := &ClusterView{
		Brokers: []ClusterBroker{{ID: 1}, {ID: 2}},
		Partitions: map[TopicPartition]PartitionView{
			{"t", 0}: {Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1}},
			{"t", 1}: {Leader: -1, ISR: []int32{3}},
			{"t", 2}: {Leader: 3, ISR: []int32{3, 1}},
			{"t", 3}: {Leader: 1, ISR: []int32{1, 2}},
			{"t", 4}: {Leader: 2, ISR: []int32{2}},
		},
	}
	leader := &replication.Role{Leader: 1}
	follower := &replication.Role{Leader: 2}
	for _, tc := range []struct {
		name      string
		p         int32
		role      *replication.Role
		minISR    int
		forward   bool
		err       error
		errNaming string
	}{
		{name: "this broker leads", p: 0, role: leader, forward: false},
		{name: "this broker leads, whatever the view", p: 1, role: leader, forward: false},
		{name: "another live broker leads, no replica here", p: 0, forward: true},
		{name: "another live broker leads, a follower here", p: 0, role: follower, forward: true},
		{name: "no leader", p: 1, err: ErrLeaderNotAvailable, errNaming: "t-1 has no leader"},
		{name: "not in the view", p: 9, err: ErrLeaderNotAvailable, errNaming: "t-9"},
		{name: "leader not live", p: 2, err: ErrLeaderNotAvailable, errNaming: "broker 3"},
		{name: "the view names this broker before its replica knows", p: 3, role: follower, err: ErrLeaderNotAvailable, errNaming: "t-3"},
		{name: "too few in-sync replicas", p: 4, minISR: 2, err: ErrNotEnoughReplicas, errNaming: "t-4"},
		{name: "enough in-sync replicas", p: 0, minISR: 2, forward: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forward, err := routeBatch(1, "t", tc.p, tc.role, view, tc.minISR)
			if !errors.Is(err, tc.err) || tc.err == nil && err != nil {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.errNaming) {
				t.Fatalf("err %q does not name %q", err, tc.errNaming)
			}
			if err == nil && forward != tc.forward {
				t.Fatalf("forward %v, want %v", forward, tc.forward)
			}
		})
	}
}

// A request's records interleave over three partitions: one appended
// here, two forwarded. The answer has every offset in request order.
func TestSettleProduceMergesInRequestOrder(t *testing.T) {
	here := &replication.Replica{} // only its identity matters to settleProduce
	batches := []partitionBatch{
		{index: 0, indexes: []int{0, 3}, local: here},
		{index: 1, indexes: []int{1, 4}, forwarded: 0},
		{index: 2, indexes: []int{2}, forwarded: 2},
	}
	local := []localOutcome{{base: 10}, {}, {}}
	fwd := []ForwardOutcome{{Offset: 7}, {Offset: 9}, {Offset: 0}} // another writer came between 7 and 9
	want := []RecordOffset{{0, 10}, {1, 7}, {2, 0}, {0, 11}, {1, 9}}
	res, err := settleProduce(nil, "t", 5, batches, local, fwd)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Offsets) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", res.Offsets, want)
	}

	// A pooled array (ProduceRequest.Offsets) left by a larger request is
	// written over and answered in, not reallocated.
	pooled := make([]RecordOffset, 8)
	for i := range pooled {
		pooled[i] = RecordOffset{Partition: 99, Offset: 99}
	}
	res, err = settleProduce(pooled[:0], "t", 5, batches, local, fwd)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Offsets) != fmt.Sprint(want) || &res.Offsets[0] != &pooled[0] {
		t.Fatalf("offsets %v in the pooled array: %v, want %v in it", res.Offsets, &res.Offsets[0] == &pooled[0], want)
	}
	// One too small is not used.
	small := make([]RecordOffset, 0, 4)
	if res, _ = settleProduce(small, "t", 5, batches, local, fwd); fmt.Sprint(res.Offsets) != fmt.Sprint(want) {
		t.Fatalf("offsets %v with a short pooled array, want %v", res.Offsets, want)
	}
}

// A forward that fails after the local partition was written: the answer
// keeps the written offsets, -1 for the others, and names the failed
// partition; it maps as the failure (errors.Is).
func TestSettleProduceReportsAPartialWrite(t *testing.T) {
	here := &replication.Replica{}
	batches := []partitionBatch{
		{index: 0, indexes: []int{0, 2}, local: here},
		{index: 1, indexes: []int{1, 3}, forwarded: 0},
	}
	down := fmt.Errorf("%w: t-1: its leader, broker 2, is not live", ErrLeaderNotAvailable)
	res, err := settleProduce(nil, "t", 4, batches, []localOutcome{{base: 5}, {}}, []ForwardOutcome{{Offset: -1, Err: down}, {Offset: -1, Err: down}})
	var partial *PartialWriteError
	if !errors.As(err, &partial) || !errors.Is(err, ErrLeaderNotAvailable) {
		t.Fatalf("err %v, want a PartialWriteError that is ErrLeaderNotAvailable", err)
	}
	if partial.Written != 2 || len(partial.Failures) != 1 || partial.Failures[0].Partition != 1 || partial.Failures[0].Records != 2 {
		t.Fatalf("partial %+v", partial)
	}
	if partial.FailedPartition(1) == nil || partial.FailedPartition(0) != nil {
		t.Fatalf("FailedPartition: %v %v", partial.FailedPartition(0), partial.FailedPartition(1))
	}
	want := []RecordOffset{{0, 5}, {1, -1}, {0, 6}, {1, -1}}
	if fmt.Sprint(res.Offsets) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", res.Offsets, want)
	}
	for _, s := range []string{"2 records", "partition 1 (2 records)", "broker 2"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%q does not say %q", err, s)
		}
	}
}

// A request of which nothing was written answers the failure itself, as a
// request to one partition always has.
func TestSettleProduceNothingWritten(t *testing.T) {
	here := &replication.Replica{}
	batches := []partitionBatch{{index: 0, indexes: []int{0}, local: here}, {index: 1, indexes: []int{1}}}
	timedOut := fmt.Errorf("%w: t-0", ErrRequestTimedOut)
	_, err := settleProduce(nil, "t", 2, batches, []localOutcome{{err: timedOut}, {}}, []ForwardOutcome{{Offset: -1, Err: errors.New("x")}})
	var partial *PartialWriteError
	if errors.As(err, &partial) || !errors.Is(err, ErrRequestTimedOut) {
		t.Fatalf("err %v, want the first failure alone", err)
	}
}

func TestReadFrom(t *testing.T) {
	live := func(id int32) bool { return id != 3 }
	inView := PartitionView{Leader: 2, ISR: []int32{2, 1}}
	for _, tc := range []struct {
		name   string
		role   *replication.Role
		hw     int64
		offset int64
		pv     PartitionView
		inView bool
		want   readSource
		err    bool
	}{
		{name: "the leader reads here", role: &replication.Role{Leader: 1}, hw: 5, offset: 9, want: readSource{local: true}},
		{name: "an in-sync follower at its high watermark", role: &replication.Role{Leader: 2}, hw: 5, offset: 5, pv: inView, inView: true, want: readSource{local: true}},
		{name: "an in-sync follower below its high watermark", role: &replication.Role{Leader: 2}, hw: 5, offset: 0, pv: inView, inView: true, want: readSource{local: true}},
		{name: "beyond the follower's high watermark: the leader", role: &replication.Role{Leader: 2}, hw: 5, offset: 6, pv: inView, inView: true, want: readSource{leader: 2}},
		{name: "a follower out of the ISR: the leader", role: &replication.Role{Leader: 2}, hw: 5, offset: 0,
			pv: PartitionView{Leader: 2, ISR: []int32{2}}, inView: true, want: readSource{leader: 2}},
		{name: "no replica here", hw: -1, offset: 0, pv: inView, inView: true, want: readSource{leader: 2}},
		{name: "no replica, no leader", hw: -1, offset: 0, pv: PartitionView{Leader: -1}, inView: true, err: true},
		{name: "no replica, leader not live", hw: -1, offset: 0, pv: PartitionView{Leader: 3}, inView: true, err: true},
		{name: "no leader: a stale replica serves what it has", role: &replication.Role{Leader: -1}, hw: 5, offset: 3,
			pv: PartitionView{Leader: -1, ISR: []int32{3}}, inView: true, want: readSource{local: true}},
		{name: "no leader, beyond the replica's high watermark", role: &replication.Role{Leader: -1}, hw: 5, offset: 6,
			pv: PartitionView{Leader: -1}, inView: true, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrom(1, tc.role, tc.hw, tc.offset, tc.pv, tc.inView, live)
			if tc.err != (err != nil) || err != nil && !errors.Is(err, ErrLeaderNotAvailable) {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if err == nil && got != tc.want {
				t.Fatalf("source %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fakeForwarder answers forwarded records from a script.
type fakeForwarder struct {
	mu    sync.Mutex
	next  map[int32]int64
	fail  error
	calls [][]ProduceRecord
}

func (f *fakeForwarder) Produce(_ context.Context, _ string, recs []ProduceRecord, _ time.Duration, out []ForwardOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, recs)
	for i, r := range recs {
		if f.fail != nil {
			out[i] = ForwardOutcome{Offset: -1, Err: f.fail}
			continue
		}
		out[i] = ForwardOutcome{Offset: f.next[r.Partition]}
		f.next[r.Partition]++
	}
}

func (f *fakeForwarder) Fetch(context.Context, int32, FetchRequest, []byte) (FetchResult, error) {
	return FetchResult{}, errors.New("not scripted")
}

func (f *fakeForwarder) ListOffset(context.Context, int32, string, int32, int64) (int64, int64, error) {
	return 0, 0, errors.New("not scripted")
}

func (f *fakeForwarder) LiveBrokers([]ClusterBroker) {}

// A broker leading partition 0 of two, partition 1 led by broker 2: the
// records for partition 1 are forwarded, once and in request order, the
// others appended here; a forward that fails leaves partition 0 written
// and reported.
func TestProduceForwardsWhatAnotherBrokerLeads(t *testing.T) {
	fwd := &fakeForwarder{next: map[int32]int64{1: 100}}
	b := newTestBroker(t, func(c *Config) { c.Forwarder = fwd })
	if err := b.CreateTopic(TopicSpec{Name: "split", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetPartitionRole("split", 1, replication.Role{Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 0}, Replicas: []int32{2, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyUpdateMetadata(2, 1, []ClusterBroker{{ID: 0}, {ID: 2}}, map[TopicPartition]PartitionView{
		{"split", 0}: {Leader: 0, LeaderEpoch: 0, ISR: []int32{0}, Replicas: []int32{0}},
		{"split", 1}: {Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 0}, Replicas: []int32{2, 0}},
	}); err != nil {
		t.Fatal(err)
	}
	req := func() *ProduceRequest {
		var recs []ProduceRecord
		for i := range 4 {
			recs = append(recs, ProduceRecord{Partition: int32(i % 2), Record: records.Record{Value: []byte(fmt.Sprint(i))}})
		}
		return &ProduceRequest{Topic: "split", Records: recs}
	}
	res, err := b.Produce(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	if want := "[{0 0} {1 100} {0 1} {1 101}]"; fmt.Sprint(res.Offsets) != want {
		t.Fatalf("offsets %v, want %s", res.Offsets, want)
	}
	if len(fwd.calls) != 1 || len(fwd.calls[0]) != 2 || string(fwd.calls[0][0].Record.Value) != "1" || string(fwd.calls[0][1].Record.Value) != "3" {
		t.Fatalf("forwarded %+v, want records 1 and 3 in one call", fwd.calls)
	}

	fwd.fail = fmt.Errorf("%w: split-1: broker 2 went away", ErrLeaderNotAvailable)
	res, err = b.Produce(context.Background(), req())
	var partial *PartialWriteError
	if !errors.As(err, &partial) || partial.Written != 2 {
		t.Fatalf("err %v, want 2 records reported written", err)
	}
	if want := "[{0 2} {1 -1} {0 3} {1 -1}]"; fmt.Sprint(res.Offsets) != want {
		t.Fatalf("offsets %v, want %s", res.Offsets, want)
	}

	// The leader gone from the view: refused before anything is written.
	if err := b.ApplyUpdateMetadata(2, 1, []ClusterBroker{{ID: 0}}, map[TopicPartition]PartitionView{
		{"split", 1}: {Leader: -1, LeaderEpoch: 2, ISR: []int32{2}, Replicas: []int32{2, 0}},
	}); err != nil {
		t.Fatal(err)
	}
	calls := len(fwd.calls)
	_, err = b.Produce(context.Background(), req())
	if !errors.Is(err, ErrLeaderNotAvailable) || !strings.Contains(err.Error(), "split-1") {
		t.Fatalf("err %v, want ErrLeaderNotAvailable naming split-1", err)
	}
	p0, _ := b.Partition("split", 0)
	if p0.HighWatermark() != 4 || len(fwd.calls) != calls {
		t.Fatalf("partition 0 at %d (want 4), %d forwards (want %d): a refused request wrote", p0.HighWatermark(), len(fwd.calls), calls)
	}
}
