package group

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
)

// OffsetsTopic is the internal topic holding committed offsets, in Kafka's
// own record formats: key version 1 (group, topic, partition), value
// version 3 (offset, leader epoch, metadata, commit timestamp), a null
// value (tombstone) for a deleted offset. Group metadata (key version 2) is
// not written: members rejoin after a restart.
const OffsetsTopic = "__consumer_offsets"

type topicPartition struct {
	topic     string
	partition int32
}

type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // ms
	// logOffset is where the commit's record sits in __consumer_offsets
	// (-1: unknown): a transactional commit decided by a later marker
	// replaces a plain commit only if it was written after it, as Kafka
	// orders them (txnoffsets.go).
	logOffset int64
}

// offsetsPartition is the partition of __consumer_offsets holding group's
// commits, as the topic is now.
func (c *Coordinator) offsetsPartition(group string) int32 {
	p, _ := c.offsets.Partition(group)
	return p
}

// OffsetsPartition is the partition of __consumer_offsets holding group's
// commits among n, as Kafka chooses it (ownership.JavaHashPartition).
func OffsetsPartition(group string, n int32) int32 { return ownership.JavaHashPartition(group, n) }

// applyOffsetRecord applies one __consumer_offsets record to table;
// records of other kinds (group metadata, unknown versions) are skipped.
func applyOffsetRecord(table map[string]map[topicPartition]offsetEntry, r records.Record) {
	var key kmsg.OffsetCommitKey
	if len(r.Key) < 2 || key.ReadFrom(r.Key) != nil || key.Version > 1 {
		return
	}
	tp := topicPartition{key.Topic, key.Partition}
	offs := table[key.Group]
	if offs == nil {
		offs = map[topicPartition]offsetEntry{}
		table[key.Group] = offs
	}
	if r.Value == nil {
		delete(offs, tp)
		return
	}
	var v kmsg.OffsetCommitValue
	if v.ReadFrom(r.Value) != nil {
		return
	}
	e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, logOffset: r.Offset}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	offs[tp] = e
}

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: tp.topic, Partition: tp.partition}
	return k.AppendTo(nil)
}

func offsetValue(e offsetEntry) []byte {
	v := kmsg.OffsetCommitValue{Version: 3, Offset: e.offset, LeaderEpoch: e.leaderEpoch,
		Metadata: e.metadata, CommitTimestamp: e.commitTime, ExpireTimestamp: -1}
	return v.AppendTo(nil)
}

// writeOffsets appends commits (nil entry: tombstone) to __consumer_offsets
// as one batch, acknowledged after fsync. Callers hold g.commitMu, not g.mu.
// The entries of set get the log offsets their records were written at.
func (c *Coordinator) writeOffsets(ctx context.Context, g *group, set map[topicPartition]offsetEntry, del []topicPartition) error {
	return c.appendOffsets(ctx, &server.ProduceRequest{Topic: OffsetsTopic, Sync: true, Internal: true}, g.name, set, del)
}

// appendOffsets appends set's commits and del's tombstones to name's
// partition with req as one batch, and records in set where each landed.
func (c *Coordinator) appendOffsets(ctx context.Context, req *server.ProduceRequest, name string, set map[topicPartition]offsetEntry, del []topicPartition) error {
	p := c.offsetsPartition(name)
	now := c.now().UnixMilli()
	tps := sortedTPs(set)
	for _, tp := range tps {
		req.Records = append(req.Records, server.ProduceRecord{Partition: p,
			Record: records.Record{Key: offsetKey(name, tp), Value: offsetValue(set[tp]), Timestamp: now}})
	}
	for _, tp := range del {
		req.Records = append(req.Records, server.ProduceRecord{Partition: p,
			Record: records.Record{Key: offsetKey(name, tp), Timestamp: now}})
	}
	if len(req.Records) == 0 {
		return nil
	}
	res, err := c.broker.Produce(ctx, req)
	if err != nil {
		return err
	}
	for i, tp := range tps {
		if i < len(res.Offsets) {
			e := set[tp]
			e.logOffset = res.Offsets[i].Offset
			set[tp] = e
		}
	}
	return nil
}

