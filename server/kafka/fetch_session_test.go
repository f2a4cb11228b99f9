package kafka

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// sessionFetch is a Fetch of a session: its id and epoch, the partitions
// it lists (topic → partition → offset) and those it forgets.
func sessionFetch(id, epoch int32, list map[string]map[int32]int64, forget map[string][]int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SessionID, req.SessionEpoch = id, epoch
	req.MaxBytes = 50 << 20
	for _, topic := range slices.Sorted(mapKeys(list)) {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range slices.Sorted(mapKeys(list[topic])) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, list[topic][p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	for _, topic := range slices.Sorted(mapKeys(forget)) {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, forget[topic]
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// byIDs names a v13+ request's topics by id, as such a client does.
func byIDs(t *testing.T, ts *testServer, req *kmsg.FetchRequest) *kmsg.FetchRequest {
	t.Helper()
	for i := range req.Topics {
		id, err := ts.broker.TopicID(req.Topics[i].Topic)
		if err != nil {
			t.Fatal(err)
		}
		req.Topics[i].TopicID, req.Topics[i].Topic = id, ""
	}
	for i := range req.ForgottenTopics {
		id, err := ts.broker.TopicID(req.ForgottenTopics[i].Topic)
		if err != nil {
			t.Fatal(err)
		}
		req.ForgottenTopics[i].TopicID, req.ForgottenTopics[i].Topic = id, ""
	}
	return req
}

// answered names the partitions of an answer, "topic:partition" (by id
// for v13+, resolved through the broker), with the values of their records.
func answered(t *testing.T, ts *testServer, resp *kmsg.FetchResponse) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, rt := range resp.Topics {
		topic := rt.Topic
		if resp.Version >= firstTopicIDFetchVersion {
			topic, _ = ts.broker.TopicByID(rt.TopicID)
		}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("%s:%d: error %v", topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out[topic+":"+strconv.Itoa(int(rp.Partition))] = fetchValues(t, rp, 0)
		}
	}
	return out
}

// A consumer's session over the raw protocol, by name (v12) and by topic id
// (v13, v17): the full fetch opens it and answers every partition; an
// incremental fetch answers only the partitions with records or a new high
// watermark, reads the others from the session's offsets, adds what it
// lists, drops what it forgets; the session's errors are the whole answer.
func TestFetchSessionRawProtocol(t *testing.T) {
	for _, v := range []int16{12, 13, 17} {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			ts := newTestServer(t)
			createTopic(t, ts, "s", 3)
			createTopic(t, ts, "u", 1)
			c := ts.dial(t)
			produce := func(topic string, p int32, value string) {
				t.Helper()
				resp := do[*kmsg.ProduceResponse](c, produceReq(topic, p, -1, batch(t, records.BatchOptions{}, value)), 9)
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Fatalf("produce: %v", kerr.ErrorForCode(code))
				}
			}
			fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
				t.Helper()
				if v >= firstTopicIDFetchVersion {
					byIDs(t, ts, req)
				}
				return do[*kmsg.FetchResponse](c, req, v)
			}
			produce("s", 0, "a")

			resp := fetch(sessionFetch(0, 0, map[string]map[int32]int64{"s": {0: 0, 1: 0, 2: 0}}, nil))
			id := resp.SessionID
			if got := answered(t, ts, resp); id == 0 || resp.ErrorCode != 0 || len(got) != 3 || !slices.Equal(got["s:0"], []string{"a"}) {
				t.Fatalf("full fetch: session %d error %d answered %v", id, resp.ErrorCode, got)
			}
			// Nothing new: an empty answer, the same session.
			resp = fetch(sessionFetch(id, 1, map[string]map[int32]int64{"s": {0: 1}}, nil))
			if got := answered(t, ts, resp); resp.SessionID != id || len(got) != 0 {
				t.Fatalf("epoch 1: session %d answered %v", resp.SessionID, got)
			}
			// A record on partition 1, which the fetch does not list: it is read
			// from the session's offset (0) and answered alone.
			produce("s", 1, "b")
			resp = fetch(sessionFetch(id, 2, nil, nil))
			if got := answered(t, ts, resp); len(got) != 1 || !slices.Equal(got["s:1"], []string{"b"}) {
				t.Fatalf("epoch 2 answered %v, want s:1 [b]", got)
			}
			// Add u:0, forget s:2.
			produce("u", 0, "c")
			resp = fetch(sessionFetch(id, 3, map[string]map[int32]int64{"s": {1: 1}, "u": {0: 0}}, map[string][]int32{"s": {2}}))
			if got := answered(t, ts, resp); len(got) != 1 || !slices.Equal(got["u:0"], []string{"c"}) {
				t.Fatalf("epoch 3 answered %v, want u:0 [c]", got)
			}
			produce("s", 2, "forgotten")
			resp = fetch(sessionFetch(id, 4, map[string]map[int32]int64{"u": {0: 1}}, nil))
			if got := answered(t, ts, resp); len(got) != 0 {
				t.Fatalf("epoch 4 answered %v: s:2 was forgotten", got)
			}

			for _, bad := range []struct {
				name        string
				id, epoch   int32
				version     int16
				code        int16
				skipVersion bool
			}{
				{name: "replayed epoch", id: id, epoch: 4, code: kerr.InvalidFetchSessionEpoch.Code},
				{name: "unknown id", id: id + 1, epoch: 5, code: kerr.FetchSessionIDNotFound.Code},
			} {
				resp := fetch(sessionFetch(bad.id, bad.epoch, nil, nil))
				if resp.ErrorCode != bad.code || resp.SessionID != 0 || len(resp.Topics) != 0 {
					t.Errorf("%s: error %d session %d topics %d, want error %d", bad.name, resp.ErrorCode, resp.SessionID, len(resp.Topics), bad.code)
				}
			}
			// The other side of v13: a session of names asked by id, or the reverse.
			other := int16(13)
			if v >= firstTopicIDFetchVersion {
				other = 12
			}
			if resp := do[*kmsg.FetchResponse](c, sessionFetch(id, 5, nil, nil), other); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
				t.Errorf("v%d fetch of a v%d session: error %d, want FETCH_SESSION_TOPIC_ID_ERROR", other, v, resp.ErrorCode)
			}
			// Epoch -1 closes the session and answers in full, without one.
			resp = fetch(sessionFetch(id, -1, map[string]map[int32]int64{"s": {0: 1}}, nil))
			if resp.SessionID != 0 || resp.ErrorCode != 0 || len(resp.Topics) != 1 {
				t.Fatalf("epoch -1: session %d error %d topics %d", resp.SessionID, resp.ErrorCode, len(resp.Topics))
			}
			if resp := fetch(sessionFetch(id, 5, nil, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
				t.Fatalf("closed session: error %d", resp.ErrorCode)
			}
			if ts.fetchSessions.Len() != 0 {
				t.Fatalf("%d sessions left", ts.fetchSessions.Len())
			}
		})
	}
}

