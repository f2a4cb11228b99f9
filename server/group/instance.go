package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Consumer instances: the REST Proxy v2 consumers and the SSE streams of the
// HTTP gateway. Their state — subscription, assignment, positions, format —
// lives here in the coordinator, not in the HTTP handler, so any node that
// shares the coordinator can serve an instance's next request. Each
// instance with a subscription is a group member like a Kafka client: the
// coordinator joins and syncs it in place (no network round trip) whenever
// the group rebalances, and computes the assignment when it is the leader,
// so HTTP and Kafka members of one group share its partitions. An instance
// is alive while it is used; ConsumerIdleTimeout without a request removes
// it (committing first when auto commit is on).

// Errors of the consumer instance API; api maps them to REST Proxy codes.
var (
	ErrConsumerNotFound     = errors.New("consumer instance not found")
	ErrConsumerExists       = errors.New("consumer instance already exists")
	ErrNotSubscribed        = errors.New("consumer instance has no subscription")
	ErrInvalidConsumer      = errors.New("invalid consumer config")
	ErrInconsistentProtocol = errors.New("the group's members use an incompatible protocol")
	ErrCommitRejected       = errors.New("offset commit rejected")
	ErrNoOffsetReset        = errors.New("no committed offset and auto.offset.reset is none")
	// ErrClosed: the coordinator is shutting down.
	ErrClosed = errClosed
)

type instanceKey struct{ group, id string }

// instance is one coordinator-driven consumer. The first fields are set
// at creation and never change; the others are guarded by the group's mu;
// pollMu serialises the polls of one instance (two concurrent GETs must
// not hand out the same records).
type instance struct {
	group, id  string
	format     string
	reset      string // earliest, latest or none
	autoCommit bool
	// readCommitted: reads skip aborted transactions and stop at the LSO.
	readCommitted bool

	pollMu   sync.Mutex
	lastUsed atomic.Int64 // unix ns
	gone     atomic.Bool

	// guarded by the group's mu
	topics    []string
	member    *member
	owned     map[string][]int32
	positions map[topicPartition]int64
	next      int // round robin start over assigned partitions
}

// ConsumerOptions configure a new instance (REST Proxy's create body).
type ConsumerOptions struct {
	// Name is the instance id; empty generates one.
	Name string
	// Format is what records are rendered as: json, binary, avro,
	// jsonschema or protobuf (api checks which). Default binary, as REST Proxy.
	Format string
	// AutoOffsetReset is earliest, latest (default) or none.
	AutoOffsetReset string
	// AutoCommit commits the positions a poll returned at the next poll
	// and when the instance is deleted or expires.
	AutoCommit bool
	// Isolation is read_uncommitted (default, "") or read_committed:
	// records of aborted transactions skipped, none at or above the last
	// stable offset.
	Isolation string
}

// ConsumerInfo describes an instance.
type ConsumerInfo struct {
	Group           string            `json:"group"`
	ID              string            `json:"instance_id"`
	Format          string            `json:"format"`
	AutoOffsetReset string            `json:"auto_offset_reset"`
	AutoCommit      bool              `json:"auto_commit"`
	Topics          []string          `json:"topics"`
	MemberID        string            `json:"member_id,omitempty"`
	Assignment      []TopicPartitions `json:"assignment"`
}

