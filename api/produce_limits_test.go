package api

import (
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
)

// heapPeak samples HeapInuse until stop is called and returns the highest.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A 16 MiB body of tiny NDJSON lines used to become 8M records and one
// 91 MB batch before max.message.bytes refused it (2.7 GB of heap), and
// the pools kept that memory afterwards.
func TestProduceRefusesWhileScanningWithBoundedHeap(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("1\n", 8<<20)
	runtime.GC()
	base := heapInuse()
	stop := heapPeak()
	start := time.Now()
	a := e.do(t, "POST", "/kafka/t", typeNDJSON, body)
	took, peak := time.Since(start), stop()
	a.wantError(t, http.StatusRequestEntityTooLarge, codeTooLarge)
	const allowed = 160 << 20 // the body as sent and as read, and a bounded prefix of records
	if peak > base+allowed {
		t.Errorf("peak heap %d MiB above the %d MiB before the request; want < %d MiB", (peak-base)>>20, base>>20, allowed>>20)
	}
	runtime.GC() // pools keep their items across one collection
	if kept := int64(heapInuse()) - int64(base); kept > 8<<20 {
		t.Errorf("%d MiB still in use after the request", kept>>20)
	}
	t.Logf("413 after %v, peak heap +%d MiB", took, (peak-base)>>20)
	if got := e.readAll(t, "t", 0); len(got.Records) != 0 {
		t.Errorf("%d records written", len(got.Records))
	}
}

func TestProduceRecordCountCap(t *testing.T) {
	e := newTestEnv(t, func(_ *server.Config, c *Config) { c.MaxRecordsPerRequest = 3 })
	e.do(t, "POST", "/kafka/t", typeNDJSON, "1\n2\n3\n4\n").wantError(t, http.StatusRequestEntityTooLarge, codeTooLarge)
	e.do(t, "POST", "/kafka/t", typeJSON, `{"records":[{"value":1},{"value":2},{"value":3},{"value":4}]}`).
		wantError(t, http.StatusRequestEntityTooLarge, codeTooLarge)
	if a := e.do(t, "POST", "/kafka/t", typeNDJSON, "1\n2\n3\n"); a.status != 200 {
		t.Fatalf("3 records: %d %s", a.status, a.body)
	}
	if got := e.readAll(t, "t", 0); len(got.Records) != 3 {
		t.Errorf("%d records, want 3", len(got.Records))
	}
}