func sortedTPs[V any](m map[topicPartition]V) []topicPartition {
	tps := make([]topicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	return tps
}

// commitCode maps a failed __consumer_offsets write to the code Kafka
// gives a committer (GroupMetadataManager's mapping).
func commitCode(err error) int16 {
	switch {
	case errors.Is(err, server.ErrRecordTooLarge):
		return errInvalidCommitOffsetSize
	case errors.Is(err, server.ErrInvalidProducerEpoch):
		// A transactional commit of an epoch older than the producer's
		// on the partition: a fenced producer's.
		return errInvalidProducerEpoch
	case errors.Is(err, server.ErrNotLeader):
		// Leadership moved while the commit was written: the client finds
		// the new coordinator.
		return errNotCoordinator
	case errors.Is(err, server.ErrShuttingDown), errors.Is(err, server.ErrStorage), errors.Is(err, server.ErrUnknownTopic),
		errors.Is(err, server.ErrNotEnoughReplicas), errors.Is(err, server.ErrNotEnoughReplicasAfterAppend),
		errors.Is(err, server.ErrRequestTimedOut):
		return errCoordinatorNotAvailable
	}
	return errUnknownServer
}

// storeOffsets writes commits durably, then makes them visible: a plain
// commit (txn nil) as the group's offsets, a transaction's as pending
// until its producer's marker (txnoffsets.go). Callers hold g.commitMu,
// not g.mu.
func (c *Coordinator) storeOffsets(ctx context.Context, g *group, set map[topicPartition]offsetEntry, txn *server.ProduceTransaction) error {
	req := &server.ProduceRequest{Topic: OffsetsTopic, Sync: true, Internal: true, Transaction: txn}
	if err := c.appendOffsets(ctx, req, g.name, set, nil); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if txn != nil {
		g.holdTxnOffsets(txnKey{txn.ProducerID, txn.ProducerEpoch}, set)
		return nil
	}
	for tp, e := range set {
		g.offsets[tp] = e
	}
	return nil
}

// commitPartition is one partition of an OffsetCommit or a
// TxnOffsetCommit request.
type commitPartition struct {
	tp          topicPartition
	offset      int64
	leaderEpoch int32 // -1 when the request's version has none
	metadata    *string
}

// commit serves the partitions of a commit request to group name, plain
// or of the producer txn: gate (the request's check, when not errNone)
// refuses them all; else an unknown partition or metadata over
// offset.metadata.max.bytes refuses one, and the rest are written as one
// batch. It returns each partition's code.
func (c *Coordinator) commit(ctx context.Context, name string, gate int16, parts []commitPartition, txn *server.ProduceTransaction) map[topicPartition]int16 {
	set, codes := c.checkCommits(gate, parts)
	if len(set) == 0 {
		return codes
	}
	if err := c.commitOffsets(ctx, name, set, txn); err != nil {
		if txn != nil {
			c.logger.Warn("transactional offset commit failed", "group", name, "producer_id", txn.ProducerID, "err", err)
		} else {
			c.logger.Warn("offset commit failed", "group", name, "err", err)
		}
		for tp := range set {
			codes[tp] = commitCode(err)
		}
	}
	return codes
}

// checkCommits splits a commit's partitions into the entries to write and
// the codes of those refused.
func (c *Coordinator) checkCommits(gate int16, parts []commitPartition) (map[topicPartition]offsetEntry, map[topicPartition]int16) {
	codes := map[topicPartition]int16{}
	set := map[topicPartition]offsetEntry{}
	now := c.now().UnixMilli()
	counts := map[string]int32{}
	for _, p := range parts {
		count, ok := counts[p.tp.topic]
		if !ok {
			count = c.partitionCount(p.tp.topic)
			counts[p.tp.topic] = count
		}
		e := offsetEntry{offset: p.offset, leaderEpoch: p.leaderEpoch, commitTime: now, logOffset: -1}
		if p.metadata != nil {
			e.metadata = *p.metadata
		}
		switch {
		case gate != errNone:
			codes[p.tp] = gate
		case p.tp.partition < 0 || p.tp.partition >= count:
			codes[p.tp] = errUnknownTopicOrPartition
		case len(e.metadata) > c.cfg.OffsetMetadataMaxBytes:
			codes[p.tp] = errOffsetMetadataTooLarge
		default:
			set[p.tp] = e
		}
	}
	return set, codes
}

// commitOffsets stores set under the group's commitMu, the group counted
// as committing meanwhile so that it is neither removed nor expired.
func (c *Coordinator) commitOffsets(ctx context.Context, name string, set map[topicPartition]offsetEntry, txn *server.ProduceTransaction) error {
	g := c.lockGroup(name, true)
	g.committing++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.committing--
		g.mu.Unlock()
	}()
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	return c.storeOffsets(ctx, g, set, txn)
}

