package group

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Transactional offset commits (KIP-98): TxnOffsetCommit writes a
// producer's commits to the group's __consumer_offsets partition as a
// transactional batch of that producer (Kafka's own format: offset commit
// records, the producer's id and epoch, no sequence), then holds them as
// pending under the producer's id and epoch (txnKey). The transaction
// coordinator's marker on that partition decides them: the broker tells
// TxnMarkerWritten, and a commit makes them the group's committed
// offsets, an abort drops them. A marker that says the epoch of the data
// it ends (transaction.version 2) decides that epoch's commits only: the
// producer's next transaction, one epoch up, may have committed offsets
// here before this marker was told (a resend of a marker whose first
// acks wait failed), and is not this marker's to decide. A marker that
// does not say it decides all the producer's (nothing runs ahead of it).
// A coordinator loading the partition replays the same rule from the
// log: the records of a transactional batch wait for their producer's
// next control batch, which the partition appends before any batch of
// the next transaction (replication.Replica.AwaitTxnOrder).

var (
	errUnstableOffsetCommit = kerr.UnstableOffsetCommit.Code
	errInvalidProducerEpoch = kerr.InvalidProducerEpoch.Code
)

var _ server.TxnMarkerListener = (*Coordinator)(nil)

// verifierBox holds the transaction verifier (an interface in an atomic
// pointer).
type verifierBox struct{ v server.TxnVerifier }

// SetTxnVerifier makes TxnOffsetCommit check, before writing, that the
// group's __consumer_offsets partition is in the producer's ongoing
// transaction at its current epoch (KIP-890 part 1, as Kafka's group
// coordinator does): a fenced zombie's commit is refused instead of
// waiting for a later marker of the same producer id. nil: no check.
func (c *Coordinator) SetTxnVerifier(v server.TxnVerifier) {
	if v == nil {
		c.txnVerifier.Store(nil)
		return
	}
	c.txnVerifier.Store(&verifierBox{v})
}

// verifyTxnCommit asks the transaction coordinator about the commit's
// producer; coordinator lookup errors of the transaction side become
// COORDINATOR_NOT_AVAILABLE, which the client retries. The question ends
// when this broker stops leading the group's offsets partition
// (Broker.AskTxnCoordinator), answered NOT_COORDINATOR so that the client
// finds the new coordinator before its transaction times out.
func (c *Coordinator) verifyTxnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	box := c.txnVerifier.Load()
	if box == nil {
		return errNone
	}
	_, isAdder := box.v.(server.TxnPartitionAdder)
	add := isAdder && req.Version >= 5 // KIP-890 part 2: the client sent no AddOffsetsToTxn
	code, err := c.broker.AskTxnCoordinator(ctx, box.v, OffsetsTopic, c.offsetsPartition(req.Group),
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, add)
	if err != nil {
		return errNotCoordinator // this broker no longer coordinates the group
	}
	switch code {
	case errNotCoordinator, errCoordinatorLoadInProgress:
		return errCoordinatorNotAvailable
	}
	return code
}

