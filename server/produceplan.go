package server

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/replication"
)

// The decisions of a produce request from a listener that speaks in
// records (the HTTP gateway), apart from the I/O that carries them out:
// which partition each record goes to (buildBatches), whether a
// partition's records are appended here or forwarded to its leader
// (routeBatch), and what the request answers once every partition has
// (settleProduce). A request writes nothing it does not report: every
// partition's route is decided, and refused when it has no live leader,
// before anything is written; afterwards each partition that failed is
// named, next to the offsets of those that were written.

// partitionBatch is the records of one request bound for one partition.
type partitionBatch struct {
	index   int32
	indexes []int // positions in the request
	// local is this broker's replica when it leads the partition (the
	// records are appended here), nil when they are forwarded.
	local *replication.Replica
	// bytes is the encoded batch of a local partition.
	bytes []byte
	// forwarded is where the partition's records start in the request's
	// forwarded records.
	forwarded int
}

// errNotDescribedYet: the controller has not described a partition to
// this broker yet. The topic is new (another node created it a moment
// ago): its first leader is being elected, which a produce waits for as
// it does for a topic it created itself.
var errNotDescribedYet = errors.New("the controller has not described it to this broker yet")

// routeBatch decides where partition p of topic goes: local when this
// broker's replica (role; nil: none here) leads it, forward when another
// live broker does. A partition without a live leader, or with fewer
// in-sync replicas than minISR, is refused with an error naming it.
func routeBatch(self int32, topic string, p int32, role *replication.Role, view *ClusterView, minISR int) (forward bool, err error) {
	if role != nil && role.Leader == self {
		return false, nil // the append checks min.insync.replicas
	}
	pv, ok := view.Partition(topic, p)
	switch {
	case !ok && view != nil:
		return false, fmt.Errorf("%w: %s-%d: %w; retry shortly", ErrLeaderNotAvailable, topic, p, errNotDescribedYet)
	case !ok || pv.Leader < 0:
		return false, fmt.Errorf("%w: %s-%d has no leader (an election is in progress or its in-sync replicas are down); retry shortly",
			ErrLeaderNotAvailable, topic, p)
	case pv.Leader == self:
		// The controller's view names this broker, whose replica has not
		// heard of its election yet.
		return false, fmt.Errorf("%w: %s-%d: this broker is taking over its leadership; retry shortly", ErrLeaderNotAvailable, topic, p)
	case !view.Live(pv.Leader):
		return false, fmt.Errorf("%w: %s-%d: its leader, broker %d, is not live; retry shortly", ErrLeaderNotAvailable, topic, p, pv.Leader)
	case len(pv.ISR) < minISR:
		return false, fmt.Errorf("%w: %s-%d has %d in-sync replicas %v, min.insync.replicas is %d",
			ErrNotEnoughReplicas, topic, p, len(pv.ISR), pv.ISR, minISR)
	}
	return true, nil
}

// localOutcome is one local partition's append and acknowledgement.
type localOutcome struct {
	base int64 // the first record's offset; the others follow
	err  error
}

// settleProduce answers a request of n records from each partition's
// outcome: local[i] for batch i when it was appended here, fwd (indexed
// by batch.forwarded + j) for forwarded records. Every record written
// gets its offset, in request order. When some partition failed, a
// request that wrote nothing answers the first failure's error, one that
// wrote some a *PartialWriteError (the offsets of the failed records -1).
//
// The offsets go into offsets' array when it holds n (ProduceRequest.Offsets).
func settleProduce(offsets []RecordOffset, topic string, n int, batches []partitionBatch, local []localOutcome, fwd []ForwardOutcome) (ProduceResult, error) {
	if cap(offsets) < n {
		offsets = make([]RecordOffset, n)
	}
	res := ProduceResult{Offsets: offsets[:n], LogAppendTime: -1}
	var failures []PartitionFailure
	written := 0
	fail := func(p int32, err error) {
		if len(failures) > 0 && failures[len(failures)-1].Partition == p {
			failures[len(failures)-1].Records++
			return
		}
		failures = append(failures, PartitionFailure{Partition: p, Records: 1, Err: err})
	}
	for i := range batches {
		pb := &batches[i]
		for j, idx := range pb.indexes {
			off, err := int64(-1), error(nil)
			if pb.local != nil {
				off, err = local[i].base+int64(j), local[i].err
			} else {
				off, err = fwd[pb.forwarded+j].Offset, fwd[pb.forwarded+j].Err
			}
			if err != nil {
				fail(pb.index, err)
				off = -1
			} else {
				written++
			}
			res.Offsets[idx] = RecordOffset{Partition: pb.index, Offset: off}
		}
	}
	switch {
	case len(failures) == 0:
		return res, nil
	case written == 0:
		return ProduceResult{}, failures[0].Err
	}
	return res, &PartialWriteError{Topic: topic, Written: written, Failures: failures}
}