// commitCheck is Kafka's doCommitOffsets gate. Callers hold g.mu.
func (g *group) commitCheck(memberID, instanceID string, generation int32) int16 {
	switch {
	case g.state == stateDead:
		return errCoordinatorNotAvailable
	case instanceID != "" && g.statics[instanceID] != "" && g.statics[instanceID] != memberID:
		return errFencedInstanceID
	case generation < 0 && g.state == stateEmpty:
		return errNone // a commit from outside any generation (admin, simple consumer)
	case g.state == stateCompletingRebalance:
		return errRebalanceInProgress
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	if generation != g.generation {
		return errIllegalGeneration
	}
	return errNone
}

// HandleOffsetCommit serves OffsetCommit v2–v9 (v0–v1 too): v6+ leader
// epoch, v7+ instance id. The retention time of v2–v4 is ignored: offsets
// never expire (Kafka expires them offsets.retention.minutes after a group
// empties). A commit is acknowledged after fsync of __consumer_offsets.
func (c *Coordinator) HandleOffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var parts []commitPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			cp := commitPartition{tp: topicPartition{t.Topic, p.Partition}, offset: p.Offset, leaderEpoch: -1, metadata: p.Metadata}
			if req.Version >= 6 {
				cp.leaderEpoch = p.LeaderEpoch
			}
			parts = append(parts, cp)
		}
	}
	codes := c.commit(ctx, req.Group, c.offsetCommitGate(req), parts, nil)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[topicPartition{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) offsetCommitGate(req *kmsg.OffsetCommitRequest) int16 {
	if code := c.serves(req.Group); code != errNone {
		return code
	}
	if req.Group == "" {
		return errInvalidGroupID
	}
	generation := req.Generation
	if req.Version == 0 {
		generation = -1
	}
	var instanceID string
	if req.Version >= 7 && req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	g := c.lockGroup(req.Group, true)
	defer g.mu.Unlock()
	return g.commitCheck(req.MemberID, instanceID, generation)
}

// HandleOffsetFetch serves OffsetFetch v1–v8 (v0 too): v2+ null topics
// means every committed partition, v5+ leader epochs, v8 several groups.
// RequireStable (v7+, KIP-447) answers UNSTABLE_OFFSET_COMMIT for a
// partition whose transactional commit awaits its marker (the client
// retries).
func (c *Coordinator) HandleOffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			out := kmsg.NewOffsetFetchResponseGroup()
			out.Group = rg.Group
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			code, answer := c.fetchOffsets(rg.Group, topics, req.RequireStable)
			out.ErrorCode = code
			for _, t := range answer {
				ot := kmsg.NewOffsetFetchResponseGroupTopic()
				ot.Topic = t.Topic
				for _, p := range t.Partitions {
					op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode =
						p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					ot.Partitions = append(ot.Partitions, op)
				}
				out.Topics = append(out.Topics, ot)
			}
			resp.Groups = append(resp.Groups, out)
		}
		return resp
	}
	topics := req.Topics
	if req.Version < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	code, answer := c.fetchOffsets(req.Group, topics, req.Version >= 7 && req.RequireStable)
	resp.Topics = answer
	if req.Version >= 2 {
		resp.ErrorCode = code
	} else if code != errNone {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return resp
}

