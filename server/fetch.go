package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

// FetchRequest reads one partition from Offset.
type FetchRequest struct {
	Topic     string
	Partition int32
	Offset    int64
	// MaxBytes bounds the batches returned; the first batch is returned even
	// when larger, so a consumer never stalls.
	MaxBytes int
	// MaxWait long-polls this long when nothing at Offset is visible yet.
	MaxWait time.Duration
	// ChunksOnly returns where the batches lie on disk (Chunks) without
	// reading them: Data stays dst, for a listener that sends the ranges
	// with sendfile. A read of the log's tail smaller than
	// sendfileMinBytes is copied into Data instead, Chunks left empty.
	ChunksOnly bool
	// Follower marks a replica's fetch (Kafka's ReplicaID >= 0): it reads
	// up to the log end, not the high watermark, and must come from one of
	// the partition's assigned replicas other than this broker.
	Follower  bool
	ReplicaID int32
	// Counted: the listener counted this follower's offset already
	// (CountFollowerFetch), before reading any partition of its request;
	// Fetch does not count it again.
	Counted bool
	// ReadCommitted is Kafka's isolation_level 1: read only below the last
	// stable offset, and learn the aborted transactions in the range
	// (FetchResult.AbortedTxns).
	ReadCommitted bool
}

// AbortedTxn is an aborted transaction a read_committed reader must skip:
// its producer's transactional batches from FirstOffset on, up to its
// abort marker (Kafka's FetchResponse AbortedTransactions).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// Chunk is a byte range of a partition's log holding whole batches, for a
// listener that sends it from the segment file rather than from memory
// (sendfile). Storage finds and opens it (storage.Chunk); the listener
// opens it when it builds the response, writes it when it sends it, and
// closes it, each on one goroutine at a time.
type Chunk interface {
	// Size is the number of bytes.
	Size() int
	// Open pins the bytes (retention may delete the segment afterwards)
	// and checks that a batch still starts there. It fails, leaving
	// nothing open, when the segment is gone or changed since the read:
	// a listener then reads again, copying.
	Open() error
	// WriteTo writes an opened chunk to w: with sendfile when w takes
	// bytes from a file itself (a TCP connection), else through a pooled
	// buffer. A file cut short under the send is an error.
	WriteTo(w io.Writer) (int64, error)
	// AppendTo appends an opened chunk's bytes to dst.
	AppendTo(dst []byte) ([]byte, error)
	// Close gives back what Open took.
	Close() error
}

// FetchResult holds whole record batches starting at or before Offset:
// Data holds their bytes, or with ChunksOnly (unless the read was small:
// sendfileMinBytes) Chunks say where they lie on disk.
type FetchResult struct {
	Data             []byte
	Chunks           []Chunk
	HighWatermark    int64
	LogStartOffset   int64
	LastStableOffset int64
	// AbortedTxns, for a ReadCommitted fetch, are the aborted transactions
	// that overlap the range read (non-nil, maybe empty).
	AbortedTxns []AbortedTxn
	// ReadEnd (ConsumerFetch only) is the offset after the last batch
	// read, before aborted ones were dropped; -1 when none was.
	ReadEnd int64
	// HighWatermarkNews (a follower's fetch): HighWatermark is above every
	// one the follower's earlier answers carried, so the answer waits for
	// records no longer than FollowerTellWithin
	// (replication.Replica.HighWatermarkSent).
	HighWatermarkNews bool
	size              int // of the batches, in Data or in Chunks
}

// sendfileMinBytes is the smallest read of a log's tail that a ChunksOnly
// fetch leaves on disk: below it one pread into the response costs less
// than sending from the file (storage.ReadOptions.CopyBelow). A consumer
// that keeps up reads a few batches at a time, at the tail.
const sendfileMinBytes = 32 << 10

