package txn

import (
	"context"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Group commit of state writes. Every transition waits until its record
// is acknowledged by the in-sync replicas; records of one
// __transaction_state partition that arrive while an append of it is in
// flight go together in the next append (one batch, one replication round
// trip), as Kafka's coordinator groups the AddPartitionsToTxn arriving
// while a write is pending. Each waiter gets its batch's outcome: a batch
// is appended whole or not at all.

// maxGroupedRecords and maxGroupedBytes bound one append: well under the
// topic's max.message.bytes (1 MiB), however many writers queue.
const (
	maxGroupedRecords = 256
	maxGroupedBytes   = 512 << 10
)

// stateWriter is one partition's queue.
type stateWriter struct {
	mu struct {
		sync.Mutex
		queue    []queuedWrite
		flushing bool
	}
}

type queuedWrite struct {
	record records.Record
	// appended is closed once the record is in this broker's log (its
	// group appended locally), before the replicas acknowledge it.
	appended chan struct{}
	done     chan error
	// settled, when not nil, is called with the outcome by the flush, for
	// a writer that does not wait for it (writeEarly).
	settled func(error)
}

// writer returns partition p's queue.
func (c *Coordinator) writer(p int32) *stateWriter {
	c.writers.Lock()
	defer c.writers.Unlock()
	w, ok := c.writers.m[p]
	if !ok {
		w = &stateWriter{}
		c.writers.m[p] = w
	}
	return w
}

// enqueue queues t's record for partition p and returns its write. The
// log holds one id's records in the order they were queued, so a caller
// queues under the entry's mu the state it decided there: a later record
// of the id always holds the later state.
func (c *Coordinator) enqueue(p int32, t *Txn) queuedWrite { return c.enqueueSettled(p, t, nil) }

// enqueueSettled is enqueue, with settled called with the outcome.
func (c *Coordinator) enqueueSettled(p int32, t *Txn, settled func(error)) queuedWrite {
	w := c.writer(p)
	q := queuedWrite{record: records.Record{Key: stateKey(t.ID), Value: stateValue(t), Timestamp: c.nowMs()},
		appended: make(chan struct{}), done: make(chan error, 1), settled: settled}
	w.mu.Lock()
	w.mu.queue = append(w.mu.queue, q)
	start := !w.mu.flushing
	w.mu.flushing = true
	w.mu.Unlock()
	if start {
		go c.flush(w, p)
	}
	return q
}

// wait returns the write's outcome once the in-sync replicas acknowledged
// it or it failed. Not abandoned on ctx: the record may be appended
// anyway, and the caller must not apply or forget a change whose outcome
// it does not know; flush gives up after its own timeout.
func (q queuedWrite) wait() error {
	return <-q.done
}

// waitAppended returns once the record is in this broker's log (nil), or
// with the write's error when it failed before; the acknowledgement may
// still fail after (wait).
func (q queuedWrite) waitAppended() error {
	select {
	case <-q.appended:
		return nil
	case err := <-q.done:
		q.done <- err // for wait
		// The append closes appended before the outcome is sent, and
		// select chooses at random when both are ready: a record appended
		// whose acknowledgement then failed is in the log all the same.
		select {
		case <-q.appended:
			return nil
		default:
			return err
		}
	}
}

// flush appends p's queued records, a group at a time, until the queue is
// empty.
func (c *Coordinator) flush(w *stateWriter, p int32) {
	for {
		w.mu.Lock()
		n, size := 0, 0
		for n < len(w.mu.queue) && n < maxGroupedRecords {
			r := w.mu.queue[n].record
			if n > 0 && size+len(r.Key)+len(r.Value) > maxGroupedBytes {
				break
			}
			size += len(r.Key) + len(r.Value)
			n++
		}
		group := w.mu.queue[:n:n]
		w.mu.queue = w.mu.queue[n:]
		if len(group) == 0 {
			w.mu.flushing = false
			w.mu.queue = nil
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		err := c.appendGroup(p, group)
		for _, q := range group {
			if q.settled != nil {
				q.settled(err)
			}
			q.done <- err
		}
	}
}

// appendGroup writes records to p as one acks=all batch.
func (c *Coordinator) appendGroup(p int32, group []queuedWrite) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := &server.ProduceRequest{Topic: StateTopic, Sync: c.syncStateWrites(), Internal: true,
		Records: make([]server.ProduceRecord, len(group)),
		OnAppended: func() {
			for _, q := range group {
				close(q.appended)
			}
		}}
	for i, q := range group {
		req.Records[i] = server.ProduceRecord{Partition: p, Record: q.record}
	}
	c.stateAppends.Add(1)
	return c.appendState(ctx, req)
}