// An incremental fetch that lists nothing waits on every partition of its
// session, and answers as soon as one of them gets a record.
func TestIncrementalFetchWakesOnASessionPartition(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "w", 4)
	c, producer := ts.dial(t), ts.dial(t)
	resp := do[*kmsg.FetchResponse](c, sessionFetch(0, 0, map[string]map[int32]int64{"w": {0: 0, 1: 0, 2: 0, 3: 0}}, nil), 12)
	if resp.SessionID == 0 {
		t.Fatal("no session")
	}
	req := sessionFetch(resp.SessionID, 1, nil, nil)
	req.MaxWaitMillis, req.MinBytes = 10_000, 1
	req.SetVersion(12)
	start := time.Now()
	corr := c.send(req)
	harness.WaitFor(t, "the fetch to wait", 5*time.Second, func() bool { return ts.broker.WaitingFetches("w", 3) == 1 })
	if p := do[*kmsg.ProduceResponse](producer, produceReq("w", 3, -1, batch(t, records.BatchOptions{}, "late")), 9); p.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal("produce failed")
	}
	got := kmsg.NewPtrFetchResponse()
	got.SetVersion(12)
	c.recv(corr, got)
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("answered after %v", waited)
	}
	if a := answered(t, ts, got); len(a) != 1 || !slices.Equal(a["w:3"], []string{"late"}) {
		t.Fatalf("answered %v, want w:3 [late]", a)
	}
}