// HandleTxnOffsetCommit serves TxnOffsetCommit v0–v5 (v5 adds the
// group's partition to the transaction, KIP-890 part 2): v2+ leader epochs,
// v3+ the member's generation, id and instance id (KIP-447), checked only
// when given. The commits are answered once durable (fsync, acks=all) and
// stay pending until the producer's transaction ends.
func (c *Coordinator) HandleTxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	gate := c.txnCommitGate(req)
	if gate == errNone {
		gate = c.verifyTxnCommit(ctx, req)
	}
	var parts []commitPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			cp := commitPartition{tp: topicPartition{t.Topic, p.Partition}, offset: p.Offset, leaderEpoch: -1, metadata: p.Metadata}
			if req.Version >= 2 {
				cp.leaderEpoch = p.LeaderEpoch
			}
			parts = append(parts, cp)
		}
	}
	txn := &server.ProduceTransaction{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}
	codes := c.commit(ctx, req.Group, gate, parts, txn)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[topicPartition{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnCommitGate is Kafka's check of a transactional commit: the
// coordinator serves the group, and a v3+ commit naming a member or a
// generation is from the group's current generation.
func (c *Coordinator) txnCommitGate(req *kmsg.TxnOffsetCommitRequest) int16 {
	if code := c.serves(req.Group); code != errNone {
		return code
	}
	if req.Group == "" {
		return errInvalidGroupID
	}
	if req.ProducerID < 0 || req.ProducerEpoch < 0 {
		return errInvalidProducerEpoch
	}
	var instanceID string
	if req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	if req.Version < 3 || (req.Generation < 0 && req.MemberID == "" && instanceID == "") {
		return errNone
	}
	g := c.lockGroup(req.Group, true)
	defer g.mu.Unlock()
	return g.commitCheck(req.MemberID, instanceID, req.Generation)
}

// txnKey names a producer's transaction by what its commits carry: the
// producer id and epoch of the TxnOffsetCommit, or of the transactional
// batch in the log. At transaction.version 2 each transaction has its
// own epoch, so the key tells one from the producer's next; at version
// 1 one epoch spans its transactions, which never overlap.
type txnKey struct {
	producerID int64
	epoch      int16
}

// holdTxnOffsets holds a transaction's written commits pending until its
// marker. Callers hold g.mu.
func (g *group) holdTxnOffsets(k txnKey, set map[topicPartition]offsetEntry) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[txnKey]map[topicPartition]offsetEntry{}
	}
	pending := g.txnOffsets[k]
	if pending == nil {
		pending = map[topicPartition]offsetEntry{}
		g.txnOffsets[k] = pending
	}
	for tp, e := range set {
		pending[tp] = e
	}
}

// TxnMarkerWritten implements server.TxnMarkerListener: a marker on a
// __consumer_offsets partition decides, in every group of that
// partition, the pending commits of the transaction it ends.
func (c *Coordinator) TxnMarkerWritten(topic string, partition int32, producerID int64, dataEpoch int16, dataEpochKnown, commit bool, _ int64) {
	if topic != OffsetsTopic {
		return
	}
	c.markersVsInstall.RLock()
	defer c.markersVsInstall.RUnlock()
	for _, g := range c.groupsOfPartition(partition) {
		g.mu.Lock()
		g.decideTxnOffsets(producerID, dataEpoch, dataEpochKnown, commit)
		g.mu.Unlock()
	}
}

// decideTxnOffsets applies a marker of producerID: the commits pending at
// dataEpoch when it is known, else all the producer's. A marker told
// again finds nothing left. Callers hold g.mu.
func (g *group) decideTxnOffsets(producerID int64, dataEpoch int16, dataEpochKnown, commit bool) {
	for k, pending := range g.txnOffsets {
		if k.producerID != producerID || dataEpochKnown && k.epoch != dataEpoch {
			continue
		}
		if commit {
			// materialize orders by log offset, so the map's order does
			// not matter when an unknown epoch decides several.
			for tp, e := range pending {
				materialize(g.offsets, tp, e)
			}
		}
		delete(g.txnOffsets, k)
	}
}

// materialize makes a committed transaction's commit of tp the offset,
// unless a plain commit was written after it in the log (Kafka's rule:
// the later record wins, whenever the marker lands).
func materialize(offsets map[topicPartition]offsetEntry, tp topicPartition, e offsetEntry) {
	if cur, ok := offsets[tp]; ok && e.logOffset >= 0 && cur.logOffset > e.logOffset {
		return
	}
	offsets[tp] = e
}

// unstableOffsets are the group's partitions whose transactional commit
// awaits its marker (OffsetFetch's require_stable).
func (c *Coordinator) unstableOffsets(name string) map[topicPartition]bool {
	g := c.lockGroup(name, false)
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	out := map[topicPartition]bool{}
	for _, pending := range g.txnOffsets {
		for tp := range pending {
			out[tp] = true
		}
	}
	return out
}

// PendingTxnOffsets reports, per producer id, how many transactional
// commits of group await their marker (summed over the producer's
// epochs).
func (c *Coordinator) PendingTxnOffsets(name string) map[int64]int {
	g := c.lockGroup(name, false)
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	out := map[int64]int{}
	for k, pending := range g.txnOffsets {
		out[k.producerID] += len(pending)
	}
	return out
}

// loadedTxn is what a partition's replay leaves pending: per group, per
// transaction (producer id and epoch), the commits written in a
// transaction not yet ended.
type loadedTxn map[string]map[txnKey]map[topicPartition]offsetEntry

// txnReplay follows a __consumer_offsets log's transactional batches in
// order: their records wait, under their batch's producer id and epoch,
// until the producer's control batch.
type txnReplay struct {
	open map[txnKey][]records.Record // copies
}

