package fetchsession

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

var (
	alice = auth.Principal{Type: "User", Name: "alice"}
	bob   = auth.Principal{Type: "User", Name: "bob"}
	t0    = time.Unix(1_000_000, 0)
)

// topics builds a request's topics from "topic:partition@offset" items.
func topics(items ...string) []kmsg.FetchRequestTopic {
	var out []kmsg.FetchRequestTopic
	for _, it := range items {
		var topic string
		var p int32
		var off int64
		if _, err := fmt.Sscanf(it, "%1s:%d@%d", &topic, &p, &off); err != nil {
			panic(it + ": " + err.Error())
		}
		if n := len(out); n == 0 || out[n-1].Topic != topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = topic
			out = append(out, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = p, off
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
	}
	return out
}

// listed names a fetch's partitions as "topic:partition@offset".
func listed(ts []kmsg.FetchRequestTopic) []string {
	var out []string
	for _, t := range ts {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s:%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	return out
}

// state is what an answer tells of a partition.
type state struct{ hw, lso, logStart int64 }

// respond answers every partition of ts from st, with errs' errors.
func respond(ts []kmsg.FetchRequestTopic, st map[string]state, errs map[string]int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	for _, t := range ts {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			name := fmt.Sprintf("%s:%d", t.Topic, p.Partition)
			s := st[name]
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.Partition, s.hw, s.lso, s.logStart
			rp.ErrorCode = errs[name]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// sent names the partitions an answer sends.
func sent(ts []kmsg.FetchRequestTopic, send []bool) []string {
	var out []string
	k := 0
	for _, t := range ts {
		for _, p := range t.Partitions {
			if send == nil || send[k] {
				out = append(out, fmt.Sprintf("%s:%d", t.Topic, p.Partition))
			}
			k++
		}
	}
	return out
}

func req(id, epoch int32, ts []kmsg.FetchRequestTopic, forgotten ...kmsg.FetchRequestForgottenTopic) Request {
	return Request{Version: 12, Owner: alice, SessionID: id, SessionEpoch: epoch, Topics: ts, Forgotten: forgotten}
}

func forget(topic string, ps ...int32) kmsg.FetchRequestForgottenTopic {
	return kmsg.FetchRequestForgottenTopic{Topic: topic, Partitions: ps}
}

// A session's life, scripted: a full fetch opens it with every partition;
// incremental fetches read every session partition from the offsets last
// sent, add what they list, drop what they forget, and answer only the
// partitions whose high watermark, last stable offset, log start offset or
// error changed; a replayed epoch, an unknown id and another principal are
// refused; a fetch that forgets the last partition closes the session.
func TestSessionScript(t *testing.T) {
	c := New(Config{})
	st := map[string]state{"a:0": {5, 5, 0}, "a:1": {7, 7, 0}, "b:0": {1, 1, 0}}

	full := c.Begin(req(0, InitialEpoch, topics("a:0@0", "a:1@0", "b:0@0")), t0)
	id, send := full.Answer(full.Topics, respond(full.Topics, st, nil), nil, t0)
	if id == 0 || send != nil || c.Len() != 1 || c.Partitions() != 3 {
		t.Fatalf("full fetch: id %d send %v, %d sessions %d partitions", id, send, c.Len(), c.Partitions())
	}

	// Nothing changed: every partition is read, none answered.
	f := c.Begin(req(id, 1, nil), t0)
	if got := listed(f.Topics); !slices.Equal(got, []string{"a:0@0", "a:1@0", "b:0@0"}) {
		t.Fatalf("epoch 1 fetches %v", got)
	}
	if got, send := f.Answer(f.Topics, respond(f.Topics, st, nil), nil, t0); got != id || len(sent(f.Topics, send)) != 0 {
		t.Fatalf("epoch 1: id %d sends %v", got, sent(f.Topics, send))
	}

	// a:0 moves its offset, b:0's high watermark and a:1's log start move.
	st["b:0"] = state{2, 2, 0}
	st["a:1"] = state{7, 7, 3}
	f = c.Begin(req(id, 2, topics("a:0@5")), t0)
	if got := listed(f.Topics); !slices.Equal(got, []string{"a:0@5", "a:1@0", "b:0@0"}) {
		t.Fatalf("epoch 2 fetches %v", got)
	}
	_, send = f.Answer(f.Topics, respond(f.Topics, st, nil), nil, t0)
	if got := sent(f.Topics, send); !slices.Equal(got, []string{"a:1", "b:0"}) {
		t.Fatalf("epoch 2 sends %v", got)
	}
	// Sent partitions go to the end of the order.
	f = c.Begin(req(id, 3, nil), t0)
	if got := listed(f.Topics); !slices.Equal(got, []string{"a:0@5", "a:1@0", "b:0@0"}) {
		t.Fatalf("epoch 3 fetches %v", got)
	}
	// Records and an error are always sent; an error is sent again once it clears.
	_, send = f.Answer(f.Topics, respond(f.Topics, st, map[string]int16{"b:0": kerr.NotLeaderForPartition.Code}),
		func(k int) bool { return k == 0 }, t0)
	if got := sent(f.Topics, send); !slices.Equal(got, []string{"a:0", "b:0"}) {
		t.Fatalf("epoch 3 sends %v", got)
	}
	f = c.Begin(req(id, 4, nil), t0)
	_, send = f.Answer(f.Topics, respond(f.Topics, st, nil), nil, t0)
	if got := sent(f.Topics, send); !slices.Equal(got, []string{"b:0"}) {
		t.Fatalf("epoch 4 sends %v after b:0's error cleared", got)
	}

	for _, bad := range []struct {
		name string
		r    Request
		code int16
	}{
		{"replayed epoch", req(id, 4, nil), kerr.InvalidFetchSessionEpoch.Code},
		{"epoch ahead", req(id, 6, nil), kerr.InvalidFetchSessionEpoch.Code},
		{"unknown id", req(id+1, 5, nil), kerr.FetchSessionIDNotFound.Code},
		{"another principal", Request{Version: 12, Owner: bob, SessionID: id, SessionEpoch: 5}, kerr.FetchSessionIDNotFound.Code},
		{"topic ids in a session of names", Request{Version: 13, Owner: alice, SessionID: id, SessionEpoch: 5}, kerr.FetchSessionTopicIDError.Code},
	} {
		if f := c.Begin(bad.r, t0); f.ErrorCode != bad.code || f.Topics != nil {
			t.Errorf("%s: error %d topics %v, want %d", bad.name, f.ErrorCode, f.Topics, bad.code)
		}
	}
	// Another principal's full fetch naming the session does not close it.
	c.Begin(Request{Version: 12, Owner: bob, SessionID: id, SessionEpoch: FinalEpoch}, t0)

	f = c.Begin(req(id, 5, nil, forget("a", 0, 1, 9)), t0)
	if got := listed(f.Topics); !slices.Equal(got, []string{"b:0@0"}) || c.Partitions() != 1 {
		t.Fatalf("after forgetting a: fetches %v, %d partitions cached", got, c.Partitions())
	}
	f.Answer(f.Topics, respond(f.Topics, st, nil), nil, t0)
	f = c.Begin(req(id, 6, nil, forget("b", 0)), t0)
	if got, _ := f.Answer(f.Topics, respond(f.Topics, st, nil), nil, t0); got != 0 || f.Topics != nil || c.Len() != 0 || c.Partitions() != 0 {
		t.Fatalf("forgetting the last partition: id %d topics %v, %d sessions %d partitions", got, f.Topics, c.Len(), c.Partitions())
	}
}

// Epoch -1 closes the session it names and opens none; epoch 0 naming a
// session closes it and opens another; fetches before v7 have none.
func TestSessionCloseAndReopen(t *testing.T) {
	c := New(Config{})
	open := func(r Request) int32 {
		f := c.Begin(r, t0)
		id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
		return id
	}
	id := open(req(0, InitialEpoch, topics("a:0@0")))
	id2 := open(req(id, InitialEpoch, topics("a:0@0")))
	if id2 == 0 || id2 == id || c.Len() != 1 {
		t.Fatalf("reopen: %d then %d, %d sessions", id, id2, c.Len())
	}
	if got := open(req(id2, FinalEpoch, topics("a:0@0"))); got != 0 || c.Len() != 0 {
		t.Fatalf("epoch -1: session %d, %d sessions left", got, c.Len())
	}
	if got := open(Request{Version: 6, Owner: alice, SessionEpoch: 0, Topics: topics("a:0@0")}); got != 0 || c.Len() != 0 {
		t.Fatalf("v6: session %d", got)
	}
	// An Answer given twice (a fetch read again) opens one session.
	f := c.Begin(req(0, InitialEpoch, topics("a:0@0")), t0)
	a, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	b, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	if a != b || c.Len() != 1 {
		t.Fatalf("answered twice: %d, %d, %d sessions", a, b, c.Len())
	}
}

// A session of topic ids is keyed by id and refuses fetches by name.
func TestSessionTopicIDs(t *testing.T) {
	c := New(Config{})
	ts := topics("x:0@0", "x:1@0")
	for i := range ts {
		ts[i].TopicID = [16]byte{7}
		ts[i].Topic = ""
	}
	f := c.Begin(Request{Version: 13, Owner: alice, SessionEpoch: 0, Topics: ts}, t0)
	id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	if f := c.Begin(Request{Version: 12, Owner: alice, SessionID: id, SessionEpoch: 1}, t0); f.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 fetch of a v13 session: error %d", f.ErrorCode)
	}
	f = c.Begin(Request{Version: 13, Owner: alice, SessionID: id, SessionEpoch: 1,
		Forgotten: []kmsg.FetchRequestForgottenTopic{{TopicID: [16]byte{7}, Partitions: []int32{1}}}}, t0)
	if f.ErrorCode != 0 || len(f.Topics) != 1 || f.Topics[0].TopicID != [16]byte{7} || len(f.Topics[0].Partitions) != 1 {
		t.Fatalf("forget by id: error %d topics %+v", f.ErrorCode, f.Topics)
	}
}

// The cache holds Slots sessions: a new one takes a stale session's
// place, else a consumer's older than EvictionAge with fewer partitions;
// a follower's takes any consumer's; none takes a follower's younger than
// EvictionAge; without room the fetch is answered without a session.
func TestSessionEviction(t *testing.T) {
	age := time.Minute
	c := New(Config{Slots: 2, EvictionAge: age})
	open := func(follower bool, n int, now time.Time) int32 {
		var items []string
		for i := range n {
			items = append(items, fmt.Sprintf("t:%d@0", i))
		}
		r := req(0, InitialEpoch, topics(items...))
		r.Follower = follower
		f := c.Begin(r, now)
		id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, now)
		return id
	}
	exists := func(id int32, epoch int32, now time.Time) bool {
		return c.Begin(req(id, epoch, nil), now).ErrorCode == 0
	}
	c1 := open(false, 3, t0)
	c2 := open(false, 5, t0)
	if open(false, 9, t0.Add(time.Second)) != 0 {
		t.Fatal("a consumer's session took a young one's place")
	}
	f1 := open(true, 1, t0.Add(2*time.Second))
	if f1 == 0 || c.Len() != 2 || exists(c1, 1, t0.Add(2*time.Second)) {
		t.Fatalf("a follower's session did not take the smaller consumer's place (%d, %d sessions)", f1, c.Len())
	}
	now := t0.Add(age + time.Second) // c2 is old; f1, used at 2 s, not stale
	if !exists(c2, 1, now) {
		t.Fatal("c2 lost")
	}
	if open(false, 4, now) != 0 {
		t.Fatal("a smaller consumer session took a larger one's place")
	}
	if open(false, 5, now) != 0 {
		t.Fatal("a consumer session took the place of one as large")
	}
	c3 := open(false, 6, now)
	if c3 == 0 || exists(c2, 2, now) {
		t.Fatal("an old, smaller consumer session was not replaced")
	}
	// Unused for EvictionAge: stale, dropped for anyone.
	later := now.Add(age + time.Second)
	if open(false, 1, later) == 0 || c.Len() != 1 {
		t.Fatalf("stale sessions kept: %d", c.Len())
	}
	if _, _, evictions := c.Stats(); evictions != 4 {
		t.Fatalf("%d evictions counted, want 4 (c1, c2, then c3 and f1 gone stale)", evictions)
	}
}

// Partitions are bounded per session and in total.
func TestSessionPartitionBounds(t *testing.T) {
	c := New(Config{MaxSessionPartitions: 2, MaxTotalPartitions: 3})
	f := c.Begin(req(0, InitialEpoch, topics("a:0@0", "a:1@0", "a:2@0")), t0)
	if id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0); id != 0 {
		t.Fatal("a session over MaxSessionPartitions opened")
	}
	f = c.Begin(req(0, InitialEpoch, topics("a:0@0", "a:1@0")), t0)
	id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	if f := c.Begin(req(id, 1, topics("b:0@0")), t0); f.ErrorCode != kerr.FetchSessionIDNotFound.Code || c.Len() != 0 || c.Partitions() != 0 {
		t.Fatalf("growing past the cap: error %d, %d sessions %d partitions", f.ErrorCode, c.Len(), c.Partitions())
	}
	f = c.Begin(req(0, InitialEpoch, topics("a:0@0", "a:1@0")), t0)
	f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	f = c.Begin(req(0, InitialEpoch, topics("b:0@0", "b:1@0")), t0)
	if id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0); id != 0 || c.Partitions() != 2 {
		t.Fatalf("a session past MaxTotalPartitions opened (%d partitions)", c.Partitions())
	}
	if off := New(Config{Slots: -1}); off.Begin(req(0, InitialEpoch, topics("a:0@0")), t0).open {
		t.Fatal("negative Slots still opens sessions")
	}
}