// CreateConsumer registers a new consumer instance in a group.
func (c *Coordinator) CreateConsumer(groupName string, o ConsumerOptions) (ConsumerInfo, error) {
	if groupName == "" {
		return ConsumerInfo{}, fmt.Errorf("%w: the group name is empty", ErrInvalidConsumer)
	}
	if o.Format == "" {
		o.Format = "binary"
	}
	switch o.AutoOffsetReset {
	case "":
		o.AutoOffsetReset = "latest"
	case "smallest":
		o.AutoOffsetReset = "earliest"
	case "largest":
		o.AutoOffsetReset = "latest"
	case "earliest", "latest", "none":
	default:
		return ConsumerInfo{}, fmt.Errorf("%w: auto.offset.reset %q: want earliest, latest or none", ErrInvalidConsumer, o.AutoOffsetReset)
	}
	switch o.Isolation {
	case "", "read_uncommitted", "read_committed":
	default:
		return ConsumerInfo{}, fmt.Errorf("%w: isolation.level %q: want read_committed or read_uncommitted", ErrInvalidConsumer, o.Isolation)
	}
	if err := c.servesErr(groupName); err != nil {
		return ConsumerInfo{}, err
	}
	if o.Name == "" {
		o.Name = newMemberID("rest-consumer")
	}
	inst := &instance{group: groupName, id: o.Name, format: o.Format, reset: o.AutoOffsetReset,
		autoCommit: o.AutoCommit, readCommitted: o.Isolation == "read_committed", positions: map[topicPartition]int64{}}
	inst.lastUsed.Store(c.now().UnixNano())
	key := instanceKey{groupName, o.Name}
	c.mu.Lock()
	_, exists := c.mu.instances[key]
	c.mu.Unlock()
	if exists {
		return ConsumerInfo{}, fmt.Errorf("%w: %q in group %q", ErrConsumerExists, o.Name, groupName)
	}
	if err := c.persistInstance(context.Background(), inst, nil, false); err != nil {
		return ConsumerInfo{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.instances[key]; ok {
		return ConsumerInfo{}, fmt.Errorf("%w: %q in group %q", ErrConsumerExists, o.Name, groupName)
	}
	c.mu.instances[key] = inst
	return ConsumerInfo{Group: groupName, ID: o.Name, Format: o.Format, AutoOffsetReset: o.AutoOffsetReset,
		AutoCommit: o.AutoCommit, Topics: []string{}, Assignment: []TopicPartitions{}}, nil
}

// instance finds an instance and marks it used.
func (c *Coordinator) instance(groupName, id string) (*instance, error) {
	c.mu.Lock()
	inst, ok := c.mu.instances[instanceKey{groupName, id}]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q in group %q", ErrConsumerNotFound, id, groupName)
	}
	inst.lastUsed.Store(c.now().UnixNano())
	return inst, nil
}

// Consumer describes an instance.
func (c *Coordinator) Consumer(groupName, id string) (ConsumerInfo, error) {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return ConsumerInfo{}, err
	}
	g := c.lockGroup(groupName, true)
	defer g.mu.Unlock()
	info := ConsumerInfo{Group: groupName, ID: id, Format: inst.format, AutoOffsetReset: inst.reset,
		AutoCommit: inst.autoCommit, Topics: append([]string{}, inst.topics...), Assignment: []TopicPartitions{}}
	if inst.member != nil {
		info.MemberID = inst.member.id
		if g.state == stateStable {
			for _, t := range sortedKeys(inst.owned) {
				info.Assignment = append(info.Assignment, TopicPartitions{Topic: t, Partitions: inst.owned[t]})
			}
		}
	}
	return info, nil
}

// balancers are the assignors the coordinator's consumers offer, in order
// of preference; every common Kafka client supports one of them (franz-go
// cooperative-sticky, librdkafka and sarama range, Java range and
// cooperative-sticky).
var balancers = []kgo.GroupBalancer{
	kgo.RangeBalancer(), kgo.RoundRobinBalancer(), kgo.CooperativeStickyBalancer(), kgo.StickyBalancer(),
}

func balancerFor(name string) kgo.GroupBalancer {
	for _, b := range balancers {
		if b.ProtocolName() == name {
			return b
		}
	}
	return nil
}

// protocols is what the instance joins with. Callers hold the group's mu.
func (inst *instance) protocols(generation int32) []protocol {
	ps := make([]protocol, 0, len(balancers))
	for _, b := range balancers {
		ps = append(ps, protocol{name: b.ProtocolName(), metadata: b.JoinGroupMetadata(inst.topics, inst.owned, generation)})
	}
	return ps
}

// Subscribe sets an instance's topics; it joins the group (or rejoins with
// the new subscription), which rebalances.
func (c *Coordinator) Subscribe(groupName, id string, topics []string) error {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return fmt.Errorf("%w: the subscription names no topic", ErrInvalidConsumer)
	}
	if err := c.servesErr(groupName); err != nil {
		return err
	}
	topics = append([]string(nil), topics...)
	sort.Strings(topics)
	if err := c.joinInstance(inst, topics); err != nil {
		return err
	}
	return c.persistInstance(context.Background(), inst, topics, false)
}