// batch handles one batch of the log: false when it is a plain batch the
// caller applies itself.
func (r *txnReplay) batch(h recordbatch.Header, batch []byte, from int64, maxDecompressed int,
	table map[string]map[topicPartition]offsetEntry) (bool, error) {
	switch {
	case h.IsControl():
		commit, ok := controlCommit(batch)
		if ok {
			r.end(h.ProducerID, commit, table)
		}
		return true, nil
	case h.Attributes&recordbatch.AttrTransactional != 0 && h.ProducerID >= 0:
		k := txnKey{h.ProducerID, h.ProducerEpoch}
		err := records.Decode(batch, from, maxDecompressed, func(rec records.Record) bool {
			rec.Key, rec.Value, rec.Headers = cloneBytes(rec.Key), cloneBytes(rec.Value), nil
			if r.open == nil {
				r.open = map[txnKey][]records.Record{}
			}
			r.open[k] = append(r.open[k], rec)
			return true
		})
		return true, err
	}
	return false, nil
}

// end applies a control batch of producerID to what the producer has
// open: in the log a marker ends every batch of its producer before it,
// whatever their epoch, as the partition's read_committed readers see
// it (its leader appends the next transaction's data only after the
// marker), so the replay needs no data epoch.
func (r *txnReplay) end(producerID int64, commit bool, table map[string]map[topicPartition]offsetEntry) {
	var recs []records.Record
	for k, open := range r.open {
		if k.producerID == producerID {
			recs = append(recs, open...)
			delete(r.open, k)
		}
	}
	if !commit {
		return
	}
	slices.SortStableFunc(recs, func(a, b records.Record) int { return cmp.Compare(a.Offset, b.Offset) })
	decided := map[string]map[topicPartition]offsetEntry{}
	for _, rec := range recs {
		applyOffsetRecord(decided, rec)
	}
	for name, offs := range decided {
		if table[name] == nil {
			table[name] = map[topicPartition]offsetEntry{}
		}
		for tp, e := range offs {
			materialize(table[name], tp, e)
		}
	}
}

// pending is what the replay leaves undecided, by group and transaction.
func (r *txnReplay) pending() loadedTxn {
	out := loadedTxn{}
	for k, recs := range r.open {
		table := map[string]map[topicPartition]offsetEntry{}
		for _, rec := range recs {
			applyOffsetRecord(table, rec)
		}
		for name, offs := range table {
			if len(offs) == 0 {
				continue
			}
			if out[name] == nil {
				out[name] = map[txnKey]map[topicPartition]offsetEntry{}
			}
			out[name][k] = offs
		}
	}
	return out
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// controlCommit reads a control batch's first record key (Kafka's
// EndTxnMarker key: version int16, type int16, 0 abort and 1 commit).
// Control batches are never compressed. ok is false for anything else.
func controlCommit(batch []byte) (commit, ok bool) {
	if len(batch) <= recordbatch.HeaderSize {
		return false, false
	}
	if h := recordbatch.ReadHeader(batch); !h.IsControl() || h.Codec() != 0 {
		return false, false
	}
	rec := batch[recordbatch.HeaderSize:]
	for _, skip := range []int{0, -1, 0, 0} { // length, attributes (1 byte), timestamp delta, offset delta
		if skip < 0 {
			if len(rec) < 1 {
				return false, false
			}
			rec = rec[1:]
			continue
		}
		_, n := binary.Varint(rec)
		if n <= 0 {
			return false, false
		}
		rec = rec[n:]
	}
	keyLen, n := binary.Varint(rec)
	if n <= 0 || keyLen < 4 || int64(len(rec)-n) < keyLen {
		return false, false
	}
	key := rec[n : n+int(keyLen)]
	switch binary.BigEndian.Uint16(key[2:4]) {
	case 0:
		return false, true
	case 1:
		return true, true
	}
	return false, false
}

// installTxn makes the loaded pending commits the groups', and counts
// their transactions. Callers hold own.
func (c *Coordinator) installTxn(pending loadedTxn) int {
	n := 0
	for name, byTxn := range pending {
		g := c.lockGroup(name, true)
		g.txnOffsets = byTxn
		g.mu.Unlock()
		n += len(byTxn)
	}
	return n
}
