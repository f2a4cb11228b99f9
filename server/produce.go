package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// PartitionAuto asks the core to choose a record's partition: Kafka's
// murmur2 partitioner for keyed records, round robin per request otherwise.
const PartitionAuto int32 = -1

// ProduceRecord is one record of a produce request from a listener that
// speaks in records rather than batches (the HTTP gateway).
type ProduceRecord struct {
	Partition int32 // PartitionAuto, or an explicit partition
	Record    records.Record
}

// ProduceRequest writes Records to Topic: one batch per partition, every
// batch validated before any is appended.
type ProduceRequest struct {
	Topic   string
	Records []ProduceRecord
	// Sync acknowledges only after fsync, whatever the topic's flush policy.
	Sync bool
	// Internal marks the broker's own writers (the group coordinator), the
	// only ones allowed to append to internal topics.
	Internal bool
	// Timeout bounds the wait for every in-sync replica (these requests
	// are acks=all); 0 is DefaultProduceTimeout.
	Timeout time.Duration
	// Transaction, for an Internal writer only (the group coordinator's
	// TxnOffsetCommit), makes the batch transactional for this producer:
	// its id and epoch, no sequence, the transactional attribute, as
	// Kafka's coordinator writes them, so the partition's commit or abort
	// marker decides its records.
	Transaction *ProduceTransaction
	// Offsets, when its capacity holds Records, is the array the result's
	// offsets are written into, so a caller that pools its requests (the
	// gateway) allocates none per request; else the result gets its own.
	Offsets []RecordOffset
	// OnAppended, when set, is called once every batch of the request is
	// in this broker's log, before the wait for the in-sync replicas; not
	// when an append failed or a batch went to another broker. The
	// transaction coordinator answers a producer's AddPartitionsToTxn
	// there (server/txn's early writes).
	OnAppended func()
}

// ProduceTransaction is the producer an internal transactional write
// belongs to.
type ProduceTransaction struct {
	ProducerID    int64
	ProducerEpoch int16
}

// RecordOffset is where one produced record landed.
type RecordOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// ProduceResult holds one offset per request record, in request order.
type ProduceResult struct {
	Offsets []RecordOffset
	// LogAppendTime is the broker's timestamp when the topic uses
	// LogAppendTime, else -1.
	LogAppendTime int64
}

// produceScratch is what one Produce call works in and drops when it
// returns: the builder, the encoded local batches back to back (nothing
// keeps them once the log has them: storage.Log.Append lets the caller
// reuse its slice), and the per-partition bookkeeping. Pooled, a request
// allocates none of it.
type produceScratch struct {
	builder  records.Builder
	encoded  []byte
	batches  []partitionBatch
	indexes  []int
	outcomes []localOutcome
	appended []Appended
	which    []int
	ackErrs  []error
}

var scratchPool = sync.Pool{New: func() any { return new(produceScratch) }}

// maxPooledBuilderBytes is the most encoded bytes whose scratch goes back
// to the pool: one huge request must not pin that much memory for as long
// as the pool keeps it.
const maxPooledBuilderBytes = 4 << 20

// maxPooledScratchRecords bounds the index slices a pooled scratch keeps.
const maxPooledScratchRecords = 4096

func getProduceScratch() *produceScratch {
	return scratchPool.Get().(*produceScratch)
}

// putProduceScratch pools sc once its request is answered, clearing what
// refers to replicas and record bytes so the pool keeps neither alive.
func putProduceScratch(sc *produceScratch) {
	if cap(sc.encoded) > maxPooledBuilderBytes || cap(sc.indexes) > maxPooledScratchRecords ||
		cap(sc.batches) > maxPooledScratchRecords {
		return
	}
	sc.encoded = sc.encoded[:0]
	clear(sc.batches[:cap(sc.batches)])
	sc.batches = sc.batches[:0]
	sc.indexes = sc.indexes[:0]
	clear(sc.outcomes[:cap(sc.outcomes)])
	sc.outcomes = sc.outcomes[:0]
	clear(sc.appended[:cap(sc.appended)])
	sc.appended = sc.appended[:0]
	sc.which = sc.which[:0]
	clear(sc.ackErrs[:cap(sc.ackErrs)])
	sc.ackErrs = sc.ackErrs[:0]
	scratchPool.Put(sc)
}

