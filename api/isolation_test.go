package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// appendTxn appends a transactional batch of values from producer id
// through the core, as the Kafka listener does.
func appendTxn(t *testing.T, b *server.Broker, topic string, id int64, values ...string) {
	t.Helper()
	var rb records.Builder
	for _, v := range values {
		rb.Add(records.Record{Value: []byte(`"` + v + `"`), Timestamp: time.Now().UnixMilli()})
	}
	data, err := rb.AppendBatch(nil, records.BatchOptions{ProducerID: id})
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(data)
	h.Attributes |= recordbatch.AttrTransactional
	h.Put(data)
	a, err := b.AppendBatch(context.Background(), server.BatchProduce{Topic: topic, Batches: data, Acks: server.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitAcks(context.Background(), []server.Appended{a}, time.Second)[0]; err != nil {
		t.Fatal(err)
	}
}

func endTxn(t *testing.T, b *server.Broker, topic string, id int64, commit bool) {
	t.Helper()
	errs := b.WriteTxnMarkers(context.Background(), []server.TxnMarker{{ProducerID: id, Commit: commit, Topic: topic}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// The read route's isolation: read_committed hides aborted records and
// stops at the last stable offset; neither level shows markers, and a
// reader's next_offset moves past them.
func TestReadIsolation(t *testing.T) {
	e := newTestEnv(t)
	if a := e.do(t, "POST", "/kafka/tx", "application/json", `"p0"`); a.status != 200 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	appendTxn(t, e.broker, "tx", 100, "a1", "a2") // 1-2, aborted at 4
	appendTxn(t, e.broker, "tx", 200, "c1")       // 3, committed at 5
	endTxn(t, e.broker, "tx", 100, false)
	endTxn(t, e.broker, "tx", 200, true)
	appendTxn(t, e.broker, "tx", 300, "o1") // 6, open

	read := func(query string) readAnswer {
		t.Helper()
		a := e.do(t, "GET", "/kafka/tx/partitions/0/records?"+query, "", "")
		if a.status != 200 {
			t.Fatalf("read %s: %d %s", query, a.status, a.body)
		}
		var ra readAnswer
		a.decode(t, &ra)
		return ra
	}
	values := func(ra readAnswer) []string {
		var out []string
		for _, r := range ra.Records {
			out = append(out, string(r.Value))
		}
		return out
	}
	committed := read("offset=0&isolation=read_committed")
	if got := values(committed); len(got) != 2 || got[0] != `"p0"` || got[1] != `"c1"` || committed.NextOffset != 6 {
		t.Fatalf("read_committed: %v next %d; want p0, c1 and next 6", got, committed.NextOffset)
	}
	// From past the committed records: the markers alone, no record, and
	// next_offset past them rather than stuck.
	if again := read("offset=4&isolation=read_committed"); len(again.Records) != 0 || again.NextOffset != 6 {
		t.Fatalf("read_committed from 4: %v next %d", values(again), again.NextOffset)
	}
	all := read("offset=0&isolation=read_uncommitted")
	if got := values(all); len(got) != 5 || all.NextOffset != 7 {
		t.Fatalf("read_uncommitted: %v next %d; want 5 records (no markers) and next 7", got, all.NextOffset)
	}
	if dflt := read("offset=0"); len(dflt.Records) != 5 {
		t.Fatalf("default isolation: %v", values(dflt))
	}
	e.do(t, "GET", "/kafka/tx/partitions/0/records?isolation=serializable", "", "").wantError(t, 400, codeBadParam)
	endTxn(t, e.broker, "tx", 300, true)
	if got := values(read("offset=6&isolation=read_committed")); len(got) != 1 || got[0] != `"o1"` {
		t.Fatalf("after the commit: %v", got)
	}
}

// A REST consumer created with isolation.level=read_committed skips the
// aborted records, waits for an open transaction, and moves past the
// markers, as one created without isolation.level does (the default for
// HTTP consumers); read_uncommitted reads every record.
func TestRestConsumerIsolation(t *testing.T) {
	e := newGroupsEnv(t)
	appendTxn(t, e.broker, "rtx", 100, "a1") // 0, aborted at 2
	appendTxn(t, e.broker, "rtx", 200, "c1") // 1, committed at 3
	endTxn(t, e.broker, "rtx", 100, false)
	endTxn(t, e.broker, "rtx", 200, true)
	appendTxn(t, e.broker, "rtx", 300, "o1") // 4, open
	values := func(recs []restRecord) []string {
		var out []string
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
		return out
	}
	committed := e.newInstance(t, "rc", `{"format":"json","auto.offset.reset":"earliest","isolation.level":"read_committed"}`)
	e.subscribe(t, "rc", committed.InstanceID, `["rtx"]`)
	if got := values(e.readAll(t, "rc", committed.InstanceID, typeRestJSON, 1)); got[0] != `"c1"` {
		t.Fatalf("read_committed instance read %v", got)
	}
	endTxn(t, e.broker, "rtx", 300, true)
	if got := values(e.readAll(t, "rc", committed.InstanceID, typeRestJSON, 1)); got[0] != `"o1"` {
		t.Fatalf("read_committed instance after the commit read %v", got)
	}
	// The default for a new HTTP consumer is read_committed.
	dflt := e.newInstance(t, "rd", `{"format":"json","auto.offset.reset":"earliest"}`)
	e.subscribe(t, "rd", dflt.InstanceID, `["rtx"]`)
	if got := values(e.readAll(t, "rd", dflt.InstanceID, typeRestJSON, 2)); len(got) != 2 || got[0] != `"c1"` || got[1] != `"o1"` {
		t.Fatalf("an instance without isolation.level read %v, want the committed records", got)
	}
	all := e.newInstance(t, "ru", `{"format":"json","auto.offset.reset":"earliest","isolation.level":"read_uncommitted"}`)
	e.subscribe(t, "ru", all.InstanceID, `["rtx"]`)
	if got := values(e.readAll(t, "ru", all.InstanceID, typeRestJSON, 3)); len(got) != 3 || got[0] != `"a1"` {
		t.Fatalf("read_uncommitted instance read %v", got)
	}
	bad := e.do(t, "POST", "/consumers/bad", typeRestV2, `{"isolation.level":"serializable"}`)
	bad.wantError(t, 422, codeInvalidConsumer)
}

// An SSE stream reads at read_committed unless asked otherwise: the
// aborted record is not sent and the stream stops at the open
// transaction; isolation=read_uncommitted sends every record.
func TestStreamIsolation(t *testing.T) {
	e := newGroupsEnv(t)
	appendTxn(t, e.broker, "stx", 100, "a1") // 0, aborted at 2
	appendTxn(t, e.broker, "stx", 200, "c1") // 1, committed at 3
	endTxn(t, e.broker, "stx", 100, false)
	endTxn(t, e.broker, "stx", 200, true)
	appendTxn(t, e.broker, "stx", 300, "o1") // 4, open
	streamed := func(query string) []string {
		t.Helper()
		res, err := http.Get(e.url + "/kafka/stx/stream?from=earliest&max_duration=1s&heartbeat_ms=200&" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out []string
		sc := bufio.NewScanner(res.Body)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "record":
				var r restRecord
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
					t.Fatalf("record data %q: %v", line, err)
				}
				out = append(out, string(r.Value))
			}
		}
		return out
	}
	if got := streamed("group=s1"); len(got) != 1 || got[0] != `"c1"` {
		t.Fatalf("default stream sent %v, want the committed record only", got)
	}
	if got := streamed("group=s2&isolation=read_uncommitted"); len(got) != 3 || got[0] != `"a1"` {
		t.Fatalf("read_uncommitted stream sent %v", got)
	}
}
