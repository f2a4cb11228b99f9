package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

type txnAnswer struct {
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	} `json:"offsets"`
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// readAll reads every record of topic-partition below its end at
// isolation (franz-go), as "value" strings, once the partition's last
// stable offset has reached its high watermark (no transaction open).
func readAll(t *testing.T, node *harness.Node, topic string, partition int32, committed bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	harness.WaitFor(t, "no open transaction on "+topic, 30*time.Second, func() bool {
		lso, err1 := adm.ListCommittedOffsets(ctx, topic)
		hw, err2 := adm.ListEndOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			return false
		}
		l, _ := lso.Lookup(topic, partition)
		h, _ := hw.Lookup(topic, partition)
		return l.Err == nil && h.Err == nil && l.Offset == h.Offset
	})
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := franz(t, node, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	for {
		// Everything below end is fetchable at once: a poll that finds
		// nothing more within a second has read it all.
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 {
			return out
		}
	}
}

// TestHTTPTransactionalBatch: POST /kafka writes records of two topics and
// several partitions as one transaction: read_committed readers see all of
// them at the answered offsets. A batch whose record a leader refuses
// (over one topic's max.message.bytes) answers 413 and aborts: the records
// already appended to the other topic stay invisible to read_committed
// readers (read_uncommitted ones see them). An unknown topic is refused
// before anything is written. An Idempotency-Key replays the answer.
func TestHTTPTransactionalBatch(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopics(ctx, t, node, 2, nil, "tx-a")
	createTopics(ctx, t, node, 3, nil, "tx-b")
	small := "1024"
	createTopics(ctx, t, node, 1, map[string]*string{"max.message.bytes": &small}, "tx-small")

	send := func(body string, key string) (int, txnAnswer) {
		t.Helper()
		var status int
		var data []byte
		if key != "" {
			res, d, err := postWithKey(node.URL+"/kafka", key, body)
			if err != nil {
				t.Fatal(err)
			}
			status, data = res.StatusCode, d
		} else {
			res, d, err := post(node.URL+"/kafka", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			status, data = res.StatusCode, d
		}
		var a txnAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("answer %d %s: %v", status, data, err)
		}
		return status, a
	}

	ok := `{"records":[
		{"topic":"tx-a","partition":0,"value":"a0"},
		{"topic":"tx-a","partition":1,"value":"a1"},
		{"topic":"tx-b","partition":2,"value":"b2","headers":{"h":"v"}},
		{"topic":"tx-b","partition":0,"value":"b0"},
		{"topic":"tx-a","partition":0,"value":"a0-2"}]}`
	status, a := send(ok, "")
	if status != 200 || len(a.Offsets) != 5 {
		t.Fatalf("batch: %d %+v", status, a)
	}
	if o := a.Offsets[4]; o.Topic != "tx-a" || o.Partition != 0 || o.Offset != a.Offsets[0].Offset+1 {
		t.Fatalf("offsets %+v", a.Offsets)
	}
	if got := readAll(t, node, "tx-a", 0, true); !slices.Equal(got, []string{"a0", "a0-2"}) {
		t.Fatalf("tx-a-0 read_committed: %v", got)
	}
	if got := readAll(t, node, "tx-a", 1, true); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("tx-a-1 read_committed: %v", got)
	}
	if got := readAll(t, node, "tx-b", 2, true); !slices.Equal(got, []string{"b2"}) {
		t.Fatalf("tx-b-2 read_committed: %v", got)
	}
	if got := readAll(t, node, "tx-b", 0, true); !slices.Equal(got, []string{"b0"}) {
		t.Fatalf("tx-b-0 read_committed: %v", got)
	}

	// A record over tx-small's max.message.bytes: tx-a's records were
	// appended in the same transaction, which is aborted.
	big := strings.Repeat("x", 4096)
	status, a = send(fmt.Sprintf(`{"records":[
		{"topic":"tx-a","partition":0,"value":"lost-a"},
		{"topic":"tx-b","partition":1,"value":"lost-b"},
		{"topic":"tx-small","value":%q}]}`, big), "")
	if status != 413 || a.ErrorCode != 41301 || !strings.Contains(a.Message, "aborted") {
		t.Fatalf("a batch with a record too large: %d %+v", status, a)
	}
	if got := readAll(t, node, "tx-a", 0, true); !slices.Equal(got, []string{"a0", "a0-2"}) {
		t.Fatalf("tx-a-0 read_committed after the abort: %v", got)
	}
	if got := readAll(t, node, "tx-b", 1, true); len(got) != 0 {
		t.Fatalf("tx-b-1 read_committed after the abort: %v", got)
	}
	if got := readAll(t, node, "tx-a", 0, false); !slices.Contains(got, "lost-a") {
		t.Fatalf("tx-a-0 read_uncommitted does not hold the aborted record (it was never appended): %v", got)
	}

	// Refused before anything is written.
	status, a = send(`{"records":[{"topic":"tx-a","partition":1,"value":"never"},{"topic":"tx-missing","value":"x"}]}`, "")
	if status != 404 || a.ErrorCode != 40401 {
		t.Fatalf("unknown topic: %d %+v", status, a)
	}
	status, a = send(`{"records":[{"topic":"tx-a","partition":7,"value":"never"}]}`, "")
	if status != 404 || a.ErrorCode != 40402 {
		t.Fatalf("unknown partition: %d %+v", status, a)
	}
	status, a = send(`{"records":[]}`, "")
	if status != 400 || a.ErrorCode != 40001 {
		t.Fatalf("no records: %d %+v", status, a)
	}
	if got := readAll(t, node, "tx-a", 1, false); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("tx-a-1 after refused batches: %v", got)
	}

	// Idempotency-Key: the retry answers the original offsets, writes nothing.
	once := `{"records":[{"topic":"tx-a","partition":1,"value":"k1"},{"topic":"tx-b","partition":1,"value":"k2"}]}`
	s1, a1 := send(once, "batch-1")
	s2, a2 := send(once, "batch-1")
	if s1 != 200 || s2 != 200 || fmt.Sprint(a1.Offsets) != fmt.Sprint(a2.Offsets) {
		t.Fatalf("keyed batch and retry: %d %+v / %d %+v", s1, a1, s2, a2)
	}
	if got := readAll(t, node, "tx-a", 1, true); !slices.Equal(got, []string{"a1", "k1"}) {
		t.Fatalf("tx-a-1 after a keyed batch and its retry: %v", got)
	}
}
