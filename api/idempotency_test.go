package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/idempotency"
)

// keyEnv is a single node with an Idempotency-Key store whose clock the
// test moves.
type keyEnv struct {
	*testEnv
	store *idempotency.Store
	now   atomic.Int64 // ms
}

func newKeyEnv(t *testing.T, dir string, mutate func(*idempotency.Config)) *keyEnv {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: dir, AutoCreateTopics: true}, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := &keyEnv{}
	e.now.Store(time.Now().UnixMilli())
	cfg := idempotency.Config{Logger: logger, Window: time.Minute, ExpiryInterval: time.Hour,
		Now: func() time.Time { return time.UnixMilli(e.now.Load()) }}
	if mutate != nil {
		mutate(&cfg)
	}
	e.store, err = idempotency.New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(b, Config{Logger: logger, AdvertisedKafkaAddr: "localhost:9092", Idempotency: e.store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	var once sync.Once
	stop := func() { once.Do(func() { srv.Close(); e.store.Close(); b.Close() }) }
	t.Cleanup(stop)
	e.testEnv = &testEnv{broker: b, gateway: g, url: srv.URL}
	return e
}

func (e *keyEnv) produce(t *testing.T, topic, key, body string) answer {
	t.Helper()
	return e.request(t, "POST", "/kafka/"+topic, map[string]string{"Content-Type": "application/json", "Idempotency-Key": key}, body)
}

func (e *keyEnv) logEnd(t *testing.T, topic string, partition int32) int64 {
	t.Helper()
	p, err := e.broker.Partition(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return p.LogEndOffset()
}

const threeRecords = `{"records":[{"key":"a","value":1},{"key":"b","value":2},{"key":"c","value":3}]}`

func TestIdempotencyKeyRetryReplaysAndWritesOnce(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	first := e.produce(t, "orders", "order-1", threeRecords)
	if first.status != 200 || first.header.Get(replayedHeader) != "" {
		t.Fatalf("original: %d %s %v", first.status, first.body, first.header)
	}
	for range 5 {
		again := e.produce(t, "orders", "order-1", threeRecords)
		if again.status != first.status || string(again.body) != string(first.body) ||
			again.header.Get("Content-Type") != first.header.Get("Content-Type") || again.header.Get(replayedHeader) != "true" {
			t.Fatalf("retry: %d %s %v; original %d %s", again.status, again.body, again.header, first.status, first.body)
		}
	}
	var total int64
	for p := int32(0); p < 3; p++ {
		total += e.logEnd(t, "orders", p)
	}
	if total != 3 {
		t.Fatalf("%d records written for one request retried 5 times", total)
	}
	// The quoted form of the IETF draft names the same key.
	quoted := e.produce(t, "orders", `"order-1"`, threeRecords)
	if quoted.header.Get(replayedHeader) != "true" || string(quoted.body) != string(first.body) {
		t.Fatalf("quoted key: %d %s", quoted.status, quoted.body)
	}
	// Another key is another request.
	if a := e.produce(t, "orders", "order-2", threeRecords); a.status != 200 || a.header.Get(replayedHeader) != "" {
		t.Fatalf("new key: %d %s", a.status, a.body)
	}
	// Without the header nothing changes.
	if a := e.do(t, "POST", "/kafka/orders", "application/json", threeRecords); a.status != 200 {
		t.Fatalf("no key: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKeyReusedWithAnotherRequest(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	if a := e.produce(t, "t1", "k", `{"id":1}`); a.status != 200 {
		t.Fatalf("original: %d %s", a.status, a.body)
	}
	e.produce(t, "t1", "k", `{"id":2}`).wantError(t, http.StatusUnprocessableEntity, codeKeyReused)
	e.produce(t, "t2", "k", `{"id":1}`).wantError(t, http.StatusUnprocessableEntity, codeKeyReused)
	e.request(t, "POST", "/kafka/t1", map[string]string{"Content-Type": "application/x-ndjson", "Idempotency-Key": "k"}, `{"id":1}`).
		wantError(t, http.StatusUnprocessableEntity, codeKeyReused)
	if n := e.logEnd(t, "t1", 0); n != 1 {
		t.Fatalf("t1 holds %d records", n)
	}
	if _, err := e.broker.Partition("t2", 0); err == nil {
		t.Fatal("a refused request created t2")
	}
}

func TestIdempotencyKeyConcurrentDuplicatesWriteOnce(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	const clients = 16
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { answers[i] = e.produce(t, "burst", "same", `{"records":[{"value":1},{"value":2}]}`) })
	}
	wg.Wait()
	originals := 0
	for i, a := range answers {
		if a.status != 200 || string(a.body) != string(answers[0].body) {
			t.Fatalf("client %d: %d %s; client 0: %d %s", i, a.status, a.body, answers[0].status, answers[0].body)
		}
		if a.header.Get(replayedHeader) == "" {
			originals++
		}
	}
	if originals != 1 {
		t.Fatalf("%d answers were not replays, want 1", originals)
	}
	if n := e.logEnd(t, "burst", 0); n != 2 {
		t.Fatalf("%d records written by %d duplicates of a 2-record request", n, clients)
	}
}

func TestIdempotencyKeyBadKeys(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	for name, key := range map[string]string{
		"empty":     `""`,
		"too long":  strings.Repeat("k", idempotency.MaxKeyBytes+1),
		"space":     "a b",
		"non-ASCII": "clé",
		"quote":     `a"b`,
	} {
		t.Run(name, func(t *testing.T) {
			e.produce(t, "bad", key, `{"id":1}`).wantError(t, http.StatusBadRequest, codeInvalidIdempotencyKey)
		})
	}
	req, _ := http.NewRequest("POST", e.url+"/kafka/bad", strings.NewReader(`{"id":1}`))
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	answer{status: res.StatusCode, body: body}.wantError(t, http.StatusBadRequest, codeInvalidIdempotencyKey)
	if _, err := e.broker.Partition("bad", 0); err == nil {
		t.Fatal("a refused key created the topic")
	}
	if a := e.produce(t, "bad", strings.Repeat("k", idempotency.MaxKeyBytes), `{"id":1}`); a.status != 200 {
		t.Fatalf("longest key: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKeyReleasedWhenNothingWasWritten(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "strict", Partitions: 1,
		Configs: map[string]string{server.CfgMinInsyncReplicas: "2"}}); err != nil {
		t.Fatal(err)
	}
	e.produce(t, "strict", "k", `{"id":1}`).wantError(t, http.StatusServiceUnavailable, codeNotEnoughReplicas)
	// Nothing was written: the retry runs again (and fails again), not
	// replayed, and then succeeds once the topic takes it.
	again := e.produce(t, "strict", "k", `{"id":1}`)
	again.wantError(t, http.StatusServiceUnavailable, codeNotEnoughReplicas)
	if again.header.Get(replayedHeader) != "" {
		t.Fatal("a failure that wrote nothing was replayed")
	}
	if a := e.request(t, "PUT", "/topics/strict/configs", map[string]string{"Content-Type": "application/json"},
		`{"configs":{"min.insync.replicas":"1"}}`); a.status != 200 && a.status != 204 {
		t.Fatalf("alter: %d %s", a.status, a.body)
	}
	ok := e.produce(t, "strict", "k", `{"id":1}`)
	if ok.status != 200 || ok.header.Get(replayedHeader) != "" {
		t.Fatalf("after the fix: %d %s", ok.status, ok.body)
	}
	if again := e.produce(t, "strict", "k", `{"id":1}`); again.header.Get(replayedHeader) != "true" {
		t.Fatalf("retry of the success: %d %s", again.status, again.body)
	}
	if n := e.logEnd(t, "strict", 0); n != 1 {
		t.Fatalf("%d records", n)
	}
}

func TestIdempotencyKeyWindowExpiry(t *testing.T) {
	dir := t.TempDir()
	e := newKeyEnv(t, dir, func(c *idempotency.Config) { c.Window = time.Minute })
	first := e.produce(t, "w", "k", `{"id":1}`)
	e.now.Add((59 * time.Second).Milliseconds())
	if n := e.store.Expire(context.Background()); n != 0 {
		t.Fatalf("%d keys expired inside the window", n)
	}
	if a := e.produce(t, "w", "k", `{"id":1}`); a.header.Get(replayedHeader) != "true" || string(a.body) != string(first.body) {
		t.Fatalf("inside the window: %d %s", a.status, a.body)
	}
	e.now.Add((time.Second).Milliseconds())
	if n := e.store.Expire(context.Background()); n != 1 {
		t.Fatalf("%d keys expired at the window's end, want 1", n)
	}
	if st := e.store.Stats(); st.Keys != 0 || st.Bytes != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
	// The tombstone is in the log: a reload does not bring the key back.
	keysEnd := e.logEnd(t, idempotency.Topic, 0)
	if keysEnd != 3 { // pending, done, tombstone
		t.Fatalf("keys topic log end %d, want 3", keysEnd)
	}
	a := e.produce(t, "w", "k", `{"id":2}`)
	if a.status != 200 || a.header.Get(replayedHeader) != "" || !strings.Contains(string(a.body), `"offset":1`) {
		t.Fatalf("after the window a new request: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKeyMemoryBudget(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), func(c *idempotency.Config) { c.MaxBytes = 1024 })
	accepted := 0
	var full answer
	for i := range 100 {
		a := e.produce(t, "m", fmt.Sprintf("key-%d", i), `{"id":1}`)
		if a.status != 200 {
			full = a
			break
		}
		accepted++
	}
	full.wantError(t, http.StatusServiceUnavailable, codeKeyBudgetFull)
	if full.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on a full budget")
	}
	if accepted < 2 || accepted > 6 {
		t.Fatalf("%d keys in 1024 bytes", accepted)
	}
	if st := e.store.Stats(); st.Keys != accepted || st.Bytes > 1024+200 {
		t.Fatalf("stats %+v for %d keys", st, accepted)
	}
	// Keys already taken still replay; nothing is written for the refused one.
	if a := e.produce(t, "m", "key-0", `{"id":1}`); a.header.Get(replayedHeader) != "true" {
		t.Fatalf("known key while full: %d %s", a.status, a.body)
	}
	if n := e.logEnd(t, "m", 0); n != int64(accepted) {
		t.Fatalf("%d records for %d accepted keys", n, accepted)
	}
	// Room comes back when keys expire.
	e.now.Add(time.Minute.Milliseconds())
	e.store.Expire(context.Background())
	if a := e.produce(t, "m", "key-late", `{"id":1}`); a.status != 200 {
		t.Fatalf("after expiry: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKeysSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e := newKeyEnv(t, dir, nil)
	first := e.produce(t, "r", "k", `{"id":1}`)
	e.store.Close()
	e.broker.Close()
	e2 := newKeyEnv(t, dir, nil)
	again := e2.produce(t, "r", "k", `{"id":1}`)
	if again.status != 200 || string(again.body) != string(first.body) || again.header.Get(replayedHeader) != "true" {
		t.Fatalf("after reopen: %d %s, original %s", again.status, again.body, first.body)
	}
	if n := e2.logEnd(t, "r", 0); n != 1 {
		t.Fatalf("%d records", n)
	}
}

func TestIdempotencyKeyWithoutStore(t *testing.T) {
	e := newTestEnv(t)
	e.request(t, "POST", "/kafka/x", map[string]string{"Idempotency-Key": "k"}, `{"id":1}`).
		wantError(t, http.StatusServiceUnavailable, codeUnavailable)
}

func TestMayHaveWritten(t *testing.T) {
	for _, c := range []struct {
		status, code int
		body         string
		want         bool
	}{
		{200, 0, `{"offsets":[]}`, true},
		{503, codeAcksTimedOut, `{"error_code":50303,"message":"x"}`, true},
		{503, codeNoLeader, `{"error_code":50306,"message":"x","offsets":[{"partition":0,"offset":4},{"partition":1,"offset":-1}]}`, true},
		{503, codeNoLeader, `{"error_code":50306,"message":"x"}`, false},
		{503, codeNotEnoughReplicas, `{"error_code":50302,"message":"x"}`, false},
		{400, codeMalformed, `{"error_code":40001,"message":"x"}`, false},
		{500, codeInternal, `not json`, false},
	} {
		if got := mayHaveWritten(idempotency.Answer{Status: c.status, Body: []byte(c.body)}, c.code); got != c.want {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, got, c.want)
		}
	}
}

// The keys topic is the broker's: clients cannot produce to it.
func TestIdempotencyKeysTopicIsInternal(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	e.produce(t, "t", "k", `{"id":1}`) // creates the keys topic
	for _, key := range []string{"", "k2"} {
		e.request(t, "POST", "/kafka/"+idempotency.Topic, map[string]string{"Content-Type": "application/json", "Idempotency-Key": key}, `{"id":1}`).
			wantError(t, http.StatusForbidden, codeInternalTopic)
	}
	e.request(t, "DELETE", "/topics/"+idempotency.Topic, nil, "").wantError(t, http.StatusForbidden, codeInternalTopic)
}

// REST Proxy's produce route takes the key too: a client sending it is
// never silently unprotected.
func TestIdempotencyKeyOnRestProxyProduce(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	const body = `{"records":[{"value":{"id":1}},{"value":{"id":2}}]}`
	headers := map[string]string{"Content-Type": typeRestJSON, "Idempotency-Key": "rp-1"}
	first := e.request(t, "POST", "/topics/rp", headers, body)
	again := e.request(t, "POST", "/topics/rp", headers, body)
	if first.status != 200 || again.status != 200 || string(again.body) != string(first.body) ||
		again.header.Get(replayedHeader) != "true" || again.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Fatalf("original %d %s, retry %d %s %v", first.status, first.body, again.status, again.body, again.header)
	}
	if n := e.logEnd(t, "rp", 0); n != 2 {
		t.Fatalf("%d records", n)
	}
	// The same key and body on the other produce route is another request.
	e.request(t, "POST", "/kafka/rp", headers, body).wantError(t, http.StatusUnprocessableEntity, codeKeyReused)
}

// When the key's start cannot be recorded (here: the keys topic asks for
// more in-sync replicas than a single node has), the request is refused
// before anything is written.
func TestIdempotencyKeyStoreUnavailableWritesNothing(t *testing.T) {
	e := newKeyEnv(t, t.TempDir(), nil)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: idempotency.Topic, Partitions: 1,
		Configs: map[string]string{server.CfgMinInsyncReplicas: "2", server.CfgCleanupPolicy: "compact"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "data", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	a := e.produce(t, "data", "k", `{"id":1}`)
	a.wantError(t, http.StatusServiceUnavailable, codeKeyOwnerUnavailable)
	if a.header.Get("Retry-After") == "" || !strings.Contains(string(a.body), "nothing was written") {
		t.Fatalf("answer %v %s", a.header, a.body)
	}
	if n := e.logEnd(t, "data", 0); n != 0 {
		t.Fatalf("%d records written while the key could not be recorded", n)
	}
	if st := e.store.Stats(); st.Keys != 0 {
		t.Fatalf("the refused key is held: %+v", st)
	}
}

func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", `"k"`, `""`, `"`, "a b", strings.Repeat("x", 300), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, err := parseIdempotencyKey([]string{header})
		if err != nil {
			return
		}
		if idempotency.ValidKey(key) != nil || len(key) > idempotency.MaxKeyBytes {
			t.Fatalf("%q accepted as %q", header, key)
		}
	})
}