// joinInstance sets an instance's topics and joins it to its group (or rejoins it
// with the new subscription), which rebalances.
func (c *Coordinator) joinInstance(inst *instance, topics []string) error {
	groupName, id := inst.group, inst.id
	now := c.now()
	g := c.lockGroup(groupName, true)
	defer g.mu.Unlock()
	if inst.gone.Load() {
		return fmt.Errorf("%w: %q in group %q", ErrConsumerNotFound, id, groupName)
	}
	old := inst.topics
	inst.topics = topics
	ps := inst.protocols(g.generation)
	if !g.supportsProtocols("consumer", ps, memberIDOf(inst)) {
		inst.topics = old
		return fmt.Errorf("%w: group %q", ErrInconsistentProtocol, groupName)
	}
	if m := inst.member; m != nil {
		m.protocols = ps
		m.joined = true
		if g.state != statePreparingRebalance {
			g.prepareRebalance(now)
		} else {
			g.tryCompleteJoin(now)
		}
		return nil
	}
	g.joinSeq++
	m := &member{id: newMemberID("rest-" + id), clientID: "ferry-rest-" + id, clientHost: "ferry",
		sessionTimeout: c.cfg.ConsumerIdleTimeout, rebalanceTimeout: instanceRebalanceTimeout, protocols: ps, ptype: "consumer", joinSeq: g.joinSeq,
		lastSeen: now, inst: inst, joined: true}
	g.members[m.id] = m
	inst.member = m
	if g.state != statePreparingRebalance {
		g.prepareRebalance(now)
	} else {
		g.tryCompleteJoin(now)
	}
	return nil
}

// instanceRebalanceTimeout is the rebalance timeout a coordinator-driven
// member joins with: how long a join phase it starts waits for Kafka
// members to rejoin (it rejoins itself at once).
const instanceRebalanceTimeout = time.Minute

func memberIDOf(inst *instance) string {
	if inst.member == nil {
		return ""
	}
	return inst.member.id
}

// Unsubscribe leaves the group; the instance stays, without topics.
func (c *Coordinator) Unsubscribe(ctx context.Context, groupName, id string) error {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return err
	}
	if inst.autoCommit {
		c.commitInstance(ctx, inst, nil)
	}
	g := c.lockGroup(groupName, true)
	inst.topics = nil
	if m := inst.member; m != nil {
		g.removeMember(c.now(), m)
	}
	inst.owned, inst.positions = nil, map[topicPartition]int64{}
	g.mu.Unlock()
	return c.persistInstance(ctx, inst, nil, false)
}

// rejoinInstance joins a coordinator-driven member in a new join phase at
// once, with its current assignment as owned partitions (for cooperative
// protocols). Callers hold mu.
func (g *group) rejoinInstance(m *member) {
	m.joined = true
	m.protocols = m.inst.protocols(g.generation)
}

// assignForInstance runs the selected assignor when a coordinator-driven
// member leads, and syncs the group with the result. Callers hold mu.
func (g *group) assignForInstance(now time.Time, leader *member) {
	assignments := map[string][]byte{}
	if b := balancerFor(g.protocol); b != nil {
		var members []kmsg.JoinGroupResponseMember
		for _, jm := range g.memberList() {
			m := kmsg.NewJoinGroupResponseMember()
			m.MemberID, m.ProtocolMetadata = jm.id, jm.metadata
			if jm.instanceID != "" {
				id := jm.instanceID
				m.InstanceID = &id
			}
			members = append(members, m)
		}
		mb, topics, err := b.MemberBalancer(members)
		if err == nil {
			counts := map[string]int32{}
			for t := range topics {
				if n := g.env.partitionCount(t); n > 0 {
					counts[t] = n
				}
			}
			var into kgo.IntoSyncAssignment
			if mbe, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
				into, err = mbe.BalanceOrError(counts)
			} else {
				into = mb.Balance(counts)
			}
			if err == nil && into != nil {
				for _, a := range into.IntoSyncAssignment() {
					assignments[a.MemberID] = a.MemberAssignment
				}
			}
		}
	}
	leader.synced = true
	g.applyAssignment(now, assignments)
}

