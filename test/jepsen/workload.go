package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer describes one sequential writer: it writes the values
// "<Name>-0", "<Name>-1", … one at a time to one partition, each waited
// for (acknowledged, failed or timed out) before the next, so its
// acknowledged offsets must grow.
type Producer struct {
	Name      string
	Node      string // the node it talks to, for reports
	Topic     string
	Partition int32
	// Every is the pause between writes (bounds the rate); Max bounds the
	// count (0: until the context ends).
	Every time.Duration
	Max   int
	// Timeout bounds one write; after it the write is indeterminate.
	Timeout time.Duration
}

// Values are JSON strings on the wire, from both kinds of producer, so
// that the HTTP gateway and Kafka clients read them alike.
func encodeValue(v string) []byte { return strconv.AppendQuote(nil, v) }

func decodeValue(b []byte) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

// loop runs write for each value until ctx ends or p.Max, pacing by
// p.Every.
func (p Producer) loop(ctx context.Context, h *History, via string, write func(ctx context.Context, w *Write)) {
	for n := 0; (p.Max == 0 || n < p.Max) && ctx.Err() == nil; n++ {
		w := Write{Producer: p.Name, Via: via, Node: p.Node, Topic: p.Topic, Partition: p.Partition,
			Value: fmt.Sprintf("%s-%d", p.Name, n), Start: time.Now()}
		wctx, cancel := context.WithTimeout(ctx, p.Timeout)
		write(wctx, &w)
		cancel()
		w.End = time.Now()
		h.Add(w)
		select {
		case <-ctx.Done():
		case <-time.After(p.Every):
		}
	}
}

// ProduceKafka runs p through cl until ctx ends. cl must partition
// manually (kgo.RecordPartitioner(kgo.ManualPartitioner())); every error
// is indeterminate: the client retries, so an earlier attempt may have
// been written.
func ProduceKafka(ctx context.Context, h *History, cl *kgo.Client, p Producer) {
	p.loop(ctx, h, "kafka", func(ctx context.Context, w *Write) {
		r := &kgo.Record{Topic: p.Topic, Partition: p.Partition, Value: encodeValue(w.Value)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			w.Outcome, w.Err = Indeterminate, err.Error()
			return
		}
		w.Outcome, w.Partition, w.Offset = Acked, r.Partition, r.Offset
	})
}

// ProduceHTTP runs p as POST {baseURL}/kafka/{topic} with one record
// naming its partition. A 503 with error_code 50306 (no live leader,
// refused before anything is written) and a refused connection are
// failures; every other error is indeterminate.
func ProduceHTTP(ctx context.Context, h *History, client *http.Client, baseURL string, p Producer) {
	p.loop(ctx, h, "http", func(ctx context.Context, w *Write) {
		body, _ := json.Marshal(map[string]any{"records": []any{map[string]any{"value": w.Value, "partition": p.Partition}}})
		req, _ := http.NewRequestWithContext(ctx, "POST", baseURL+"/kafka/"+p.Topic, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			w.Outcome, w.Err = Indeterminate, err.Error()
			if refused(err) {
				w.Outcome = Failed
			}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var ans struct {
			Offsets []struct {
				Partition int32 `json:"partition"`
				Offset    int64 `json:"offset"`
			} `json:"offsets"`
			ErrorCode int `json:"error_code"`
		}
		json.Unmarshal(b, &ans)
		switch {
		case res.StatusCode == 200 && len(ans.Offsets) == 1 && ans.Offsets[0].Offset >= 0:
			w.Outcome, w.Partition, w.Offset = Acked, ans.Offsets[0].Partition, ans.Offsets[0].Offset
		case res.StatusCode == 503 && ans.ErrorCode == 50306:
			w.Outcome, w.Err = Failed, fmt.Sprintf("%d %s", res.StatusCode, bytes.TrimSpace(b))
		default:
			w.Outcome, w.Err = Indeterminate, fmt.Sprintf("%d %s", res.StatusCode, bytes.TrimSpace(b))
		}
	})
}

// refused reports a connection that was never made (nothing was sent).
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}

// ReadKafka reads partitions 0..partitions-1 of topic from their start to their
// high watermarks (as of the call) through a Kafka client, in order; the
// records' Source is "kafka".
func ReadKafka(ctx context.Context, seeds []string, topic string, partitions int32) ([]Record, error) {
	return readBack(ctx, seeds, topic, partitions, false, 0)
}

// ReadCommitted reads partitions 0..partitions-1 of topic at
// read_committed from the start to their last stable offsets (as of the
// call); call it once every transaction has ended. Source "final".
func ReadCommitted(ctx context.Context, seeds []string, topic string, partitions int32, idle time.Duration) ([]Record, error) {
	return readBack(ctx, seeds, topic, partitions, true, idle)
}

