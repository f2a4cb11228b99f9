package server

import (
	"context"
	"runtime"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
)

// Waiting fetches (Kafka Fetch with MinBytes/MaxWait, the HTTP long-poll,
// the REST consumer and the SSE stream) all wait in the broker's purgatory
// (replication/delayed): a fetch takes each partition's WaitPoint before
// reading it, registers what it still needs with WatchFetch, and reads
// again once when the Op completes. While it waits it reads nothing and
// runs nothing: the partition's appends complete it.

// WaitPoint is what a waiting fetch of p at offset counts bytes from. Take
// it before reading p, so an append between the read and WatchFetch is
// counted; set KnownBytes to what the read found.
func WaitPoint(p Partition, offset int64) delayed.Wait {
	return delayed.Wait{
		Key:       delayed.Key{Topic: p.Topic(), Partition: p.Index()},
		Offset:    offset,
		BaseBytes: p.WaitState().VisibleBytes,
	}
}

// FollowerWaitPoint is WaitPoint for a follower's fetch, which counts the
// bytes below the log end, and completes within FollowerTellWithin once
// the high watermark passes the one the follower was told: set
// ToldHighWatermark to the one the read's answer carries
// (FetchResult.HighWatermark).
func FollowerWaitPoint(p Partition, offset int64) delayed.Wait {
	st := p.WaitState()
	return delayed.Wait{
		Key:                delayed.Key{Topic: p.Topic(), Partition: p.Index()},
		Offset:             offset,
		BaseBytes:          st.AppendedBytes,
		ToLogEnd:           true,
		TellsHighWatermark: true,
		ToldHighWatermark:  st.HighWatermark,
		TellWithin:         FollowerTellWithin,
	}
}

// FollowerTellWithin is how long a high watermark a follower was not told
// waits at the leader for the next append, whose answer then carries it
// with the records, before it is answered alone. Kafka answers at once;
// that costs every acknowledged append one more fetch round per follower
// (one idempotent producer on three brokers sharing two cores: 8% slower,
// 34% more system calls), where under load the next append comes within
// this wait (2 ms: as fast as before, within noise). A
// follower serves reads up to its high watermark, so this bounds how long
// a record the leader acknowledged stays unreadable on the other in-sync
// nodes when no other record follows it (before: replica.fetch.wait.max.ms).
const FollowerTellWithin = 2 * time.Millisecond

// WatchFetch registers a fetch that waits for minBytes beyond the waits'
// offsets, for at most maxWait. The caller waits on the Op's Done, with
// whatever else it waits for, and calls CancelWait when it stops waiting
// for another reason. With no waits the Op is a plain timer.
func (b *Broker) WatchFetch(minBytes int64, waits []delayed.Wait, maxWait time.Duration) *delayed.Op {
	return b.waiters.Register(delayed.NewFetch(minBytes, waits), maxWait, b.waitState)
}

// CancelWait drops an Op the caller no longer waits for.
func (b *Broker) CancelWait(op *delayed.Op) { b.waiters.Cancel(op) }

// WaitForData blocks until minBytes lie beyond the waits' offsets, maxWait
// passes, ctx ends or the broker closes.
func (b *Broker) WaitForData(ctx context.Context, minBytes int64, waits []delayed.Wait, maxWait time.Duration) delayed.Outcome {
	return b.WatchFetch(minBytes, waits, maxWait).Wait(ctx)
}

// WokenMark is taken before a produce's appends, or a follower's fetch
// being counted, for YieldToWoken.
func (b *Broker) WokenMark() uint64 { return b.waiters.Woken() }

// YieldToWoken lets the waiting requests that appends since mark completed
// (fetches, long-polls) run before the caller answers its producer; after
// a follower's fetch moved the high watermark, the acks=all produces it
// completed run before the fetch goes on to read and park. Each
// is made runnable as the next goroutine of the appender's P, where it
// would wait until the appender had encoded and written its own answer and
// blocked: tens of microseconds added to every woken consumer's latency,
// which is what end-to-end latency measures, while the producer, whose
// records are already durable as it asked, loses about as much. With
// nothing woken it costs one atomic load.
func (b *Broker) YieldToWoken(mark uint64) {
	if b.waiters.Woken() != mark {
		runtime.Gosched()
	}
}

func (b *Broker) waitState(k delayed.Key) (delayed.State, bool) {
	p, err := b.Partition(k.Topic, k.Partition)
	if err != nil {
		return delayed.State{}, false
	}
	return p.WaitState(), true
}

// LogReads counts the reads of a partition's log since it opened: a
// diagnostic, which tests use to prove that a waiting fetch reads nothing.
func (b *Broker) LogReads(topicName string, partition int32) (int64, error) {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return 0, err
	}
	return p.Reads(), nil
}

// WaitingFetches is the number of fetches waiting on a partition.
func (b *Broker) WaitingFetches(topicName string, partition int32) int {
	return b.waiters.Watching(delayed.Key{Topic: topicName, Partition: partition})
}