// instanceAssigned takes a coordinator-driven member's new assignment; it
// reports whether a cooperative protocol revoked partitions it owned (the
// member must then rejoin). Callers hold mu.
func (g *group) instanceAssigned(m *member) bool {
	inst := m.inst
	var a kmsg.ConsumerMemberAssignment
	owned := map[string][]int32{}
	if len(m.assignment) > 0 && a.ReadFrom(m.assignment) == nil {
		for _, t := range a.Topics {
			ps := append([]int32(nil), t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			owned[t.Topic] = ps
		}
	}
	now := map[topicPartition]bool{}
	for t, ps := range owned {
		for _, p := range ps {
			now[topicPartition{t, p}] = true
		}
	}
	revoked := false
	for t, ps := range inst.owned {
		for _, p := range ps {
			if !now[topicPartition{t, p}] {
				revoked = true
			}
		}
	}
	for tp := range inst.positions {
		if !now[tp] {
			delete(inst.positions, tp)
		}
	}
	inst.owned = owned
	b := balancerFor(g.protocol)
	return revoked && b != nil && b.IsCooperative()
}

// PollOptions bound one poll.
type PollOptions struct {
	MaxBytes   int
	MaxRecords int
	Wait       time.Duration
}

// ConsumedRecord is a record with where it came from. Its byte slices are
// the caller's.
type ConsumedRecord struct {
	Topic     string
	Partition int32
	records.Record
}

// assigned is a snapshot of one partition to read and its position (-1:
// not yet known).
type assigned struct {
	tp  topicPartition
	pos int64
}

// Poll returns records from the instance's assigned partitions, from its
// positions on, waiting up to o.Wait for a rebalance to finish or records to
// arrive, and advances the positions. With auto commit, the positions the
// previous poll returned are committed first.
func (c *Coordinator) Poll(ctx context.Context, groupName, id string, o PollOptions) ([]ConsumedRecord, error) {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return nil, err
	}
	inst.pollMu.Lock()
	defer inst.pollMu.Unlock()
	if c.closed() {
		return nil, errClosed
	}
	if inst.autoCommit {
		if err := c.commitInstance(ctx, inst, nil); err != nil {
			c.logger.Warn("auto commit failed", "group", groupName, "instance", id, "err", err)
		}
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = 10000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	deadline := time.Now().Add(o.Wait)
	for {
		parts, gen, changed, err := c.pollSnapshot(inst)
		if errors.Is(err, errRejoin) {
			// Dropped by a rebalance it could not answer (for instance a
			// leader that never synced): join again.
			topics := c.instanceTopics(inst)
			if err := c.Subscribe(inst.group, inst.id, topics); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		var waits []delayed.Wait
		readsElsewhere := false
		if len(parts) > 0 {
			recs, positions, w, remote, err := c.readAssigned(ctx, inst, parts, o)
			if err != nil {
				return nil, err
			}
			c.advance(inst, gen, positions)
			if len(recs) > 0 {
				return recs, nil
			}
			waits, readsElsewhere = w, remote
		}
		wait := time.Until(deadline)
		if readsElsewhere {
			// No wait point here wakes it for another broker's partition.
			wait = min(wait, remotePollInterval)
		}
		if wait <= 0 || ctx.Err() != nil || c.closed() {
			return []ConsumedRecord{}, nil
		}
		if !c.waitForRecords(ctx, waits, changed, wait) {
			return []ConsumedRecord{}, nil
		}
	}
}

// waitForRecords waits in the broker's purgatory for data beyond the
// positions (waits), a rebalance (changed), shutdown, ctx's end or d. With
// nothing assigned (rebalancing) the purgatory op is only a timer. It
// reports false when the broker is closing: poll no more.
func (c *Coordinator) waitForRecords(ctx context.Context, waits []delayed.Wait, changed <-chan struct{}, d time.Duration) bool {
	op := c.broker.WatchFetch(1, waits, d)
	select {
	case <-op.Done():
	case <-changed:
	case <-c.life.Closing():
	case <-ctx.Done():
	}
	c.broker.CancelWait(op)
	return op.Outcome() != delayed.Closed
}

var errRejoin = errors.New("consumer instance must rejoin")

// remotePollInterval is how often a poll with nothing to return reads
// again the partitions led by other brokers, whose appends do not wake
// this broker's purgatory.
const remotePollInterval = 200 * time.Millisecond

func (c *Coordinator) instanceTopics(inst *instance) []string {
	g := c.lockGroup(inst.group, true)
	defer g.mu.Unlock()
	return inst.topics
}

// pollSnapshot returns the partitions to read (empty while the group is
// rebalancing), the generation, and the group's change channel.
func (c *Coordinator) pollSnapshot(inst *instance) ([]assigned, int32, <-chan struct{}, error) {
	g := c.lockGroup(inst.group, true)
	defer g.mu.Unlock()
	if inst.gone.Load() {
		return nil, 0, nil, fmt.Errorf("%w: %q in group %q", ErrConsumerNotFound, inst.id, inst.group)
	}
	if len(inst.topics) == 0 {
		return nil, 0, nil, fmt.Errorf("%w: subscribe %q in group %q to topics first", ErrNotSubscribed, inst.id, inst.group)
	}
	if inst.member == nil {
		return nil, 0, nil, errRejoin
	}
	if g.state != stateStable {
		return nil, g.generation, g.changed, nil
	}
	var parts []assigned
	for _, t := range sortedKeys(inst.owned) {
		for _, p := range inst.owned[t] {
			tp := topicPartition{t, p}
			pos, ok := inst.positions[tp]
			if !ok {
				pos = -1
				if e, ok := g.offsets[tp]; ok {
					pos = e.offset
				}
			}
			parts = append(parts, assigned{tp: tp, pos: pos})
		}
	}
	if len(parts) > 0 {
		inst.next = (inst.next + 1) % len(parts)
		parts = append(parts[inst.next:], parts[:inst.next]...)
	}
	return parts, g.generation, g.changed, nil
}

// readAssigned fetches from each partition in turn until the byte or
// record budget is spent. It returns the records, the new positions and,
// for a wait when there were none, what each partition had (taken before
// its read).
func (c *Coordinator) readAssigned(ctx context.Context, inst *instance, parts []assigned, o PollOptions) (_ []ConsumedRecord, _ map[topicPartition]int64, _ []delayed.Wait, remote bool, _ error) {
	positions := map[topicPartition]int64{}
	waits := make([]delayed.Wait, 0, len(parts))
	var out []ConsumedRecord
	budget := o.MaxBytes
	for _, a := range parts {
		pos, err := c.resolvePosition(inst, a)
		if errors.Is(err, server.ErrLeaderNotAvailable) {
			remote = true // no position to start from until it has a leader
			continue
		}
		if err != nil {
			return nil, nil, nil, false, err
		}
		positions[a.tp] = pos
		if budget <= 0 || len(out) >= o.MaxRecords {
			continue
		}
		mine := -1 // this partition's index in waits
		if p, err := c.broker.Partition(a.tp.topic, a.tp.partition); err == nil {
			mine = len(waits)
			waits = append(waits, server.WaitPoint(p, pos))
		}
		// From this broker's in-sync replica or, on a cluster, the leader.
		res, err := c.broker.ConsumerFetch(ctx, server.FetchRequest{Topic: a.tp.topic, Partition: a.tp.partition,
			Offset: pos, MaxBytes: budget, ReadCommitted: inst.readCommitted}, nil)
		if mine < 0 {
			remote = true
		}
		if errors.Is(err, server.ErrLeaderNotAvailable) {
			continue // its leader is moving: the next poll reads it from where it is then
		}
		if errors.Is(err, server.ErrOffsetOutOfRange) {
			if pos, err = c.resetPosition(inst, a.tp); err != nil {
				return nil, nil, nil, false, err
			}
			positions[a.tp] = pos
			if mine >= 0 {
				waits[mine].Offset = pos // wait where the next poll reads
			}
			continue
		}
		if err != nil {
			return nil, nil, nil, false, err
		}
		if mine >= 0 && waits[mine].Offset < res.HighWatermark {
			// Records below the high watermark are returned now; should
			// there be none (a gap in offsets), wait for newer data rather
			// than spin.
			waits[mine].Offset = res.HighWatermark
		}
		full := false
		err = records.Decode(res.Data, pos, c.broker.Config().MaxDecompressedBytes, func(r records.Record) bool {
			if r.Offset >= res.HighWatermark || len(out) >= o.MaxRecords || budget <= 0 {
				full = true
				return false
			}
			out = append(out, ConsumedRecord{Topic: a.tp.topic, Partition: a.tp.partition, Record: copyRecord(r)})
			budget -= len(r.Key) + len(r.Value) + 64
			positions[a.tp] = r.Offset + 1
			return true
		})
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("%w: decode %s-%d: %v", server.ErrCorruptMessage, a.tp.topic, a.tp.partition, err)
		}
		if !full && res.ReadEnd > positions[a.tp] {
			// Everything read was taken: past markers and aborted batches too.
			positions[a.tp] = res.ReadEnd
		}
	}
	return out, positions, waits, remote, nil
}

func (c *Coordinator) resolvePosition(inst *instance, a assigned) (int64, error) {
	if a.pos >= 0 {
		return a.pos, nil
	}
	return c.resetPosition(inst, a.tp)
}

func (c *Coordinator) resetPosition(inst *instance, tp topicPartition) (int64, error) {
	switch inst.reset {
	case "earliest":
		off, _, err := c.broker.ConsumerListOffset(context.Background(), tp.topic, tp.partition, server.OffsetEarliest)
		return off, err
	case "latest":
		off, _, err := c.broker.ConsumerListOffset(context.Background(), tp.topic, tp.partition, server.OffsetLatest)
		return off, err
	}
	return 0, fmt.Errorf("%w: %s-%d", ErrNoOffsetReset, tp.topic, tp.partition)
}

func copyRecord(r records.Record) records.Record {
	out := records.Record{Offset: r.Offset, Timestamp: r.Timestamp, TimestampType: r.TimestampType}
	if r.Key != nil {
		out.Key = append([]byte{}, r.Key...)
	}
	if r.Value != nil {
		out.Value = append([]byte{}, r.Value...)
	}
	for _, h := range r.Headers {
		hv := h.Value
		if hv != nil {
			hv = append([]byte{}, hv...)
		}
		out.Headers = append(out.Headers, records.Header{Key: h.Key, Value: hv})
	}
	return out
}

// advance stores new positions if the instance still owns the partitions
// in the same generation.
func (c *Coordinator) advance(inst *instance, gen int32, positions map[topicPartition]int64) {
	g := c.lockGroup(inst.group, true)
	defer g.mu.Unlock()
	if g.generation != gen || inst.member == nil {
		return
	}
	for tp, pos := range positions {
		for _, p := range inst.owned[tp.topic] {
			if p == tp.partition {
				inst.positions[tp] = pos
			}
		}
	}
}

// CommitOffset is one offset to commit for an instance.
type CommitOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata,omitempty"`
}

