package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

type offset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

type readRecord struct {
	Offset int64           `json:"offset"`
	Value  json.RawMessage `json:"value"`
}

type readAnswer struct {
	Records       []readRecord `json:"records"`
	NextOffset    int64        `json:"next_offset"`
	HighWatermark int64        `json:"high_watermark"`
}

func post(url, contentType, body string) (*http.Response, []byte, error) {
	res, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, data, err
}

func mustPost(t *testing.T, url, contentType, body string, wantStatus int) []byte {
	t.Helper()
	res, data, err := post(url, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != wantStatus {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, data)
	}
	return data
}

// readPartition reads every visible record of a partition.
func readPartition(t *testing.T, base, topic string, partition int) (map[int64]int, int64) {
	t.Helper()
	ids := map[int64]int{}
	next, hw := int64(0), int64(-1)
	for {
		res, err := http.Get(fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=%d&max_records=5000&max_bytes=4194304", base, topic, partition, next))
		if err != nil {
			t.Fatal(err)
		}
		var ra readAnswer
		err = json.NewDecoder(res.Body).Decode(&ra)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("read %s-%d at %d: %d %v", topic, partition, next, res.StatusCode, err)
		}
		for _, r := range ra.Records {
			if r.Offset != next {
				t.Fatalf("%s-%d: expected offset %d, got %d (a gap)", topic, partition, next, r.Offset)
			}
			var v struct{ ID int }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("%s-%d offset %d holds %s, not a record this test sent", topic, partition, r.Offset, r.Value)
			}
			ids[r.Offset] = v.ID
			next++
		}
		hw = ra.HighWatermark
		if len(ra.Records) == 0 || next >= hw {
			return ids, hw
		}
	}
}

// TestKill9KeepsAcknowledgedRecords: with fsync before acknowledgement, every
// record acknowledged before a kill -9 is readable at its acknowledged offset
// after restart, and nothing but whole sent records is served.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(props, []byte("log.flush.interval.messages=1\nnum.partitions=3\n"), 0o644)
	node := harness.Start(t, "--config", props)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"durable","partitions":3}`, 201)

	const total, perRequest, workers = 10000, 25, 4
	var (
		mu       sync.Mutex
		acked    = map[int]offset{}
		ackCount atomic.Int64
		nextID   atomic.Int64
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				first := int(nextID.Add(perRequest)) - perRequest
				if first >= total {
					return
				}
				var body bytes.Buffer
				body.WriteString(`{"records":[`)
				for i := 0; i < perRequest; i++ {
					if i > 0 {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"key":"k%d","value":{"id":%d,"pad":"%s"}}`, first+i, first+i, strings.Repeat("p", 64))
				}
				body.WriteString(`]}`)
				res, data, err := post(node.URL+"/kafka/durable", "application/json", body.String())
				if err != nil {
					return // the node was killed
				}
				if res.StatusCode != 200 {
					t.Errorf("produce: %d %s", res.StatusCode, data)
					return
				}
				var got struct{ Offsets []offset }
				if err := json.Unmarshal(data, &got); err != nil || len(got.Offsets) != perRequest {
					t.Errorf("produce answer %s: %v", data, err)
					return
				}
				mu.Lock()
				for i, o := range got.Offsets {
					acked[first+i] = o
				}
				mu.Unlock()
				if ackCount.Add(perRequest) >= total/2 {
					killOnce.Do(node.Kill) // mid-stream: other workers have requests in flight
				}
			}
		}()
	}
	wg.Wait()
	killOnce.Do(node.Kill)
	if t.Failed() {
		return
	}
	t.Logf("%d records acknowledged before kill -9", len(acked))
	if len(acked) < total/2 || len(acked) >= total {
		t.Fatalf("the kill did not land mid-stream: %d of %d acknowledged", len(acked), total)
	}

	node.Restart()
	served := map[int]offset{}
	var hwTotal int64
	for p := 0; p < 3; p++ {
		ids, hw := readPartition(t, node.URL, "durable", p)
		hwTotal += hw
		if int64(len(ids)) != hw {
			t.Fatalf("partition %d: %d records readable below high watermark %d", p, len(ids), hw)
		}
		for off, id := range ids {
			if prev, dup := served[id]; dup {
				t.Fatalf("record %d served twice: %v and %d/%d", id, prev, p, off)
			}
			if id < 0 || id >= total {
				t.Fatalf("partition %d offset %d holds id %d, never sent", p, off, id)
			}
			served[id] = offset{Partition: int32(p), Offset: off}
		}
	}
	for id, want := range acked {
		if got, ok := served[id]; !ok || got != want {
			t.Fatalf("acknowledged record %d at %v: after restart found at %v (present %v)", id, want, got, ok)
		}
	}
	t.Logf("after restart: %d acknowledged kept, %d records served in all", len(acked), hwTotal)

	// The log continues where the survivors end.
	data := mustPost(t, node.URL+"/kafka/durable", "application/json", `{"records":[{"value":{"id":-1},"partition":0}]}`, 200)
	var got struct{ Offsets []offset }
	json.Unmarshal(data, &got)
	_, hw0 := readPartition(t, node.URL, "durable", 0)
	if got.Offsets[0].Offset != hw0-1 {
		t.Fatalf("new record at %d, partition 0 high watermark %d", got.Offsets[0].Offset, hw0)
	}
}

// TestSIGTERMShutsDownCleanly: SIGTERM exits 0 after closing the logs, and
// the next start serves the same records.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(props, []byte("num.partitions=2\nsome.unknown.key=1\nlog.segment.bytes=4096\n"), 0o644)
	node := harness.Start(t, "--config", props)
	for i := 0; i < 50; i++ {
		mustPost(t, node.URL+"/kafka/clean", "application/json", fmt.Sprintf(`{"records":[{"value":{"id":%d},"partition":1}]}`, i), 200)
	}
	node.Stop()
	if !strings.Contains(node.Logs(), "some.unknown.key") {
		t.Fatalf("no warning names the unknown key:\n%s", node.Logs())
	}
	node.Restart()
	ids, hw := readPartition(t, node.URL, "clean", 1)
	if hw != 50 || len(ids) != 50 || ids[49] != 49 {
		t.Fatalf("after clean restart: hw %d, %d records", hw, len(ids))
	}
}