// autoCreateLeaderWait bounds how long a produce that created its topic
// waits for the controller to elect the new partitions' leaders.
const autoCreateLeaderWait = 10 * time.Second

// Produce validates, partitions and appends a request's records, then
// waits once until every in-sync replica has them (acks=all). Either all
// batches are appended or, if validation fails, none is. On a cluster the
// records of partitions another broker leads are forwarded to it
// (Config.Forwarder, produceplan.go); when some partitions are written and
// others fail, the error is a *PartialWriteError and the result holds the
// written records' offsets.
func (b *Broker) Produce(ctx context.Context, req *ProduceRequest) (ProduceResult, error) {
	if len(req.Records) == 0 {
		return ProduceResult{}, fmt.Errorf("%w: the request has no records", ErrInvalidRecord)
	}
	if !req.Internal {
		if err := RefuseInternalTopic(req.Topic, "produce to"); err != nil {
			return ProduceResult{}, err
		}
	}
	t, created, err := b.topicForProduce(req.Topic)
	if err != nil {
		return ProduceResult{}, err
	}
	for i := range req.Records {
		if err := b.checkValue(ctx, t, i, req.Records[i].Record.Key, req.Records[i].Record.Value); err != nil {
			return ProduceResult{}, err
		}
	}
	view, _ := b.Cluster()
	sc := getProduceScratch()
	defer putProduceScratch(sc)
	batches, err := b.buildBatches(t, t.partitionCount(view), req.Records, sc)
	if err != nil {
		return ProduceResult{}, err
	}
	forwarded, t, err := b.routeBatches(ctx, t, batches, req.Records, req.Internal, created)
	if err != nil {
		return ProduceResult{}, err
	}
	if err := b.encodeBatches(t, batches, req.Records, batchOptionsFor(req), sc); err != nil {
		return ProduceResult{}, err
	}
	timeout := cmp.Or(req.Timeout, DefaultProduceTimeout)
	var fwd []ForwardOutcome
	var local []localOutcome
	logAppendTime := int64(-1)
	switch {
	case len(forwarded) == 0:
		local, logAppendTime = b.appendLocal(ctx, t, batches, req.Sync, coordinatorTxn(req), timeout, sc, req.OnAppended)
	case len(forwarded) == len(req.Records):
		fwd = make([]ForwardOutcome, len(forwarded))
		b.cfg.Forwarder.Produce(ctx, t.meta.Name, forwarded, timeout, fwd)
	default: // both at once: the request waits for the slower
		fwd = make([]ForwardOutcome, len(forwarded))
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.cfg.Forwarder.Produce(ctx, t.meta.Name, forwarded, timeout, fwd)
		}()
		local, logAppendTime = b.appendLocal(ctx, t, batches, req.Sync, coordinatorTxn(req), timeout, sc, nil)
		<-done
	}
	res, err := settleProduce(req.Offsets, t.meta.Name, len(req.Records), batches, local, fwd)
	if logAppendTime >= 0 && err == nil {
		res.LogAppendTime = logAppendTime
	}
	return res, err
}