// CommitConsumer commits offsets for an instance: the given ones, or with
// nil every position it has consumed to. Acknowledged after fsync.
func (c *Coordinator) CommitConsumer(ctx context.Context, groupName, id string, offsets []CommitOffset) error {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return err
	}
	return c.commitInstance(ctx, inst, offsets)
}

// commitInstance writes offsets (nil: the instance's positions) durably.
// It does not wait for an in-flight poll: positions are read under the
// group's mu, and a commit racing a poll commits what was returned so far.
func (c *Coordinator) commitInstance(ctx context.Context, inst *instance, offsets []CommitOffset) error {
	now := c.now().UnixMilli()
	set := map[topicPartition]offsetEntry{}
	for _, o := range offsets {
		n, err := c.broker.PartitionCountInCluster(o.Topic)
		if err != nil {
			return err
		}
		if o.Partition < 0 || o.Partition >= n {
			return fmt.Errorf("%w: %s has no partition %d", server.ErrUnknownPartition, o.Topic, o.Partition)
		}
		if len(o.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			return fmt.Errorf("%w: metadata of %d bytes is over %d", ErrCommitRejected, len(o.Metadata), c.cfg.OffsetMetadataMaxBytes)
		}
		set[topicPartition{o.Topic, o.Partition}] = offsetEntry{offset: o.Offset, leaderEpoch: -1, metadata: o.Metadata, commitTime: now, logOffset: -1}
	}
	g := c.lockGroup(inst.group, true)
	if offsets == nil {
		for tp, pos := range inst.positions {
			if e, ok := g.offsets[tp]; !ok || e.offset != pos {
				set[tp] = offsetEntry{offset: pos, leaderEpoch: -1, commitTime: now, logOffset: -1}
			}
		}
	}
	g.mu.Unlock()
	if len(set) == 0 {
		return nil
	}
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	if err := c.storeOffsets(ctx, g, set, nil); err != nil {
		return fmt.Errorf("%w: %v", ErrCommitRejected, err)
	}
	return nil
}

