package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication"
)

// Reads for consumers that may ask any node of a cluster (the HTTP
// gateway's reads, long polls and streams, REST consumers): a partition is
// read here when this broker leads it, or holds a replica in the ISR and
// the offset is not above that replica's high watermark (a follower's
// high watermark is the leader's as of its last fetch, never above it, so
// it shows only committed records, at most a fetch behind). Any other
// read goes to the leader (Config.Forwarder), retried while leadership
// moves. The Kafka listener does not use these: Kafka clients find the
// leader themselves and are answered NOT_LEADER_OR_FOLLOWER elsewhere.

// leaderChangeWait bounds how long a read retries a partition whose leader
// is gone or moving before it answers ErrLeaderNotAvailable.
const leaderChangeWait = 3 * time.Second

// readSource is where a read is served: here, or from broker leader.
type readSource struct {
	local  bool
	leader int32
}

// readFrom decides where a consumer's read of a partition at offset is
// served. role is this broker's replica's role (nil: none here) and hw its
// high watermark; pv the controller's view of the partition.
func readFrom(self int32, role *replication.Role, hw, offset int64, pv PartitionView, inView bool, live func(int32) bool) (readSource, error) {
	if role != nil {
		best, _ := bestKnown(self, role, pv, inView)
		inSync := slices.Contains(best.ISR, self)
		switch {
		case role.Leader == self:
			return readSource{local: true}, nil
		case inSync && offset <= hw:
			return readSource{local: true}, nil
		}
	}
	if inView && pv.Leader >= 0 && pv.Leader != self && live(pv.Leader) {
		return readSource{leader: pv.Leader}, nil
	}
	if role != nil && offset <= hw {
		// No leader to ask: what this replica holds below its high
		// watermark was committed, if perhaps not all that was.
		return readSource{local: true}, nil
	}
	return readSource{}, fmt.Errorf("%w: no live leader to read from", ErrLeaderNotAvailable)
}

// source decides where this broker serves a read of topic-partition at
// offset; without a Forwarder every read is local (or refused).
func (b *Broker) source(topicName string, partition int32, offset int64) (readSource, error) {
	p, err := b.partition(topicName, partition)
	if b.cfg.Forwarder == nil {
		return readSource{local: true}, err
	}
	view, _ := b.Cluster()
	pv, inView := view.Partition(topicName, partition)
	if err != nil && !inView {
		return readSource{}, err // unknown topic or partition
	}
	var role *replication.Role
	hw := int64(-1)
	if p != nil {
		r := p.Role()
		role, hw = &r, p.HighWatermark()
	}
	src, err := readFrom(b.cfg.BrokerID, role, hw, offset, pv, inView, view.Live)
	if err != nil {
		return src, fmt.Errorf("%s-%d: %w", topicName, partition, err)
	}
	return src, nil
}

// ConsumerFetch is Fetch for consumers on any node: from a replica here
// when it may serve the read (readFrom), else from the partition's leader.
// A ReadCommitted fetch comes back without the aborted transactions'
// batches and the control batches (DropAborted); ReadEnd says where the
// batches read ended, so a reader moves past what was dropped.
func (b *Broker) ConsumerFetch(ctx context.Context, req FetchRequest, dst []byte) (FetchResult, error) {
	var res FetchResult
	err := b.retryWhileLeaderMoves(ctx, req.Topic, req.Partition, req.Offset, req.MaxWait, func(ctx context.Context, src readSource) error {
		var err error
		if src.local {
			res, err = b.Fetch(ctx, req, dst)
		} else {
			res, err = b.cfg.Forwarder.Fetch(ctx, src.leader, req, dst)
		}
		return err
	})
	res.ReadEnd = BatchesEnd(res.Data)
	if err == nil && req.ReadCommitted {
		res.Data = DropAborted(res.Data, res.AbortedTxns)
	}
	return res, err
}

// ConsumerListOffset is ListOffset for consumers on any node, answered
// where ConsumerFetch would read.
func (b *Broker) ConsumerListOffset(ctx context.Context, topicName string, partition int32, ts int64) (offset, timestamp int64, err error) {
	err = b.retryWhileLeaderMoves(ctx, topicName, partition, 0, 0, func(ctx context.Context, src readSource) error {
		var err error
		if src.local {
			offset, timestamp, err = b.ListOffset(topicName, partition, ts)
		} else {
			offset, timestamp, err = b.cfg.Forwarder.ListOffset(ctx, src.leader, topicName, partition, ts)
		}
		return err
	})
	return offset, timestamp, err
}

// retryWhileLeaderMoves runs read against the partition's source until it
// gives an answer that is not about leadership (NOT_LEADER, no leader, a
// leader not reachable or not yet told of the partition), choosing the
// source again each time, for up to leaderChangeWait beyond wait. Each
// read gets a context ending at that deadline: a leader that takes the
// request and never answers (frozen, or cut off with its connection
// open) would otherwise hold the read until the forwarding client's own
// timeout, 10 s beyond the long poll.
func (b *Broker) retryWhileLeaderMoves(ctx context.Context, topicName string, partition int32, offset int64, wait time.Duration, read func(context.Context, readSource) error) error {
	deadline := time.Now().Add(wait + leaderChangeWait)
	attempt, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		src, err := b.source(topicName, partition, offset)
		if err == nil {
			err = read(attempt, src)
			if err == nil || !leadershipError(err) || src.local && !errors.Is(err, ErrNotLeader) {
				return err
			}
		} else if !errors.Is(err, ErrLeaderNotAvailable) {
			return err
		}
		if time.Now().After(deadline) {
			return noLeaderToRead(topicName, partition, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-attempt.Done():
			return noLeaderToRead(topicName, partition, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noLeaderToRead is a read's answer when its partition's leader could
// not be read from in time: ErrLeaderNotAvailable, with why.
func noLeaderToRead(topicName string, partition int32, err error) error {
	if errors.Is(err, ErrLeaderNotAvailable) {
		return err
	}
	return fmt.Errorf("%w: %s-%d: %v", ErrLeaderNotAvailable, topicName, partition, err)
}

func leadershipError(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeaderNotAvailable) || errors.Is(err, ErrUnknownTopic)
}