// A follower's incremental fetch counts its offsets: an acks=all produce
// completes once the follower lists its new offset in an incremental
// fetch, the other partitions read from the session's offsets.
func TestFollowerSessionCountsItsOffsets(t *testing.T) {
	b1 := clusterBroker(t, 1)
	for _, topic := range []string{"x", "y"} {
		createTopic(t, b1, topic, 1)
		resp := sendLeaderAndIsr(t, b1, leaderAndIsr(1, topic, 1, 1, []int32{1, 2}, b1))
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("LeaderAndIsr for %s: %+v", topic, resp)
		}
	}
	follower := b1.dial(t)
	ffetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		req.ReplicaID = 2
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				req.Topics[i].Partitions[j].CurrentLeaderEpoch = 1
			}
		}
		return do[*kmsg.FetchResponse](follower, req, 12)
	}
	resp := ffetch(sessionFetch(0, 0, map[string]map[int32]int64{"x": {0: 0}, "y": {0: 0}}, nil))
	if resp.SessionID == 0 {
		t.Fatal("no follower session")
	}
	id := resp.SessionID

	producer := b1.dial(t)
	acked := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { acked <- produceOneAcks(producer, "x", -1, "v") }()
	harness.WaitFor(t, "x's record", 5*time.Second, func() bool { p, _ := b1.broker.Partition("x", 0); return p.LogEndOffset() == 1 })
	// The follower copies it (x listed from 0), then lists x at 1 and
	// nothing of y, whose session offset counts as before.
	resp = ffetch(sessionFetch(id, 1, map[string]map[int32]int64{"x": {0: 0}}, nil))
	if a := answered(t, b1, resp); !slices.Equal(a["x:0"], []string{"v"}) {
		t.Fatalf("epoch 1 answered %v", a)
	}
	ffetch(sessionFetch(id, 2, map[string]map[int32]int64{"x": {0: 1}}, nil))
	select {
	case p := <-acked:
		if p.ErrorCode != 0 {
			t.Fatalf("acks=all produce: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the acks=all produce did not complete after the follower listed its new offset")
	}
	if hw := highWatermark(t, b1.broker, "x"); hw != 1 {
		t.Fatalf("x's high watermark %d, want 1", hw)
	}
	// y, never listed since the full fetch, still answers (its high
	// watermark went from unknown to 0) and is counted from offset 0.
	resp = ffetch(sessionFetch(id, 3, nil, nil))
	if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("epoch 3: error %d, %d topics, want nothing new", resp.ErrorCode, len(resp.Topics))
	}
}

