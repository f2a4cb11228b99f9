package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// TestIdempotentProducersOnManyPartitions: producers of different
// partitions (and two per partition) append and retry concurrently; every
// retry answers its original offset and nothing is appended twice.
func TestIdempotentProducersOnManyPartitions(t *testing.T) {
	const partitions, perPartition, batches = 8, 2, 50
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "many", Partitions: partitions, Configs: map[string]string{CfgSegmentBytes: "4096"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, partitions*perPartition)
	for g := 0; g < partitions*perPartition; g++ {
		wg.Add(1)
		go func(part int32) {
			defer wg.Done()
			errs <- produceWithRetries(b, part, batches)
		}(int32(g % partitions))
	}
	stop := make(chan struct{})
	go func() { // snapshots race the appends, as the flush loop does
		for {
			select {
			case <-stop:
				return
			default:
				b.flushDue(time.Now())
			}
		}
	}()
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := int32(0); i < partitions; i++ {
		p, _ := b.Partition("many", i)
		if p.LogEndOffset() != perPartition*batches {
			t.Fatalf("partition %d: log end %d, want %d", i, p.LogEndOffset(), perPartition*batches)
		}
	}
}

func produceWithRetries(b *Broker, part int32, batches int) error {
	id, _, err := b.InitProducerID(-1, -1)
	if err != nil {
		return err
	}
	for seq := int32(0); seq < int32(batches); seq++ {
		batch, err := idemBatchErr(id, seq)
		if err != nil {
			return err
		}
		first, err := b.produceBatch(context.Background(), BatchProduce{Topic: "many", Partition: part, Batches: append([]byte(nil), batch...)})
		if err != nil {
			return err
		}
		again, err := b.produceBatch(context.Background(), BatchProduce{Topic: "many", Partition: part, Batches: batch})
		if err != nil || again.BaseOffset != first.BaseOffset {
			return fmt.Errorf("partition %d seq %d: retry at %d (%v), original %d", part, seq, again.BaseOffset, err, first.BaseOffset)
		}
	}
	return nil
}

func idemBatchErr(id int64, seq int32) ([]byte, error) {
	var b records.Builder
	b.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	return b.AppendBatch(nil, records.BatchOptions{ProducerID: id, BaseSequence: seq})
}
