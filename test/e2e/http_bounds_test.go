package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// heapSampler polls the node's go_memstats_heap_inuse_bytes until stopped
// and keeps the highest value seen: the node's heap, not the test's.
type heapSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak float64
}

func sampleHeap(t *testing.T, node *harness.Node) *heapSampler {
	s := &heapSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			if v := heapInuse(node); v > 0 {
				s.mu.Lock()
				s.peak = max(s.peak, v)
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *heapSampler) stop() float64 {
	close(s.done)
	s.wg.Wait()
	return s.peak
}

// heapInuse is one reading of the node's heap; 0 when /metrics does not answer.
func heapInuse(node *harness.Node) float64 {
	res, err := http.Get(node.URL + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			var f float64
			if json.Unmarshal([]byte(v), &f) == nil {
				return f
			}
		}
	}
	return 0
}

// Twenty 1 KB zstd batches of one 32 MiB value each, read back over HTTP
// with max_records=500, used to decompress and render all 640 MiB at once.
func TestHTTPReadOfZstdBombsIsBounded(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "bombs", 1)
	cl := franz(t, node, kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(48<<20), kgo.DefaultProduceTopic("bombs"))
	value := bytes.Repeat([]byte("a"), 32<<20)
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	base := heapInuse(node)
	s := sampleHeap(t, node)
	res, err := http.Get(node.URL + "/kafka/bombs/partitions/0/records?max_records=500")
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Records    []json.RawMessage `json:"records"`
		NextOffset int64             `json:"next_offset"`
	}
	err = json.NewDecoder(res.Body).Decode(&ans)
	res.Body.Close()
	peak := s.stop()
	if res.StatusCode != 200 || err != nil {
		t.Fatalf("read: %d %v", res.StatusCode, err)
	}
	if len(ans.Records) != 1 || ans.NextOffset != 1 {
		t.Errorf("%d records, next_offset %d; want the first record only (default max_bytes 1 MiB)", len(ans.Records), ans.NextOffset)
	}
	const allowed = 256 << 20 // one 32 MiB value decompressed, rendered and encoded
	if peak-base > allowed {
		t.Errorf("node heap rose %d MiB during the read; want < %d MiB", int(peak-base)>>20, allowed>>20)
	}
	t.Logf("node heap %d MiB before, peak %d MiB", int(base)>>20, int(peak)>>20)
}

// A 16 MiB body of "1\n" lines used to take 13 s and 2.7 GB before its 413.
func TestHTTPProduceOfTinyLinesIsRefusedEarly(t *testing.T) {
	node := harness.Start(t)
	createTopic(t, node, "lines", 1)
	body := strings.Repeat("1\n", 8<<20)
	base := heapInuse(node)
	s := sampleHeap(t, node)
	start := time.Now()
	res, err := http.Post(node.URL+"/kafka/lines", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took, peak := time.Since(start), s.stop()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d %s; want 413", res.StatusCode, msg)
	}
	const allowed = 192 << 20 // the body read into memory and a bounded prefix of its records
	if peak-base > allowed {
		t.Errorf("node heap rose %d MiB; want < %d MiB", int(peak-base)>>20, allowed>>20)
	}
	t.Logf("413 after %v; node heap %d MiB before, peak %d MiB: %s", took, int(base)>>20, int(peak)>>20, msg)

	// Three at once used to take 7.5 GB.
	base = heapInuse(node)
	s = sampleHeap(t, node)
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(node.URL+"/kafka/lines", "application/x-ndjson", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				statuses[i] = res.StatusCode
			}
		}()
	}
	wg.Wait()
	peak = s.stop()
	for i, st := range statuses {
		if st != http.StatusRequestEntityTooLarge {
			t.Errorf("parallel request %d: %d; want 413", i, st)
		}
	}
	if peak-base > 3*allowed {
		t.Errorf("three in parallel: node heap rose %d MiB; want < %d MiB", int(peak-base)>>20, 3*allowed>>20)
	}
	t.Logf("three in parallel: node heap %d MiB before, peak %d MiB", int(base)>>20, int(peak)>>20)
}