// readBack is the final read of both checks. Read uncommitted, it ends
// when every partition's record below its end offset arrived; read
// committed, the records below the last stable offset may end with
// markers and aborted records that never arrive, so a poll of idle that
// brings nothing ends it too.
func readBack(ctx context.Context, seeds []string, topic string, partitions int32, committed bool, idle time.Duration) ([]Record, error) {
	want, err := endOffsets(ctx, seeds, topic, partitions, committed)
	if err != nil || len(want) == 0 {
		return nil, err
	}
	source, opts := "kafka", []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if committed {
		source, opts = "final", append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	start := map[int32]kgo.Offset{}
	for p := range want {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Record
	next := map[int32]int64{}
	for done := 0; done < len(want); {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if committed {
			pctx, cancel = context.WithTimeout(ctx, idle)
		}
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return out, fmt.Errorf("read %s: %w (at %v of %v)", topic, ctx.Err(), next, want)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			n++
			out = append(out, Record{Source: source, Topic: topic, Partition: r.Partition, Offset: r.Offset, Value: decodeValue(r.Value)})
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] == want[r.Partition] {
				done++
			}
		})
		if committed && n == 0 {
			break
		}
	}
	return out, nil
}

// endOffsets is each non-empty partition's high watermark, or its last
// stable offset when committed.
func endOffsets(ctx context.Context, seeds []string, topic string, partitions int32, committed bool) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	list := kadm.NewClient(cl).ListEndOffsets
	if committed {
		list = kadm.NewClient(cl).ListCommittedOffsets
	}
	ends, err := list(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	want := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		end, ok := ends.Lookup(topic, p)
		if !ok || end.Err != nil {
			return nil, fmt.Errorf("end offset of %s-%d: %v", topic, p, end.Err)
		}
		if end.Offset > 0 {
			want[p] = end.Offset
		}
	}
	return want, nil
}

// ReadHTTP reads one partition of topic through one node's gateway
// (GET /kafka/{topic}/partitions/{p}/records), from its start up to its
// high watermark as that node reports it; a node with an in-sync replica
// serves it from that replica, so reading through every node compares the
// replicas. Source is "http "+node.
func ReadHTTP(ctx context.Context, client *http.Client, baseURL, node, topic string, partition int32) ([]Record, error) {
	var out []Record
	for offset := int64(0); ; {
		recs, next, err := readPage(ctx, client, baseURL, topic, partition, offset, 0)
		if err != nil {
			return out, err
		}
		for i := range recs {
			recs[i].Source = "http " + node
		}
		out = append(out, recs...)
		if len(recs) == 0 {
			return out, nil
		}
		offset = next
	}
}

// readPage is one GET of records from offset, long-polling waitMs; it
// returns the records and the next offset to ask for (offset when none
// came).
func readPage(ctx context.Context, client *http.Client, baseURL, topic string, partition int32, offset int64, waitMs int) ([]Record, int64, error) {
	url := fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=%d&max_records=10000&timeout_ms=%d", baseURL, topic, partition, offset, waitMs)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := client.Do(req)
	if err != nil {
		return nil, offset, err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return nil, offset, fmt.Errorf("GET %s: %d %s", url, res.StatusCode, b)
	}
	var ans struct {
		Records []struct {
			Offset int64           `json:"offset"`
			Value  json.RawMessage `json:"value"`
		} `json:"records"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, offset, fmt.Errorf("GET %s: %w", url, err)
	}
	out := make([]Record, 0, len(ans.Records))
	next := offset
	for _, r := range ans.Records {
		out = append(out, Record{Topic: topic, Partition: partition, Offset: r.Offset, Value: decodeValue(r.Value)})
		next = r.Offset + 1
	}
	return out, next, nil
}

// Reads collects records from concurrent consumers.
type Reads struct{ events[Record] }

// Records is a copy of what was read so far.
func (r *Reads) Records() []Record { return r.copy() }

// ConsumeHTTP reads one partition through one node's gateway while the
// faults run, from offset 0 on, long-polling (500 ms) for more, until ctx
// ends; errors (a leader moving, a node cut off) are retried after a
// pause. Its records are Live, Source "live http "+node: Check holds
// them against the final reads.
func ConsumeHTTP(ctx context.Context, into *Reads, client *http.Client, baseURL, node, topic string, partition int32) {
	for next := int64(0); ctx.Err() == nil; {
		recs, n, err := readPage(ctx, client, baseURL, topic, partition, next, 500)
		for i := range recs {
			recs[i].Source, recs[i].Live = "live http "+node, true
		}
		into.add(recs...)
		next = max(next, n)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
