package zookeeper

import (
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// Blocks reserved by brokers racing each other never overlap, and the
// znode is written as Kafka writes it.
func TestProducerIDBlocksDoNotOverlap(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	clients := []*Client{open(t, srv.Addr()+root, 10*time.Second), open(t, srv.Addr()+root, 10*time.Second)}
	var mu sync.Mutex
	starts := map[int64]bool{}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				start, err := c.ReserveProducerIDs(int32(i+1), 100, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if starts[start] {
					t.Errorf("block at %d reserved twice", start)
				}
				starts[start] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for s := range starts {
		if (s-1)%100 != 0 || s < 1 || s > 1+39*100 {
			t.Fatalf("block start %d: blocks of 100 from 1 expected", s)
		}
	}
	var last map[string]any
	if err := json.Unmarshal(raw(t, srv.Addr(), root+producerIDBlockPath), &last); err != nil {
		t.Fatal(err)
	}
	if last["version"] != float64(1) || last["block_end"] != "4000" || last["block_start"] != "3901" {
		t.Fatalf("znode %v", last)
	}
	// A corrupt znode is an error, not a block from 0.
	if _, err := clients[0].conn.Set(clients[0].abs(producerIDBlockPath), []byte(`{"block_end":"x"}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].ReserveProducerIDs(1, 100, 1); err == nil {
		t.Fatal("a corrupt block znode gave a block")
	}
}