// Fetch returns batches visible to consumers (below the high watermark;
// a follower's: below the log end), waiting up to MaxWait for some to
// appear (in the broker's purgatory: no read while it waits, one when data
// arrives). Offsets below the log start or above the log end are
// ErrOffsetOutOfRange.
func (b *Broker) Fetch(ctx context.Context, req FetchRequest, dst []byte) (FetchResult, error) {
	p, err := b.partition(req.Topic, req.Partition)
	if err != nil {
		return FetchResult{}, err
	}
	if req.Follower {
		if err := CheckFollower(p, b.cfg.BrokerID, req.ReplicaID); err != nil {
			return FetchResult{}, err
		}
		if !req.Counted {
			woken := b.WokenMark()
			if err := countFollowerFetch(p, req.ReplicaID, req.Offset); err != nil {
				return FetchResult{}, err
			}
			// A high watermark it moved completed the acks=all produces
			// waiting for this follower (and the consumers waiting for
			// those records): they answer before this fetch reads and
			// parks again.
			b.YieldToWoken(woken)
		}
	}
	// The Kafka listener fetches with no MaxWait and waits itself: only a
	// fetch that may wait takes a wait point (the partition's lock).
	var wait delayed.Wait
	switch {
	case req.MaxWait > 0 && req.Follower:
		wait = FollowerWaitPoint(p, req.Offset)
	case req.MaxWait > 0:
		wait = WaitPoint(p, req.Offset)
		wait.Committed = req.ReadCommitted
	}
	res, err := readVisible(p, req, dst)
	if err == nil && req.Follower {
		res.HighWatermarkNews = p.HighWatermarkSent(req.ReplicaID, res.HighWatermark)
		wait.ToldHighWatermark = res.HighWatermark
	}
	if err == nil && res.Size() == 0 && req.MaxWait > 0 {
		maxWait := req.MaxWait
		if res.HighWatermarkNews {
			maxWait = min(maxWait, FollowerTellWithin)
		}
		switch b.WaitForData(ctx, 1, []delayed.Wait{wait}, maxWait) {
		case delayed.Cancelled, delayed.Closed:
			return res, nil // the client went away, or the broker is closing its logs
		}
		res, err = readVisible(p, req, dst)
		if err == nil && req.Follower {
			res.HighWatermarkNews = p.HighWatermarkSent(req.ReplicaID, res.HighWatermark)
		}
	}
	if n := res.Size(); n > 0 {
		b.cfg.Metrics.Topic(req.Topic).Out(n)
	}
	return res, err
}

// CountFollowerFetch counts a follower's fetch of a partition from offset
// without reading it: the fetch offset is the follower's log end, and the
// leader counts its progress (high watermark, ISR) before serving it, as
// Kafka does. A listener counts every partition of a follower's request
// this way before reading any (then Fetch with Counted), so the high
// watermark moves, and the acks=all produces waiting for this follower
// answer, without waiting for the reads of the partitions listed before;
// it calls YieldToWoken after. The error is the one Fetch would answer.
func (b *Broker) CountFollowerFetch(topicName string, partition, replica int32, offset int64) error {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return err
	}
	if err := CheckFollower(p, b.cfg.BrokerID, replica); err != nil {
		return err
	}
	return countFollowerFetch(p, replica, offset)
}

func countFollowerFetch(p *replication.Replica, replica int32, offset int64) error {
	return p.FollowerFetched(replica, -1, offset)
}

// Size is the bytes of the batches returned, whether in Data or only in
// Chunks.
func (r FetchResult) Size() int { return r.size }

func readVisible(p *replication.Replica, req FetchRequest, dst []byte) (FetchResult, error) {
	res := FetchResult{
		HighWatermark:    p.HighWatermark(),
		LogStartOffset:   p.LogStartOffset(),
		LastStableOffset: p.LastStableOffset(),
		Data:             dst,
	}
	if req.Offset < res.LogStartOffset || req.Offset > p.LogEndOffset() {
		return res, fmt.Errorf("%w: %s-%d offset %d is outside [%d, %d]", ErrOffsetOutOfRange,
			req.Topic, req.Partition, req.Offset, res.LogStartOffset, p.LogEndOffset())
	}
	end := res.HighWatermark
	switch {
	case req.Follower:
		end = p.ReplicaReadEnd()
	case req.ReadCommitted:
		end = res.LastStableOffset
		res.AbortedTxns = []AbortedTxn{}
	}
	if req.Offset >= end {
		return res, nil
	}
	rr, err := p.Read(storage.ReadOptions{
		Offset:      req.Offset,
		MaxBytes:    req.MaxBytes,
		MinOneBatch: true,
		MaxOffset:   end,
		ChunksOnly:  req.ChunksOnly,
		CopyBelow:   sendfileMinBytes,
	}, dst)
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		// Retention moved the start between our check and the read.
		return res, fmt.Errorf("%w: %s-%d offset %d: %v", ErrOffsetOutOfRange, req.Topic, req.Partition, req.Offset, err)
	}
	if err != nil {
		return res, fmt.Errorf("%w: read %s-%d: %v", ErrStorage, req.Topic, req.Partition, err)
	}
	res.Data = rr.Data
	if req.ReadCommitted {
		if res.AbortedTxns, err = abortedTxns(p, req.Offset, end); err != nil {
			return res, fmt.Errorf("%w: aborted transactions of %s-%d: %v", ErrStorage, req.Topic, req.Partition, err)
		}
	}
	for i := range rr.Chunks {
		res.size += rr.Chunks[i].Size()
	}
	if req.ChunksOnly && len(rr.Chunks) > 0 && len(rr.Data) == len(dst) {
		res.Chunks = make([]Chunk, len(rr.Chunks))
		for i := range rr.Chunks {
			res.Chunks[i] = &rr.Chunks[i]
		}
	}
	return res, nil
}