// fetchOffsets answers one group; nil topics means all committed.
func (c *Coordinator) fetchOffsets(name string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) (int16, []kmsg.OffsetFetchResponseTopic) {
	if code := c.serves(name); code != errNone {
		return code, nil
	}
	if name == "" {
		return errInvalidGroupID, nil
	}
	committed := c.Committed(name)
	var unstable map[topicPartition]bool
	if requireStable {
		unstable = c.unstableOffsets(name)
	}
	if topics == nil {
		byTopic := map[string][]int32{}
		for _, tp := range sortedTPs(committed) {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		for _, name := range sortedKeys(byTopic) {
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: byTopic[name]})
		}
	}
	var out []kmsg.OffsetFetchResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			if unstable[topicPartition{t.Topic, p}] {
				rp.ErrorCode = errUnstableOffsetCommit
			} else if e, ok := committed[topicPartition{t.Topic, p}]; ok {
				md := e.metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = e.offset, e.leaderEpoch, &md
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return errNone, out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Committed returns a copy of a group's committed offsets.
func (c *Coordinator) Committed(name string) map[topicPartition]offsetEntry {
	g := c.lockGroup(name, false)
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	out := make(map[topicPartition]offsetEntry, len(g.offsets))
	for tp, e := range g.offsets {
		out[tp] = e
	}
	return out
}

// HandleDeleteGroups serves DeleteGroups v0–v2: only a group without
// members may be deleted (NON_EMPTY_GROUP otherwise); its offsets are
// tombstoned in __consumer_offsets.
func (c *Coordinator) HandleDeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = name
		rg.ErrorCode = c.deleteGroup(ctx, name)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// DeleteGroup deletes an empty group and its committed offsets.
func (c *Coordinator) deleteGroup(ctx context.Context, name string) int16 {
	switch code := c.serves(name); {
	case code != errNone:
		return code
	case name == "":
		return errInvalidGroupID
	}
	g := c.lockGroup(name, false)
	if g == nil {
		return errGroupIDNotFound
	}
	g.mu.Unlock()
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	if len(g.members) > 0 || len(g.pending) > 0 {
		g.mu.Unlock()
		return errNonEmptyGroup
	}
	del := sortedTPs(g.offsets)
	g.mu.Unlock()
	if err := c.writeOffsets(ctx, g, nil, del); err != nil {
		return commitCode(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, tp := range del {
		delete(g.offsets, tp)
	}
	if len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 {
		c.removeLocked(g)
	}
	return errNone
}

// HandleOffsetDelete serves OffsetDelete v0: deletes committed offsets of
// topics the group is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC
// otherwise; for a non-consumer group with members, NON_EMPTY_GROUP).
func (c *Coordinator) HandleOffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if code := c.serves(req.Group); code != errNone {
		resp.ErrorCode = code
		return resp
	}
	g := c.lockGroup(req.Group, false)
	if req.Group == "" || g == nil {
		if g != nil {
			g.mu.Unlock()
		}
		resp.ErrorCode = errGroupIDNotFound
		if req.Group == "" {
			resp.ErrorCode = errInvalidGroupID
		}
		return resp
	}
	subscribed, nonConsumer := g.subscribedTopics()
	g.mu.Unlock()
	if nonConsumer {
		resp.ErrorCode = errNonEmptyGroup
		return resp
	}
	codes := map[topicPartition]int16{}
	var del []topicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			if _, ok := subscribed[t.Topic]; ok {
				codes[tp] = errGroupSubscribedToTopic
				continue
			}
			del = append(del, tp)
		}
	}
	if len(del) > 0 {
		g.commitMu.Lock()
		err := c.writeOffsets(ctx, g, nil, del)
		if err == nil {
			g.mu.Lock()
			for _, tp := range del {
				delete(g.offsets, tp)
			}
			g.mu.Unlock()
		}
		g.commitMu.Unlock()
		if err != nil {
			resp.ErrorCode = commitCode(err)
			return resp
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[topicPartition{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// subscribedTopics parses the members' consumer-protocol subscriptions.
// nonConsumer is set when the group has members of another protocol type,
// whose subscriptions cannot be known. Callers hold g.mu.
func (g *group) subscribedTopics() (topics map[string]struct{}, nonConsumer bool) {
	topics = map[string]struct{}{}
	for _, m := range g.members {
		if m.ptype != "consumer" {
			return nil, true
		}
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(m.metadataFor(g.protocol)) != nil {
			if len(m.protocols) > 0 && meta.ReadFrom(m.protocols[0].metadata) != nil {
				continue
			}
		}
		for _, t := range meta.Topics {
			topics[t] = struct{}{}
		}
	}
	return topics, false
}