// CommittedOffset is a committed offset as the REST API shows it.
type CommittedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

// ConsumerCommitted returns the group's committed offsets for the given
// partitions (all the instance is assigned when none are given); -1 where
// nothing is committed.
func (c *Coordinator) ConsumerCommitted(groupName, id string, parts []TopicPartitions) ([]CommittedOffset, error) {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return nil, err
	}
	g := c.lockGroup(groupName, true)
	defer g.mu.Unlock()
	if len(parts) == 0 {
		for _, t := range sortedKeys(inst.owned) {
			parts = append(parts, TopicPartitions{Topic: t, Partitions: inst.owned[t]})
		}
	}
	out := []CommittedOffset{}
	for _, tps := range parts {
		for _, p := range tps.Partitions {
			co := CommittedOffset{Topic: tps.Topic, Partition: p, Offset: -1}
			if e, ok := g.offsets[topicPartition{tps.Topic, p}]; ok {
				co.Offset, co.Metadata = e.offset, e.metadata
			}
			out = append(out, co)
		}
	}
	return out, nil
}

// DeleteConsumer removes an instance: it commits (with auto commit) and
// leaves the group, which rebalances.
func (c *Coordinator) DeleteConsumer(ctx context.Context, groupName, id string) error {
	inst, err := c.instance(groupName, id)
	if err != nil {
		return err
	}
	c.removeInstance(ctx, inst)
	return nil
}