// CheckFollower refuses a follower fetch from a broker that is not one of
// the partition's other assigned replicas (Kafka: NOT_LEADER_OR_FOLLOWER).
func CheckFollower(p Partition, self, replicaID int32) error {
	if replicaID == self || !slices.Contains(p.Replicas(), replicaID) {
		return fmt.Errorf("%w: broker %d is not a follower of %s-%d (replicas %v)",
			ErrNotLeader, replicaID, p.Topic(), p.Index(), p.Replicas())
	}
	return nil
}

// Special timestamps of ListOffsets, as Kafka defines them.
const (
	OffsetLatest   int64 = -1
	OffsetEarliest int64 = -2
)

// abortedTxns lists the aborted transactions overlapping [from, upTo).
func abortedTxns(p *replication.Replica, from, upTo int64) ([]AbortedTxn, error) {
	entries, err := p.AbortedTxns(from, upTo)
	out := make([]AbortedTxn, len(entries))
	for i, a := range entries {
		out[i] = AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out, err
}

// ListOffset returns the offset for a timestamp: OffsetEarliest (log start),
// OffsetLatest (high watermark), or the first record whose timestamp is at
// least ts, with that record's timestamp. With no such record it returns
// offset -1 and timestamp -1, as Kafka does.
func (b *Broker) ListOffset(topicName string, partition int32, ts int64) (offset, timestamp int64, err error) {
	return b.ListOffsetIsolated(topicName, partition, ts, false)
}

// ListOffsetIsolated is ListOffset at an isolation level: for
// readCommitted, latest is the last stable offset and a timestamp is
// looked up below it only, as Kafka's ListOffsets does.
func (b *Broker) ListOffsetIsolated(topicName string, partition int32, ts int64, readCommitted bool) (offset, timestamp int64, err error) {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return 0, 0, err
	}
	visible := p.HighWatermark()
	if readCommitted {
		visible = p.LastStableOffset()
	}
	switch {
	case ts == OffsetEarliest:
		return p.LogStartOffset(), -1, nil
	case ts == OffsetLatest:
		return visible, -1, nil
	case ts < 0:
		return 0, 0, fmt.Errorf("%w: %d is not a timestamp, -1 (latest) or -2 (earliest)", ErrInvalidTimestamp, ts)
	}
	base, err := p.OffsetForTimestamp(ts)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if base < 0 {
		return -1, -1, nil
	}
	return b.firstRecordAtOrAfter(p, base, ts, visible)
}

// firstRecordAtOrAfter scans batches from base for the first record below
// hw with timestamp >= ts; the time index only locates the batch.
func (b *Broker) firstRecordAtOrAfter(p *replication.Replica, base, ts, hw int64) (int64, int64, error) {
	for base < hw {
		data, err := readBatches(p, base, hw, 1<<20, nil)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if len(data) == 0 {
			break
		}
		found, foundTs, next := int64(-1), int64(-1), base
		err = records.Decode(data, base, b.cfg.MaxDecompressedBytes, func(r records.Record) bool {
			next = r.Offset + 1
			if r.Timestamp >= ts {
				found, foundTs = r.Offset, r.Timestamp
				return false
			}
			return true
		})
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
		if found >= 0 {
			return found, foundTs, nil
		}
		if next <= base {
			break
		}
		base = next
	}
	return -1, -1, nil
}