// appendLocal appends the batches of the partitions this broker leads,
// then waits once for their acknowledgements. An append that fails stops
// the appends not yet made (as before forwarding existed, when a request
// was all local).
// The outcomes live in sc. appended, when not nil, is called once every
// batch is appended (none failed), before the wait. txn: the batches are
// an internal writer's transaction (coordinatorTxn).
func (b *Broker) appendLocal(ctx context.Context, t *topic, batches []partitionBatch, sync, txn bool, timeout time.Duration, sc *produceScratch,
	appendedAll func()) ([]localOutcome, int64) {
	out := slices.Grow(sc.outcomes[:0], len(batches))[:len(batches)]
	sc.outcomes = out
	// The builder computed every CRC just now.
	opts := storage.AppendOptions{Sync: sync || t.settings.syncAppends, LogAppendTime: t.settings.logAppendTime, ChecksumVerified: true}
	counters := b.cfg.Metrics.Topic(t.meta.Name)
	appended := slices.Grow(sc.appended[:0], len(batches))
	which := slices.Grow(sc.which[:0], len(batches))
	logAppendTime := int64(-1)
	var failed error
	woken := b.WokenMark()
	for i := range batches {
		pb := &batches[i]
		if pb.local == nil {
			continue
		}
		if failed != nil {
			out[i].err = failed
			continue
		}
		var ar storage.AppendResult
		var err error
		if txn {
			ar, err = pb.local.AppendCoordinatorTxnBatch(recordbatch.ReadHeader(pb.bytes), pb.bytes, opts)
		} else {
			ar, err = pb.local.Append(pb.bytes, opts)
		}
		if err != nil {
			failed = err
			if !isProducerRuleError(err) {
				failed = appendError(t.meta.Name, pb.index, err)
			}
			out[i].err = failed
			continue
		}
		out[i].base = ar.BaseOffset
		appended = append(appended, Appended{AppendResult: ar, partition: pb.local, acks: AcksAll})
		which = append(which, i)
		counters.In(len(pb.bytes), int(ar.Records))
		if ar.LogAppendTime >= 0 {
			logAppendTime = ar.LogAppendTime
		}
	}
	b.YieldToWoken(woken) // the consumers these records woke go first
	if appendedAll != nil && failed == nil && len(appended) > 0 {
		appendedAll()
	}
	if len(appended) > 0 {
		sc.appended, sc.which = appended, which
		sc.ackErrs = b.waitAcksInto(ctx, appended, timeout, sc.ackErrs)
		for k, err := range sc.ackErrs {
			if err != nil {
				out[which[k]].err = err
			}
		}
	}
	return out, logAppendTime
}

// topicForProduce finds the topic, creating it when auto-create is on
// (created). On a cluster a topic this broker holds no replica of is
// described from the cluster metadata (remotetopics.go).
func (b *Broker) topicForProduce(name string) (t *topic, created bool, err error) {
	t, err = b.lookup(name)
	if err == nil || !errors.Is(err, ErrUnknownTopic) {
		return t, false, err
	}
	if elsewhere, ok, err := b.topicHeldElsewhere(name); err != nil || ok {
		return elsewhere, false, err
	}
	if !b.cfg.AutoCreateTopics {
		return nil, false, err
	}
	err = b.CreateTopic(TopicSpec{Name: name})
	if err != nil && !errors.Is(err, ErrTopicExists) {
		return nil, false, err
	}
	t, err = b.lookup(name)
	return t, err == nil, err
}

// routeBatches decides each batch's route (routeBatch) and collects the
// records to forward, in batch order. Every partition must have a route
// before anything is written. A request that has just created its topic,
// or finds one the controller has not described here yet, waits (up to
// autoCreateLeaderWait) for the leaders to be elected.
// Internal requests (the group coordinator's) never forward: their writer
// must lead the partition. While it waits, the topic is looked up again:
// a replica the controller opens here meanwhile is in a newer snapshot of
// the table, and the snapshot routed by is returned.
func (b *Broker) routeBatches(ctx context.Context, t *topic, batches []partitionBatch, recs []ProduceRecord, internal, created bool) ([]ProduceRecord, *topic, error) {
	var deadline time.Time // set at the first wait: most requests route at once
	for {
		err := b.routeOnce(t, batches, internal)
		if err == nil {
			break
		}
		waits := created && errors.Is(err, ErrLeaderNotAvailable) || errors.Is(err, errNotDescribedYet)
		if deadline.IsZero() {
			deadline = time.Now().Add(autoCreateLeaderWait)
		}
		if !waits || time.Now().After(deadline) {
			return nil, t, err
		}
		select {
		case <-ctx.Done():
			return nil, t, err
		case <-time.After(20 * time.Millisecond):
		}
		if fresh, err := b.lookup(t.meta.Name); err == nil && fresh.meta.ID == t.meta.ID {
			t = fresh
		}
	}
	var forwarded []ProduceRecord
	for i := range batches {
		pb := &batches[i]
		if pb.local != nil {
			continue
		}
		if forwarded == nil {
			forwarded = make([]ProduceRecord, 0, len(recs))
		}
		pb.forwarded = len(forwarded)
		for _, idx := range pb.indexes {
			forwarded = append(forwarded, ProduceRecord{Partition: pb.index, Record: recs[idx].Record})
		}
	}
	return forwarded, t, nil
}

