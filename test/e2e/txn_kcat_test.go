package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// TestTxnKcatIsolation: librdkafka (kcat), whose default isolation is
// read_committed, reads a partition holding an aborted, a committed and an
// open transaction (written as a coordinator writes them: raw Produce and
// WriteTxnMarkers requests): it skips the aborted records and stops at the
// last stable offset; with isolation.level=read_uncommitted it reads them
// all; it never shows a marker.
func TestTxnKcatIsolation(t *testing.T) {
	kcatPath(t)
	node := kafkaNode(t)
	createTopic(t, node, "txk", 1)
	cl := franz(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(id int64, txn bool, values ...string) {
		t.Helper()
		var b records.Builder
		for _, v := range values {
			b.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
		}
		opts := records.BatchOptions{}
		if id > 0 {
			opts.ProducerID = id
		}
		data, err := b.AppendBatch(nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if txn {
			h := recordbatch.ReadHeader(data)
			h.Attributes |= recordbatch.AttrTransactional
			h.Put(data)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "txk"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = data
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce: %v %+v", err, resp)
		}
	}
	marker := func(id int64, commit bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = id, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "txk", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("marker: %v %+v", err, resp)
		}
	}
	produce(0, false, "p0")
	produce(100, true, "a1", "a2")
	produce(200, true, "c1")
	marker(100, false)
	marker(200, true)
	produce(300, true, "o1") // open: the LSO stays at its offset
	produce(0, false, "p1")

	read := func(extra ...string) string {
		args := append([]string{"-b", node.KafkaAddr, "-C", "-t", "txk", "-o", "beginning", "-e", "-q", "-f", `%s\n`}, extra...)
		return strings.Join(strings.Fields(kcat(t, "", args...)), " ")
	}
	if got := read(); got != "p0 c1" {
		t.Fatalf("kcat read_committed read %q, want \"p0 c1\"", got)
	}
	if got := read("-X", "isolation.level=read_uncommitted"); got != "p0 a1 a2 c1 o1 p1" {
		t.Fatalf("kcat read_uncommitted read %q", got)
	}
	marker(300, true)
	if got := read(); got != "p0 c1 o1 p1" {
		t.Fatalf("kcat read_committed after the commit read %q", got)
	}
}