// franz-go fetches with sessions by default: a consumer of many partitions
// reads every record through them while partitions are added, and when
// its session is evicted (by a follower's, which may take a consumer's)
// it starts over with a full fetch and goes on reading.
func TestFetchSessionFranzGo(t *testing.T) {
	m := metrics.New()
	ts := newTestServer(t, func(c *Config) { c.FetchSessionCacheSlots, c.Metrics = 1, m })
	createTopic(t, ts, "many", 12)
	logs := &kgoLog{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("many"), kgo.DefaultProduceTopic("many"), kgo.WithLogger(logs),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.MetadataMaxAge(250*time.Millisecond), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]bool{}
	produceAll := func(round string, partitions int32) map[string]bool {
		want := map[string]bool{}
		for p := range partitions {
			v := fmt.Sprintf("%s-%d", round, p)
			want[v] = true
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		return want
	}
	consume := func(want map[string]bool) {
		t.Helper()
		for !allSeen(seen, want) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d records, missing some of %v", len(seen), want)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
	}
	consume(produceAll("one", 12))
	if n, p := metricValue(t, m, "ferry_kafka_fetch_sessions"), metricValue(t, m, "ferry_kafka_fetch_session_partitions"); n != 1 || p != 12 {
		t.Fatalf("ferry_kafka_fetch_sessions %v, ferry_kafka_fetch_session_partitions %v: want the consumer's session of 12", n, p)
	}
	consume(produceAll("two", 12)) // read through incremental fetches

	if err := ts.broker.CreatePartitions("many", 16); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the consumer's session to take the new partitions", 20*time.Second, func() bool {
		return ts.fetchSessions.Partitions() == 16
	})
	consume(produceAll("three", 16))

	// A follower's session takes the only slot.
	rogue := ts.dial(t)
	req := sessionFetch(0, 0, map[string]map[int32]int64{"many": {0: 0}}, nil)
	req.ReplicaID = 7
	if resp := do[*kmsg.FetchResponse](rogue, req, 12); resp.SessionID == 0 {
		t.Fatal("the follower's session did not take the consumer's place")
	}
	consume(produceAll("four", 16))
	if n, p := ts.fetchSessions.Len(), ts.fetchSessions.Partitions(); n != 1 || p != 1 {
		t.Fatalf("%d sessions of %d partitions, want only the follower's", n, p)
	}
	if e := metricValue(t, m, "ferry_kafka_fetch_session_evictions_total"); e < 1 {
		t.Fatalf("ferry_kafka_fetch_session_evictions_total %v after the consumer's session was evicted", e)
	}
	if !logs.has("SessionIDNotFound") {
		t.Fatal("franz-go never heard FETCH_SESSION_ID_NOT_FOUND for its evicted session")
	}
}

// kgoLog keeps franz-go's log lines.
type kgoLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *kgoLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *kgoLog) Log(_ kgo.LogLevel, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(msg, kv))
}

func (l *kgoLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func allSeen(seen, want map[string]bool) bool {
	for v := range want {
		if !seen[v] {
			return false
		}
	}
	return true
}

// A consumer held back by its quota gets an empty answer that keeps its
// incremental session (the epoch moves on), as Kafka's throttled
// IncrementalFetchContext answers.
func TestThrottledFetchKeepsItsSession(t *testing.T) {
	ts := quotaServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "fq", batch(t, records.BatchOptions{}, strings.Repeat("y", 2000)))
	if r := alterQuota(c, false, clientEntity(nil), set("consumer_byte_rate", 1000)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	full := do[*kmsg.FetchResponse](c, sessionFetch(0, 0, map[string]map[int32]int64{"fq": {0: 0}}, nil), 12)
	if full.SessionID == 0 || full.ThrottleMillis < 1000 {
		t.Fatalf("full fetch of 2 kB at 1000 B/s: session %d, throttle %d ms", full.SessionID, full.ThrottleMillis)
	}
	c2 := ts.dial(t) // same client id and principal: the debt holds it back
	r := do[*kmsg.FetchResponse](c2, sessionFetch(full.SessionID, 1, map[string]map[int32]int64{"fq": {0: 1}}, nil), 12)
	if r.ErrorCode != 0 || r.SessionID != full.SessionID || r.ThrottleMillis <= 0 || len(r.Topics) != 0 {
		t.Fatalf("throttled: error %d session %d (want %d) throttle %d topics %d",
			r.ErrorCode, r.SessionID, full.SessionID, r.ThrottleMillis, len(r.Topics))
	}
	// Read once the connection's mute has passed: epoch 2 is the next.
	r = do[*kmsg.FetchResponse](c2, sessionFetch(full.SessionID, 2, nil, nil), 12)
	if r.ErrorCode != 0 || r.SessionID != full.SessionID || r.ThrottleMillis != 0 {
		t.Fatalf("after the throttle: error %d session %d throttle %d", r.ErrorCode, r.SessionID, r.ThrottleMillis)
	}
	if r := do[*kmsg.FetchResponse](c2, sessionFetch(full.SessionID, 9, nil, nil), 12); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("a wrong epoch: error %d", r.ErrorCode)
	}
}