func (b *Broker) routeOnce(t *topic, batches []partitionBatch, internal bool) error {
	view, _ := b.Cluster()
	for i := range batches {
		pb := &batches[i]
		var role *replication.Role
		var replica *replication.Replica
		if int(pb.index) < len(t.partitions) && t.partitions[pb.index] != nil {
			replica = t.partitions[pb.index]
			r := replica.Role()
			role = &r
		}
		if b.cfg.Forwarder == nil || internal {
			if replica == nil {
				return fmt.Errorf("%w: this broker holds no replica of %s-%d", ErrNotLeader, t.meta.Name, pb.index)
			}
			pb.local = replica // its append answers NOT_LEADER when it is not the leader
			continue
		}
		if role != nil && role.Leader == b.cfg.BrokerID {
			if err := replica.CheckLeading(); err != nil {
				// Fenced (cut from ZooKeeper): the view still names this
				// broker, so nothing to forward to; the client retries.
				return fmt.Errorf("%w: %v; retry shortly", ErrLeaderNotAvailable, err)
			}
		}
		forward, err := routeBatch(b.cfg.BrokerID, t.meta.Name, pb.index, role, view, t.settings.minISR)
		if err != nil {
			return err
		}
		pb.local = nil
		if !forward {
			pb.local = replica
		}
	}
	for i := range batches {
		if batches[i].local != nil {
			if err := checkReplicas(batches[i].local, AcksAll); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildBatches groups records by partition (in order of first appearance)
// among the topic's n partitions, checking each record.
// The batches live in sc.
func (b *Broker) buildBatches(t *topic, n int32, recs []ProduceRecord, sc *produceScratch) ([]partitionBatch, error) {
	unkeyed := int32(b.unkeyedCursor.Add(1) % uint32(n))
	batches := sc.batches[:0]
	defer func() { sc.batches = batches }()
	var slot map[int32]int // only once a request spans many partitions
	now := time.Now().UnixMilli()
	for i := range recs {
		p := recs[i].Partition
		switch {
		case p == PartitionAuto && recs[i].Record.Key != nil:
			p = records.PartitionForKey(recs[i].Record.Key, n)
		case p == PartitionAuto:
			p = unkeyed
		case p < 0 || p >= n:
			return nil, fmt.Errorf("%w: %s has no partition %d (it has %d)", ErrUnknownPartition, t.meta.Name, p, n)
		}
		if recs[i].Record.Timestamp == 0 {
			recs[i].Record.Timestamp = now // the gateway's "no timestamp given"
		}
		if err := t.settings.checkRecord(&recs[i].Record, now); err != nil {
			return nil, fmt.Errorf("%w (record %d)", err, i)
		}
		s := batchIndex(batches, slot, p)
		if s < 0 {
			s = len(batches)
			pb := partitionBatch{index: p}
			if s == 0 {
				// Most requests go to one partition: room for all their
				// records at once rather than a slice grown record by record.
				sc.indexes = slices.Grow(sc.indexes[:0], len(recs)-i)
				pb.indexes = sc.indexes[: 0 : len(recs)-i]
			}
			batches = append(batches, pb)
			if slot != nil || len(batches) > 8 {
				slot = indexBatches(slot, batches)
			}
		}
		batches[s].indexes = append(batches[s].indexes, i)
	}
	return batches, nil
}

// batchOptionsFor is the producer fields of req's batches: none, or an
// internal writer's transaction (no sequence, as Kafka's coordinators
// write them).
func batchOptionsFor(req *ProduceRequest) records.BatchOptions {
	if !req.Internal || req.Transaction == nil {
		return records.BatchOptions{}
	}
	return records.BatchOptions{ProducerID: req.Transaction.ProducerID, ProducerEpoch: req.Transaction.ProducerEpoch,
		BaseSequence: -1, Transactional: true}
}

// coordinatorTxn: req is an internal writer's transactional write, which
// the partition's producer state must see (Replica.AppendCoordinatorTxnBatch).
func coordinatorTxn(req *ProduceRequest) bool { return req.Internal && req.Transaction != nil }

// encodeBatches encodes the batch of each local partition and checks
// every partition's records against max.message.bytes, forwarded ones
// included, so a request the leader would refuse writes nothing anywhere.
func (b *Broker) encodeBatches(t *topic, batches []partitionBatch, recs []ProduceRecord, opts records.BatchOptions, sc *produceScratch) error {
	builder := &sc.builder
	for i := range batches {
		pb := &batches[i]
		if pb.local == nil && encodedAtMost(recs, pb.indexes) <= t.settings.maxMessageBytes {
			continue // fits whatever the encoding: no need to build it
		}
		builder.Reset()
		for _, idx := range pb.indexes {
			builder.Add(recs[idx].Record)
		}
		opts.Codec, opts.Level = t.settings.codec, t.settings.level
		start := len(sc.encoded)
		out, err := builder.AppendBatch(sc.encoded, opts)
		if err != nil {
			sc.encoded = out[:start] // its capacity tells putProduceScratch what grew
			return fmt.Errorf("%w: %v", ErrInvalidRecord, err)
		}
		data := out[start:len(out):len(out)]
		if len(data) > t.settings.maxMessageBytes {
			sc.encoded = out[:start]
			return fmt.Errorf("%w: %d records for partition %d encode to %d bytes; max.message.bytes is %d",
				ErrRecordTooLarge, len(pb.indexes), pb.index, len(data), t.settings.maxMessageBytes)
		}
		if pb.local != nil {
			// A later batch that outgrows out's array moves to a new one;
			// this batch keeps the old.
			pb.bytes = data
			sc.encoded = out
		} else {
			sc.encoded = out[:start] // built only to measure
		}
	}
	return nil
}

// encodedAtMost bounds the uncompressed batch the records at indexes
// encode to: the batch header, and per record the widest varints of its
// length, timestamp and offset deltas, key, value and header lengths.
func encodedAtMost(recs []ProduceRecord, indexes []int) int {
	n := recordbatch.HeaderSize
	for _, idx := range indexes {
		r := &recs[idx].Record
		n += 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
		for _, h := range r.Headers {
			n += 5 + len(h.Key) + 5 + len(h.Value)
		}
	}
	return n
}

// batchIndex finds partition p's batch: a scan while a request touches a
// few partitions (the common case, no allocation), the map beyond that.
func batchIndex(batches []partitionBatch, slot map[int32]int, p int32) int {
	if slot != nil {
		if s, ok := slot[p]; ok {
			return s
		}
		return -1
	}
	for s := range batches {
		if batches[s].index == p {
			return s
		}
	}
	return -1
}

func indexBatches(slot map[int32]int, batches []partitionBatch) map[int32]int {
	if slot == nil {
		slot = make(map[int32]int, 2*len(batches))
	}
	for s := range batches {
		slot[batches[s].index] = s
	}
	return slot
}

// BatchProduce is one raw batch set from a Kafka client for one partition.
type BatchProduce struct {
	Topic     string
	Partition int32
	// Batches are record batches as the client sent them; Append rewrites
	// their base offsets in place.
	Batches []byte
	Sync    bool
	// Acks is the request's acks (AcksNone, AcksLeader, AcksAll).
	Acks int16
	// Timeout bounds produceBatch's wait for acks=all; 0 is
	// DefaultProduceTimeout. AppendBatch does not wait.
	Timeout time.Duration
	// TransactionalID is the produce request's transactional_id, for the
	// KIP-890 verification of a transactional batch.
	TransactionalID string
	// AddToTxn is KIP-890 part 2 (produce v12+, transaction.version 2):
	// a transactional batch opening its transaction here adds the
	// partition to it at the coordinator instead of only verifying.
	AddToTxn bool
}

// produceBatch appends a client's batches (AppendBatch) and waits for
// them to be acknowledged as req.Acks asks (WaitAcks).
func (b *Broker) produceBatch(ctx context.Context, req BatchProduce) (storage.AppendResult, error) {
	a, err := b.AppendBatch(ctx, req)
	if err != nil {
		return a.AppendResult, err
	}
	return a.AppendResult, b.WaitAcks(ctx, []Appended{a}, cmp.Or(req.Timeout, DefaultProduceTimeout))[0]
}

// AppendBatch validates a client's batches record by record (decompressing
// under a memory cap) and appends them, without waiting for acks=all;
// nothing is written if any is invalid.
func (b *Broker) AppendBatch(ctx context.Context, req BatchProduce) (Appended, error) {
	res, p, err := b.appendBatch(ctx, req)
	if err != nil {
		return Appended{AppendResult: res}, err
	}
	// A retried duplicate waits too, for the original's offsets: the
	// original may not be replicated yet.
	return Appended{AppendResult: res, partition: p, acks: req.Acks}, nil
}

func (b *Broker) appendBatch(ctx context.Context, req BatchProduce) (storage.AppendResult, *replication.Replica, error) {
	fail := func(err error) (storage.AppendResult, *replication.Replica, error) {
		return storage.AppendResult{}, nil, err
	}
	if err := RefuseInternalTopic(req.Topic, "produce to"); err != nil {
		return fail(err)
	}
	t, _, err := b.topicForProduce(req.Topic)
	if err != nil {
		return fail(err)
	}
	p, err := t.partition(req.Partition)
	if err != nil {
		return fail(err)
	}
	if err := checkReplicas(p, req.Acks); err != nil {
		return fail(err)
	}
	res, err := b.validateAndAppend(ctx, t, p, req)
	return res, p, err
}

// validateAndAppend applies every rule to a client's batches for p, then
// appends them (idempotent producers through their sequence rules).
func (b *Broker) validateAndAppend(ctx context.Context, t *topic, p *replication.Replica, req BatchProduce) (storage.AppendResult, error) {
	if len(req.Batches) > t.settings.maxMessageBytes {
		return storage.AppendResult{}, fmt.Errorf("%w: %d bytes; max.message.bytes is %d",
			ErrRecordTooLarge, len(req.Batches), t.settings.maxMessageBytes)
	}
	// Parsed, checked and decompressed once, for every check below.
	checked, err := checkClientBatches(req.Batches, b.cfg.MaxDecompressedBytes)
	if err != nil {
		return storage.AppendResult{}, err
	}
	defer checked.Release()
	if err := b.checkBatchValues(ctx, t, checked); err != nil {
		return storage.AppendResult{}, err
	}
	if err := b.checkBatchRecords(t, checked); err != nil {
		return storage.AppendResult{}, err
	}
	if req.Batches, err = b.recompress(t, checked, req.Batches); err != nil {
		return storage.AppendResult{}, err
	}
	// checkClientBatches checked every CRC; recompress computes its own.
	opts := storage.AppendOptions{Sync: req.Sync || t.settings.syncAppends, LogAppendTime: t.settings.logAppendTime, ChecksumVerified: true}
	if h, ok, err := producerBatch(checked); err != nil || ok {
		if err != nil {
			return storage.AppendResult{}, err
		}
		guard, err := b.verifyTxnBatch(ctx, p, h, req.TransactionalID, req.AddToTxn, cmp.Or(req.Timeout, DefaultProduceTimeout))
		if err != nil {
			return storage.AppendResult{}, err
		}
		res, err := p.AppendProducerBatch(h, req.Batches, opts, guard) // duplicate, sequence and transaction rules
		if err != nil && !isProducerRuleError(err) {
			err = appendError(req.Topic, req.Partition, err)
		}
		b.countIn(req.Topic, len(req.Batches), res, err)
		return res, err
	}
	res, err := p.Append(req.Batches, opts)
	if err != nil {
		return res, appendError(req.Topic, req.Partition, err)
	}
	b.countIn(req.Topic, len(req.Batches), res, nil)
	return res, nil
}

// checkClientBatches parses and checks a client's batches (records.CheckProduced)
// and maps a refusal to the core's errors.
func checkClientBatches(data []byte, maxDecompressed int) (*records.Produced, error) {
	checked, err := records.CheckProduced(data, maxDecompressed)
	switch {
	case err == nil:
		return checked, nil
	case errors.Is(err, records.ErrTooLarge):
		return nil, fmt.Errorf("%w: %v", ErrRecordTooLarge, err)
	case errors.Is(err, records.ErrCorrupt):
		return nil, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	return nil, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
}

// isProducerRuleError says whether err is a refusal by the idempotent
// producer rules, which reaches the client as it is.
func isProducerRuleError(err error) bool {
	return errors.Is(err, ErrOutOfOrderSequence) || errors.Is(err, ErrInvalidProducerEpoch) || errors.Is(err, ErrInvalidTxnState)
}

// appendError keeps storage's meaning but names the partition.
func appendError(topicName string, partition int32, err error) error {
	switch {
	case errors.Is(err, storage.ErrBatchTooLarge):
		return fmt.Errorf("%w: %s-%d: %v", ErrRecordTooLarge, topicName, partition, err)
	case errors.Is(err, storage.ErrCorrupt):
		return fmt.Errorf("%w: %s-%d: %v", ErrCorruptMessage, topicName, partition, err)
	case errors.Is(err, storage.ErrClosed):
		return fmt.Errorf("%w: %s-%d is closed", ErrShuttingDown, topicName, partition)
	case errors.Is(err, ErrNotLeader):
		return err // names the partition and its leader
	}
	return fmt.Errorf("%w: %s-%d: %v", ErrStorage, topicName, partition, err)
}

// checkRecord applies the per-record rules both listeners share: a
// compacted topic needs keys (Kafka refuses keyless records there with
// INVALID_RECORD whether or not compaction has run), and a CreateTime
// timestamp must lie within message.timestamp.before/after.max.ms of the
// broker's clock. As in Kafka's LogValidator, -1 (NO_TIMESTAMP) is always
// accepted and other negative timestamps are judged by the same bounds,
// which by default accept every value.
func (s *topicSettings) checkRecord(r *records.Record, now int64) error {
	if s.compact && r.Key == nil {
		return fmt.Errorf("%w: a compacted topic cannot accept a record without a key", ErrInvalidRecord)
	}
	ts := r.Timestamp
	if s.logAppendTime || ts == -1 {
		return nil
	}
	// Differences in uint64 cannot overflow, whatever the timestamp;
	// Long.MAX_VALUE means unbounded.
	tooOld := s.tsBeforeMs != math.MaxInt64 && ts < now && uint64(now)-uint64(ts) > uint64(s.tsBeforeMs)
	tooNew := s.tsAfterMs != math.MaxInt64 && ts > now && uint64(ts)-uint64(now) > uint64(s.tsAfterMs)
	if tooOld || tooNew {
		return fmt.Errorf("%w: timestamp %d is out of range: message.timestamp.before.max.ms %d, after.max.ms %d around %d",
			ErrInvalidTimestamp, ts, s.tsBeforeMs, s.tsAfterMs, now)
	}
	return nil
}

// checkBatchRecords applies checkRecord to every record of a client's
// batches, when the topic has a rule that needs it.
func (b *Broker) checkBatchRecords(t *topic, batches *records.Produced) error {
	if !t.settings.checkRecords() {
		return nil
	}
	now := time.Now().UnixMilli()
	var bad InvalidRecordsError
	index := int32(0)
	err := batches.Records(func(r records.Record) bool {
		if err := t.settings.checkRecord(&r, now); err != nil {
			if bad.first == nil {
				bad.first = err
			}
			bad.Records = append(bad.Records, RecordError{Index: index, Message: err.Error()})
		}
		index++
		return true
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	if bad.first != nil {
		bad.total = index
		return &bad
	}
	return nil
}

// RecordError names one refused record of a produced batch: its index in
// the batch (KIP-467's batch_index) and why.
type RecordError struct {
	Index   int32
	Message string
}

// InvalidRecordsError refuses a produced batch for some of its records,
// as Kafka's LogValidator does: the whole batch is refused (nothing is
// written) with the first record's error (INVALID_RECORD for a keyless
// record to a compacted topic, INVALID_TIMESTAMP for a timestamp out of
// bounds), and the bad records are named, so a Produce v8+ client fails
// exactly those with it and the rest of the batch with an error of its
// own (librdkafka's _INVALID_DIFFERENT_RECORD).
type InvalidRecordsError struct {
	Records []RecordError
	total   int32 // records in the batch
	first   error
}

func (e *InvalidRecordsError) Error() string {
	return fmt.Sprintf("%d of %d records refused, the first (record %d): %v", len(e.Records), e.total, e.Records[0].Index, e.first)
}

func (e *InvalidRecordsError) Unwrap() error { return e.first }

// recompress stores a client's batches with the topic's compression.type,
// keeping offsets and sequence numbers, and checks the result against
// max.message.bytes as Kafka does after recompression.
func (b *Broker) recompress(t *topic, checked *records.Produced, batches []byte) ([]byte, error) {
	if !t.settings.recompress {
		return batches, nil
	}
	out, err := checked.Recompress(nil, t.settings.codec, t.settings.level)
	if err != nil {
		return nil, fmt.Errorf("%w: recompress to %v: %v", ErrCorruptMessage, t.settings.codec, err)
	}
	if len(out) > t.settings.maxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes after recompression to %v; max.message.bytes is %d",
			ErrRecordTooLarge, len(out), t.settings.codec, t.settings.maxMessageBytes)
	}
	return out, nil
}
