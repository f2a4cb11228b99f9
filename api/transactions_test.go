package api

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/records"
)

// recordingTransactor remembers the batches the gateway hands it and
// answers each record's offset as its index; the real one is
// server/txn.Transactor, exercised in test/e2e and test/cluster.
type recordingTransactor struct {
	mu      sync.Mutex
	batches [][]server.TopicRecord
}

func (r *recordingTransactor) Transact(_ context.Context, recs []server.TopicRecord) ([]server.TopicOffset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, recs)
	out := make([]server.TopicOffset, len(recs))
	for i, rec := range recs {
		out[i] = server.TopicOffset{Topic: rec.Topic, Partition: rec.Partition, Offset: int64(i)}
	}
	return out, nil
}

// POST /kafka checks every topic before the transaction starts: a topic
// the principal may not WRITE, an unknown topic or partition, an internal
// topic or a malformed body answers an error and hands nothing to the
// transactor; keys pick partitions as Kafka's partitioner does.
func TestTransactionalBatchChecksBeforeWriting(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "pw", auth.ScramSHA256)
	allowed := allowList{"User:alice WRITE TOPIC:orders": true, "User:alice CREATE CLUSTER:kafka-cluster": true,
		"User:alice WRITE TOPIC:nope": true}
	tx := &recordingTransactor{}
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.Authorizer = allowed
		c.Transactor = tx
	})
	alice := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw")),
		"Content-Type": "application/json"}
	for _, name := range []string{"orders", "audit"} {
		if err := e.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 4}); err != nil {
			t.Fatal(err)
		}
	}
	a := e.request(t, "POST", "/kafka", alice, `{"records":[{"topic":"orders","value":1},{"topic":"audit","value":2}]}`)
	a.wantError(t, http.StatusForbidden, codeDenied)
	if !strings.Contains(string(a.body), "WRITE on topic audit") {
		t.Fatalf("403 %s does not name the topic", a.body)
	}
	e.request(t, "POST", "/kafka", alice, `{"records":[{"topic":"orders","value":1},{"topic":"nope","value":2}]}`).
		wantError(t, http.StatusNotFound, codeTopicNotFound)
	e.request(t, "POST", "/kafka", alice, `{"records":[{"topic":"orders","partition":4,"value":1}]}`).
		wantError(t, http.StatusNotFound, codePartitionNotFound)
	e.request(t, "POST", "/kafka", alice, `{"records":[{"topic":"__consumer_offsets","value":1}]}`).
		wantError(t, http.StatusForbidden, codeInternalTopic)
	e.request(t, "POST", "/kafka", alice, `{"records":[]}`).wantError(t, http.StatusBadRequest, codeMalformed)
	e.request(t, "POST", "/kafka", alice, `[1,2]`).wantError(t, http.StatusBadRequest, codeMalformed)
	if len(tx.batches) != 0 {
		t.Fatalf("refused batches reached the transactor: %+v", tx.batches)
	}
	a = e.request(t, "POST", "/kafka", alice, `{"records":[{"topic":"orders","key":"k","value":{"a":1},"headers":{"h":"v"}},{"topic":"orders","partition":3,"value":"s"}]}`)
	if a.status != 200 || len(tx.batches) != 1 {
		t.Fatalf("allowed batch: %d %s", a.status, a.body)
	}
	got := tx.batches[0]
	if string(got[0].Record.Key) != "k" || string(got[0].Record.Value) != `{"a":1}` || got[0].Partition != records.PartitionForKey([]byte("k"), 4) ||
		len(got[0].Record.Headers) != 1 || got[1].Partition != 3 || string(got[1].Record.Value) != "s" {
		t.Fatalf("records handed on: %+v", got)
	}
}

// Without a transactor or a transaction admin the routes answer 503; the
// admin routes need DESCRIBE and ALTER on the cluster.
func TestTransactionRoutesUnavailable(t *testing.T) {
	e := newTestEnv(t)
	e.request(t, "POST", "/kafka", map[string]string{"Content-Type": "application/json"}, `{"records":[{"topic":"t","value":1}]}`).
		wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	e.request(t, "GET", "/admin/transactions", nil, "").wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	e.request(t, "POST", "/admin/transactions/abort", nil, `{"topic":"t","partition":0,"start_offset":0}`).
		wantError(t, http.StatusServiceUnavailable, codeUnavailable)
}

// Any body answers 200 or a JSON error, never panics, and only a 200
// reaches the transactor, with records of topics that exist.
func FuzzTransactionalBatchBody(f *testing.F) {
	for _, s := range []string{
		`{"records":[{"topic":"t","value":1}]}`,
		`{"records":[{"topic":"t","partition":-1,"key":"k","value":null,"timestamp":-5,"headers":{"a":"b"}}]}`,
		`{"records":[{"topic":"","value":1}]}`, `{"records":null}`, `{}`, `[`, `{"records":[{"topic":"t","partition":99999999999}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tx := &recordingTransactor{}
		e := newTestEnv(t, func(_ *server.Config, c *Config) { c.Transactor = tx })
		if err := e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		before := 0
		a := e.request(t, "POST", "/kafka", map[string]string{"Content-Type": "application/json"}, body)
		switch {
		case a.status == 200:
			if len(tx.batches) != before+1 {
				t.Fatalf("200 without a transaction: %s", a.body)
			}
			for _, r := range tx.batches[len(tx.batches)-1] {
				if r.Topic != "t" || r.Partition < 0 || r.Partition > 1 {
					t.Fatalf("record handed on for %s-%d", r.Topic, r.Partition)
				}
			}
		case a.status >= 400 && a.status < 600:
			if len(tx.batches) != before || !strings.Contains(string(a.body), "error_code") {
				t.Fatalf("%d %s (transactions %d → %d)", a.status, a.body, before, len(tx.batches))
			}
		default:
			t.Fatalf("status %d", a.status)
		}
	})
}
