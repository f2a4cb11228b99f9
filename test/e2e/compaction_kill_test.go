package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestCompactionSurvivesKillDuringPass kills `ferry serve` with SIGKILL
// three times while the cleaner is in the middle of a pass over a large
// compacted topic (a .cleaned or .swap file in the partition directory;
// the cleaner throttled so a pass takes seconds), restarting it each time.
// Afterwards every record read is one that was acknowledged at that
// offset, offsets increase, and every key's last acknowledged value is
// there at its offset: the log is each group either before or after the
// pass, never a mix.
func TestCompactionSurvivesKillDuringPass(t *testing.T) {
	node := harness.Start(t, "--log-cleaner-backoff-ms=50", "--log-cleaner-io-max-bytes-per-second=1000000")
	node.WaitKafka()
	const topic = "bigtable"
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"`+topic+`","partitions":1,"configs":{`+
		`"cleanup.policy":"compact","segment.bytes":"262144","min.cleanable.dirty.ratio":"0.01"}}`, 201)
	acked, latest := map[int64]keyValue{}, map[string]int64{}
	dir := filepath.Join(node.DataDir, topic+"-0")
	for kill := 0; kill < 3; kill++ {
		produceKeyed(t, node, topic, 2000, 10, 200, acked, latest) // dirty data for the next pass
		harness.WaitFor(t, "the cleaner to be inside a pass", 60*time.Second, func() bool {
			return cleanerFileIn(dir) != ""
		})
		// A random moment further into the pass: a later group, the swap.
		time.Sleep(time.Duration(mrand.IntN(1500)) * time.Millisecond)
		node.Kill()
		t.Logf("kill %d: killed with %q in the partition directory", kill+1, cleanerFileIn(dir))
		node.Restart()
		node.WaitKafka()
	}
	checkAcked(t, readAllFranz(t, node, topic), acked, latest)
	var got []*kgo.Record
	harness.WaitFor(t, "a pass to complete after the last restart", 60*time.Second, func() bool {
		got = readAllFranz(t, node, topic)
		return len(got) < len(acked)/2
	})
	checkAcked(t, got, acked, latest)
	t.Logf("%d records acknowledged, %d read once a pass completed after three kills during passes", len(acked), len(got))
}

// checkAcked: offsets increase, every record read is the one
// acknowledged at its offset, and every key's last value is there.
func checkAcked(t *testing.T, got []*kgo.Record, acked map[int64]keyValue, latest map[string]int64) {
	t.Helper()
	byOffset := map[int64]bool{}
	for i, r := range got {
		if i > 0 && r.Offset <= got[i-1].Offset {
			t.Fatalf("offset %d after %d", r.Offset, got[i-1].Offset)
		}
		want, ok := acked[r.Offset]
		if !ok || want.key != string(r.Key) || want.value != string(r.Value) {
			t.Fatalf("offset %d holds %s=%s, acknowledged there: %+v (%v)", r.Offset, r.Key, r.Value, want, ok)
		}
		byOffset[r.Offset] = true
	}
	for key, off := range latest {
		if !byOffset[off] {
			t.Fatalf("key %s: its last value, at offset %d, is gone", key, off)
		}
	}
}

type keyValue struct{ key, value string }

// produceKeyed writes rounds updates of each of keys keys (values of
// valueBytes), and adds to acked what was acknowledged at each offset
// and to latest the offset of each key's last value.
func produceKeyed(t *testing.T, node *harness.Node, topic string, keys, rounds, valueBytes int, acked map[int64]keyValue, latest map[string]int64) {
	t.Helper()
	// Uncompressed random values, so the log is as large as the data and
	// a throttled pass takes seconds.
	cl := franz(t, node, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	pad := make([]byte, valueBytes/2)
	for round := 0; round < rounds; round++ {
		for k := 0; k < keys; k++ {
			rand.Read(pad)
			kv := keyValue{fmt.Sprintf("key-%05d", k), fmt.Sprintf("%d-%x", round, pad)}
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Key: []byte(kv.key), Value: []byte(kv.value)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("produce: %v", err)
					return
				}
				mu.Lock()
				acked[r.Offset] = kv
				if r.Offset >= latest[kv.key] {
					latest[kv.key] = r.Offset
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// cleanerFileIn names a .cleaned or .swap file in dir, or "".
func cleanerFileIn(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
			return n
		}
	}
	return ""
}
