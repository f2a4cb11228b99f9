package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// Large Produce frames are read into pooled buffers. Requests pipelined
// on several connections at once, each filling a buffer another request
// used before, must store exactly what each sent.
func TestPooledProduceFramesKeepEachRequestsRecords(t *testing.T) {
	ts := newTestServer(t)
	createTopic(t, ts, "pooled", 1)
	const conns, perConn = 3, 5
	clients := make([]*client, conns)
	corrs := make([][]int32, conns)
	sent := map[string]string{} // first record → second
	for i := range clients {
		clients[i] = ts.dial(t)
	}
	for j := range perConn {
		for i, c := range clients {
			// Sizes from 200 KiB to ~1 MiB, so buffers of several size
			// classes are taken, returned and reused out of order.
			n := i*perConn + j
			val := strings.Repeat(string(rune('a'+n%26)), 200<<10+(n%4)*260<<10)
			sent[fmt.Sprint(n)] = val
			req := produceReq("pooled", 0, 1, batch(t, records.BatchOptions{}, fmt.Sprint(n), val))
			req.SetVersion(9)
			corrs[i] = append(corrs[i], c.send(req))
		}
	}
	for i, c := range clients {
		for _, corr := range corrs[i] {
			var resp kmsg.ProduceResponse
			resp.SetVersion(9)
			c.recv(corr, &resp)
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
				t.Fatalf("connection %d: error %d", i, p.ErrorCode)
			}
		}
	}
	var got []string
	for off := int64(0); off < 2*conns*perConn; {
		fr := do[*kmsg.FetchResponse](clients[0], fetchReq("pooled", 0, off, 0, 0), 11)
		vals := fetchValues(t, fr.Topics[0].Partitions[0], off)
		if len(vals) == 0 {
			t.Fatalf("no records at offset %d", off)
		}
		got = append(got, vals...)
		off += int64(len(vals))
	}
	for k := 0; k < len(got); k += 2 {
		want, ok := sent[got[k]]
		if !ok || got[k+1] != want {
			t.Fatalf("offset %d: record %q stored a value starting %q (%d bytes), sent %d bytes",
				k+1, got[k], got[k+1][:8], len(got[k+1]), len(want))
		}
		delete(sent, got[k])
	}
	if len(sent) != 0 {
		t.Fatalf("%d requests stored nothing", len(sent))
	}
}

// The broker checks a producer's CRC once, before storage (which then
// skips it): a large batch with one flipped byte is still refused whole.
func TestLargeProduceWithBadCRCIsRefused(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "crc", 1)
	data := batch(t, records.BatchOptions{}, strings.Repeat("v", 300<<10))
	data[len(data)-10] ^= 0xff
	if p := produceOne(c, 9, "crc", data); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("error %d, want CORRUPT_MESSAGE (%d)", p.ErrorCode, kerr.CorruptMessage.Code)
	}
	good := batch(t, records.BatchOptions{}, "after")
	if p := produceOne(c, 9, "crc", good); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce after the refusal: error %d, base offset %d (want 0: nothing stored)", p.ErrorCode, p.BaseOffset)
	}
}

// A request's partitions are appended in parallel, except that one naming
// a partition twice is served in the order written.
func TestProduceNamingAPartitionTwiceAppendsInOrder(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "twice", 2)
	req := produceReq("twice", 0, 1, batch(t, records.BatchOptions{}, "first"))
	for _, p := range []struct {
		partition int32
		value     string
	}{{1, "other"}, {0, "second"}} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, batch(t, records.BatchOptions{}, p.value)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	resp := do[*kmsg.ProduceResponse](c, req, 9)
	var offsets []int64
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
		offsets = append(offsets, p.BaseOffset)
	}
	if fmt.Sprint(offsets) != "[0 0 1]" {
		t.Fatalf("base offsets %v, want [0 0 1] (partition 0 twice, in request order)", offsets)
	}
	fr := do[*kmsg.FetchResponse](c, fetchReq("twice", 0, 0, 0, 0), 11)
	if got := fetchValues(t, fr.Topics[0].Partitions[0], 0); fmt.Sprint(got) != "[first second]" {
		t.Fatalf("partition 0 holds %v", got)
	}
}

func TestDistinctPartitions(t *testing.T) {
	req := func(parts ...int32) *kmsg.ProduceRequest {
		r := kmsg.NewPtrProduceRequest()
		for _, topic := range []string{"a", "b"} {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p})
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	var many []int32
	for p := range int32(40) {
		many = append(many, p)
	}
	for name, c := range map[string]struct {
		req  *kmsg.ProduceRequest
		want bool
	}{
		"few":                    {req(0, 1, 2), true},
		"few, one twice":         {req(0, 1, 0), false},
		"many":                   {req(many...), true},
		"many, the last twice":   {req(append(many, 39)...), false},
		"many, an early one too": {req(append(many, 3)...), false},
	} {
		if got := distinctPartitions(c.req); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