// metricValue is an unlabelled gauge's or counter's value.
func metricValue(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			mt := f.GetMetric()[0]
			return mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// An incremental answer sent from the segment files (sendfile) is the
// copying listener's: the partitions left out are left out of both, with
// their file sections, and the ones sent carry the same bytes.
func TestSendfileIncrementalFetchMatchesCopying(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.FetchMaxBytes = 6000 })
	ids := fillZeroCopyTopic(t, ts)
	copying := secondListener(t, ts, func(c *Config) { c.FetchMaxBytes, c.DisableSendfile = 6000, true })
	var sections atomic.Int64
	setSectionHook(t, func() { sections.Add(1) })
	p0, err := ts.broker.Partition("zc", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{12, 13} {
		zc, cp := ts.dial(t), copying.dial(t)
		var sessionOf [2]int32 // each listener's session
		answers := func(req func() *kmsg.FetchRequest) [2]*kmsg.FetchResponse {
			t.Helper()
			var out [2]*kmsg.FetchResponse
			for i, c := range []*client{zc, cp} {
				r := req()
				if i == 1 {
					r.SessionID = sessionOf[1]
				} else {
					r.SessionID = sessionOf[0]
				}
				frame := rawFetch(t, c, r, v)
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(v)
				body := frame[4:]
				if resp.IsFlexible() {
					body = body[1:]
				}
				if err := resp.ReadFrom(body); err != nil {
					t.Fatalf("v%d: decode: %v", v, err)
				}
				out[i] = resp
			}
			return out
		}
		full := answers(func() *kmsg.FetchRequest { r := fetchAll(ids, 700); r.SessionEpoch = 0; return r })
		sessionOf = [2]int32{full[0].SessionID, full[1].SessionID}
		if sessionOf[0] == 0 || sessionOf[1] == 0 {
			t.Fatalf("v%d: no sessions opened", v)
		}
		before := sections.Load()
		inc := answers(func() *kmsg.FetchRequest {
			r := fetchAll(ids, 700)
			r.SessionEpoch = 1
			r.Topics = r.Topics[:1]
			r.Topics[0].Partitions = []kmsg.FetchRequestTopicPartition{r.Topics[0].Partitions[0], r.Topics[0].Partitions[1]}
			r.Topics[0].Partitions[0].FetchOffset = p0.LogEndOffset()
			r.Topics[0].Partitions[1].PartitionMaxBytes = 1 << 20
			if v < firstTopicIDFetchVersion {
				r.Topics[0].TopicID = [16]byte{}
			}
			return r
		})
		if sections.Load() == before {
			t.Fatalf("v%d: the incremental answer sent nothing from a file", v)
		}
		inc[0].SessionID, inc[1].SessionID = 0, 0
		if !reflect.DeepEqual(inc[0], inc[1]) {
			t.Fatalf("v%d: the sendfile incremental answer differs from the copying one:\n%+v\n%+v", v, inc[0], inc[1])
		}
		var got []string
		for _, rt := range inc[0].Topics {
			for _, rp := range rt.Partitions {
				got = append(got, fmt.Sprintf("%d:%d:%v", rp.Partition, rp.ErrorCode, len(rp.RecordBatches) > 0))
			}
		}
		// zc:0 at its end and the empty zc:2 did not change; zc:1 read again
		// from 0; zc:3 and zc-missing:0–3 fail, so are always sent.
		want := []string{"1:0:true", "3:1:false", "0:3:false", "1:3:false", "2:3:false", "3:3:false"}
		if v >= firstTopicIDFetchVersion {
			want = []string{"1:0:true", "3:1:false", "0:100:false", "1:100:false", "2:100:false", "3:100:false"}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("v%d: incremental answer sends %v, want %v", v, got, want)
		}
	}
}