// removeInstance is idempotent: the first caller to take the instance out
// of the map commits and leaves. An in-flight poll wakes (the group
// changes) and answers ErrConsumerNotFound.
func (c *Coordinator) removeInstance(ctx context.Context, inst *instance) {
	key := instanceKey{inst.group, inst.id}
	c.mu.Lock()
	if c.mu.instances[key] != inst {
		c.mu.Unlock()
		return
	}
	delete(c.mu.instances, key)
	c.mu.Unlock()
	if inst.autoCommit {
		if err := c.commitInstance(ctx, inst, nil); err != nil {
			c.logger.Warn("commit on consumer removal failed", "group", inst.group, "instance", inst.id, "err", err)
		}
	}
	g := c.lockGroup(inst.group, true)
	inst.gone.Store(true)
	if m := inst.member; m != nil {
		g.removeMember(c.now(), m)
	}
	g.mu.Unlock()
	if err := c.persistInstance(ctx, inst, nil, true); err != nil {
		c.logger.Warn("consumer instance removal not recorded; the next coordinator may recreate it until it expires",
			"group", inst.group, "instance", inst.id, "err", err)
	}
}

// expireInstances removes instances idle for ConsumerIdleTimeout.
func (c *Coordinator) expireInstances(now time.Time) {
	var idle []*instance
	c.mu.Lock()
	for _, inst := range c.mu.instances {
		if now.Sub(time.Unix(0, inst.lastUsed.Load())) > c.cfg.ConsumerIdleTimeout {
			idle = append(idle, inst)
		}
	}
	c.mu.Unlock()
	for _, inst := range idle {
		c.logger.Info("consumer instance expired", "group", inst.group, "instance", inst.id)
		c.removeInstance(context.Background(), inst)
	}
}
