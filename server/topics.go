package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/assign"
)

// MaxPartitionsPerTopic bounds a create or add-partitions request, so one
// call cannot open an unbounded number of files.
const MaxPartitionsPerTopic = 10000

// IdempotencyKeysTopic holds the HTTP gateway's Idempotency-Key answers
// (server/idempotency).
const IdempotencyKeysTopic = "__idempotency_keys"

// IsInternalTopic reports whether name is a topic the broker owns: the
// group coordinator's __consumer_offsets, __transaction_state reserved
// for transactions, as Kafka's Topic.isInternal, and ferry's
// IdempotencyKeysTopic.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == IdempotencyKeysTopic
}

// RefuseInternalTopic is the one rule for client changes to internal topics:
// losing them loses every group's committed offsets.
func RefuseInternalTopic(name, what string) error {
	if IsInternalTopic(name) {
		return fmt.Errorf("%w: %s is owned by the broker; clients cannot %s it", ErrInternalTopic, name, what)
	}
	return nil
}

// ValidateTopicName applies Kafka's rules: 1–249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: %d characters, the limit is 249", ErrInvalidTopic, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q; allowed are ASCII letters, digits, '.', '_' and '-'",
				ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// TopicSpec describes a topic to create. Partitions and ReplicationFactor
// of -1 (or 0) take the broker defaults.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	// Assignment, when set, places the replicas: one list per partition
	// (Partitions and ReplicationFactor follow from it), else the broker
	// assigns them.
	Assignment [][]int32
}

// CreateTopic validates spec and creates the topic with empty logs.
func (b *Broker) CreateTopic(spec TopicSpec) error {
	if err := b.validateSpec(&spec); err != nil {
		return err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if _, err := b.lookup(spec.Name); err == nil {
		return fmt.Errorf("%w: %q", ErrTopicExists, spec.Name)
	}
	if err := b.checkPartitionBudget(spec.Partitions); err != nil {
		return err
	}
	var replicas [][]int32
	var err error
	if spec.Assignment != nil {
		replicas, err = b.checkAssignment(spec.Assignment, 0, len(spec.Assignment[0]))
	} else {
		replicas, err = b.assignReplicas(int(spec.Partitions), int(spec.ReplicationFactor))
	}
	if err != nil {
		return err
	}
	tm := topicMeta{
		Name:              spec.Name,
		ID:                replication.NewTopicID(),
		Partitions:        spec.Partitions,
		ReplicationFactor: spec.ReplicationFactor,
		Configs:           spec.Configs,
		replicas:          replicas,
	}
	t, err := b.openTopic(tm, true)
	if err != nil {
		return err
	}
	if err := b.commitTopic(tm.Name, t); err != nil {
		b.discardPartitions(tm.Name, t.partitions, 0, tm.Partitions)
		if errors.Is(err, ErrTopicExists) {
			b.learnTopic(tm.Name) // another broker's: known here now
		}
		return err
	}
	b.createdPartitions(tm.Name, 0, tm.Partitions)
	b.logger.Info("topic created", "topic", tm.Name, "partitions", tm.Partitions)
	return nil
}

func (b *Broker) validateSpec(spec *TopicSpec) error {
	if err := ValidateTopicName(spec.Name); err != nil {
		return err
	}
	if spec.Assignment != nil {
		if len(spec.Assignment) == 0 || len(spec.Assignment[0]) == 0 {
			return fmt.Errorf("%w: an assignment needs at least one partition with a replica", ErrInvalidReplicaAssignment)
		}
		spec.Partitions, spec.ReplicationFactor = int32(len(spec.Assignment)), int16(min(len(spec.Assignment[0]), math.MaxInt16))
	}
	if spec.Partitions <= 0 {
		if spec.Partitions != 0 && spec.Partitions != -1 {
			return fmt.Errorf("%w: %d; it must be at least 1", ErrInvalidPartitions, spec.Partitions)
		}
		spec.Partitions = b.cfg.NumPartitions
	}
	if spec.Partitions > MaxPartitionsPerTopic {
		return fmt.Errorf("%w: %d is above the limit %d", ErrInvalidPartitions, spec.Partitions, MaxPartitionsPerTopic)
	}
	if spec.ReplicationFactor == 0 || spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = b.cfg.DefaultReplicationFactor
	}
	if spec.ReplicationFactor < 1 {
		return fmt.Errorf("%w: %d; it must be at least 1", ErrInvalidReplicas, spec.ReplicationFactor)
	}
	return validateTopicConfigs(spec.Configs)
}

// commitTopic records a topic change durably, then publishes the snapshot
// (nil deletes). Callers hold adminMu.
func (b *Broker) commitTopic(name string, t *topic) error {
	var err error
	if t == nil {
		err = b.metadata.RemoveTopic(name)
	} else {
		err = b.metadata.PutTopic(b.recorded(t.meta))
	}
	if errors.Is(err, ErrTopicExists) {
		return err // another broker of the cluster created it first
	}
	if err != nil {
		return fmt.Errorf("%w: write topic metadata: %v", ErrStorage, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return ErrShuttingDown
	}
	if t == nil {
		delete(b.mu.topics, name)
	} else {
		b.mu.topics[name] = t
	}
	return nil
}

// DeleteTopic removes a topic: it disappears at once, its files in the background.
func (b *Broker) DeleteTopic(name string) error {
	if err := RefuseInternalTopic(name, "delete"); err != nil {
		return err
	}
	if b.cfg.AwaitRoles {
		return b.deleteClusterTopic(name)
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, err := b.lookup(name)
	if err != nil {
		return err
	}
	if err := b.commitTopic(name, nil); err != nil {
		return err
	}
	for _, p := range t.partitions {
		if p == nil {
			continue // not a replica here
		}
		b.fetchers.Unfollow(name, p.Index())
		gone, err := p.Delete("." + t.meta.ID + deleteSuffix)
		if err != nil {
			b.logger.Error("delete partition", "topic", name, "partition", p.Index(), "err", err)
			continue
		}
		select {
		case b.toDelete <- gone:
		default: // the next start removes it
		}
	}
	b.cfg.Metrics.ForgetTopic(name)
	b.logger.Info("topic deleted", "topic", name)
	return nil
}

// clusterDeleteWait bounds how long a deletion on a cluster waits for the
// controller to take the topic out of this broker's metadata.
const clusterDeleteWait = 10 * time.Second

// deleteClusterTopic marks the topic for deletion (/admin/delete_topics)
// and waits, as Kafka's DeleteTopics does, until this broker's Metadata no
// longer describes it: the controller has taken it out of the view and
// deleted the replicas held here. Each other replica's files go when the
// controller's StopReplica reaches its broker, a dead one's when it
// returns. A mark the controller has not acted on in time is still acted
// on later.
func (b *Broker) deleteClusterTopic(name string) error {
	_, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err := b.metadata.RemoveTopic(name); err != nil {
		return fmt.Errorf("%w: mark %s for deletion: %v", ErrStorage, name, err)
	}
	deadline := time.Now().Add(clusterDeleteWait)
	for time.Now().Before(deadline) {
		// Metadata describes a topic while either this broker's table
		// (until StopReplica has deleted the last replica here) or the
		// controller's view holds it; the controller may send its
		// UpdateMetadata before its StopReplica, so both must have let go.
		if _, err := b.PartitionCountInCluster(name); errors.Is(err, ErrUnknownTopic) {
			break
		}
		b.deleteChecks.Add(1)
		select {
		case <-b.stop:
			return ErrShuttingDown
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.logger.Info("topic marked for deletion", "topic", name)
	return nil
}

// CreatePartitions raises a topic's partition count to total. The count
// it starts from is the cluster metadata's, not this broker's table:
// another broker may have added partitions this one has not heard of yet.
// The new partitions' replicas continue the existing assignment, as
// Kafka's AddPartitions does; the ones placed here are opened now, the
// others by their brokers when the controller's LeaderAndIsr names them.
func (b *Broker) CreatePartitions(name string, total int32) error {
	return b.CreatePartitionsAssigned(name, total, nil)
}

// CreatePartitionsAssigned is CreatePartitions with the new partitions'
// replicas given (a client's manual assignment, preferred leader first),
// or, when assignment is nil, chosen by the broker.
func (b *Broker) CreatePartitionsAssigned(name string, total int32, assignment [][]int32) error {
	if err := RefuseInternalTopic(name, "add partitions to"); err != nil {
		return err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, tm, err := b.refreshTopic(name)
	if err != nil {
		return err
	}
	have := int32(len(t.partitions))
	if have != tm.Partitions() {
		return fmt.Errorf("%w: %s has %d partitions in the cluster metadata and %d on this broker",
			ErrInvalidPartitions, name, tm.Partitions(), have)
	}
	if err := checkPartitionCount(name, have, total); err != nil {
		return err
	}
	if err := b.checkPartitionBudget(total - have); err != nil {
		return err
	}
	base := topicMetaOf(tm)
	added, err := b.newReplicas(base, total, assignment)
	if err != nil {
		return err
	}
	next := &topic{meta: t.meta, settings: t.settings, partitions: slices.Clone(t.partitions)}
	next.meta.Partitions = total
	next.meta.replicas = append(slices.Clone(b.recorded(base).Replicas), added...)
	for i := have; i < total; i++ {
		var p *replication.Replica
		if b.holdsReplica(next.meta, i) {
			if p, err = b.openPartition(name, i, t.settings, true); err != nil {
				b.discardPartitions(name, next.partitions[have:], have, i+1)
				return err
			}
		}
		next.partitions = append(next.partitions, p)
	}
	if err := b.recordAddedPartitions(next, tm.Version, added); err != nil {
		b.discardPartitions(name, next.partitions[have:], have, total)
		return err
	}
	b.createdPartitions(name, have, total)
	b.logger.Info("partitions added", "topic", name, "from", have, "to", total)
	return nil
}

// recordAddedPartitions writes the added partitions' assignment to the
// cluster metadata, then publishes next. Callers hold adminMu.
func (b *Broker) recordAddedPartitions(next *topic, version int32, added [][]int32) error {
	err := b.metadata.AddPartitions(next.meta.Name, version, added)
	if errors.Is(err, replication.ErrTopicChanged) {
		return fmt.Errorf("%w: %v; describe the topic and retry", ErrInvalidPartitions, err)
	}
	if errors.Is(err, replication.ErrTopicQueuedForDeletion) {
		return fmt.Errorf("%w: %v", ErrInvalidTopic, err)
	}
	if errors.Is(err, replication.ErrTopicReassigning) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: write topic metadata: %v", ErrStorage, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return ErrShuttingDown
	}
	b.mu.topics[next.meta.Name] = next
	return nil
}

// ConfigOpType is an IncrementalAlterConfigs operation, with Kafka's values.
type ConfigOpType int8

// The four operations of KIP-339.
const (
	ConfigSet ConfigOpType = iota
	ConfigDelete
	ConfigAppend
	ConfigSubtract
)

// ConfigOp is one change to one topic config.
type ConfigOp struct {
	Name  string
	Op    ConfigOpType
	Value string // for SET; comma-separated items for APPEND and SUBTRACT
}

// AlterTopicConfigs sets and removes topic config overrides. With replace,
// set becomes the whole override set (Kafka's AlterConfigs); otherwise set is
// merged in and remove deleted (IncrementalAlterConfigs).
func (b *Broker) AlterTopicConfigs(name string, set map[string]string, remove []string, replace bool) error {
	ops := make([]ConfigOp, 0, len(set)+len(remove))
	for k, v := range set {
		ops = append(ops, ConfigOp{Name: k, Op: ConfigSet, Value: v})
	}
	for _, k := range remove {
		ops = append(ops, ConfigOp{Name: k, Op: ConfigDelete})
	}
	return b.ChangeTopicConfigs(name, ops, replace, false)
}

// ChangeTopicConfigs applies ops to a topic's overrides, all or none; with
// replace they start from no overrides (AlterConfigs), with validateOnly
// nothing changes. APPEND and SUBTRACT work on LIST configs only, from the
// override or, without one, the default, as in Kafka.
func (b *Broker) ChangeTopicConfigs(name string, ops []ConfigOp, replace, validateOnly bool) error {
	if err := RefuseInternalTopic(name, "change the configs of"); err != nil {
		return err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, err := b.lookup(name)
	if errors.Is(err, ErrUnknownTopic) {
		return b.changeConfigsHeldElsewhere(name, ops, replace, validateOnly, err)
	}
	if err != nil {
		return err
	}
	cfgs := map[string]string{}
	if !replace {
		maps.Copy(cfgs, t.meta.Configs)
	}
	for _, op := range ops {
		if err := applyConfigOp(cfgs, op); err != nil {
			return err
		}
	}
	if err := validateTopicConfigs(cfgs); err != nil || validateOnly {
		return err
	}
	next := &topic{meta: t.meta, settings: b.resolveSettings(cfgs), partitions: t.partitions}
	next.meta.Configs = cfgs
	if err := b.commitTopic(name, next); err != nil {
		return err
	}
	for _, p := range t.partitions {
		if p == nil {
			continue
		}
		p.SetConfig(next.settings.log)
		if err := p.SetReplicationConfig(next.settings.replication(b.cfg.ReplicaLagTimeMax)); err != nil {
			return err // validateTopicConfigs bounds min.insync.replicas: not reached
		}
	}
	return nil
}

// changeConfigsHeldElsewhere changes the configs of a topic of the
// cluster this broker holds no replica of: in the cluster's metadata
// only, which tells the brokers that hold it (as any Kafka broker alters
// any topic's configs). Callers hold adminMu; unknown is the lookup's
// error, returned when the cluster has no such topic either.
func (b *Broker) changeConfigsHeldElsewhere(name string, ops []ConfigOp, replace, validateOnly bool, unknown error) error {
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return unknown
	}
	cfgs := map[string]string{}
	if !replace {
		maps.Copy(cfgs, tm.Configs)
	}
	for _, op := range ops {
		if err := applyConfigOp(cfgs, op); err != nil {
			return err
		}
	}
	if err := validateTopicConfigs(cfgs); err != nil || validateOnly {
		return err
	}
	tm.Configs = cfgs
	if err := b.metadata.PutTopic(tm); err != nil {
		return fmt.Errorf("%w: write topic metadata: %v", ErrStorage, err)
	}
	return nil
}

// ReloadTopicConfigs re-reads a topic's configs from the cluster metadata
// and applies them to this broker's replicas: another broker changed them
// (on a cluster every broker follows /config/changes, as Kafka's do). A
// topic this broker does not hold, or no longer exists, is left alone.
func (b *Broker) ReloadTopicConfigs(name string) error {
	b.forgetRemoteTopic(name)
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, err := b.lookup(name)
	if errors.Is(err, ErrUnknownTopic) {
		return nil
	}
	if err != nil {
		return err
	}
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return nil // being deleted: its deletion comes separately
	case maps.Equal(tm.Configs, t.meta.Configs):
		return nil // this broker's own change, or one already applied
	}
	cfgs := maps.Clone(tm.Configs)
	if cfgs == nil {
		cfgs = map[string]string{}
	}
	next := &topic{meta: t.meta, settings: b.resolveSettings(cfgs), partitions: t.partitions}
	next.meta.Configs = cfgs
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return ErrShuttingDown
	}
	if cur := b.mu.topics[name]; cur != t {
		b.mu.Unlock()
		return nil // replaced meanwhile (a replica opened): the next notice or open reads it
	}
	b.mu.topics[name] = next
	b.mu.Unlock()
	for _, p := range t.partitions {
		if p == nil {
			continue
		}
		p.SetConfig(next.settings.log)
		if err := p.SetReplicationConfig(next.settings.replication(b.cfg.ReplicaLagTimeMax)); err != nil {
			b.logger.Warn("topic config not applied", "topic", name, "partition", p.Index(), "err", err)
		}
	}
	b.logger.Info("topic configs reloaded", "topic", name)
	return nil
}

func applyConfigOp(cfgs map[string]string, op ConfigOp) error {
	def, known := topicConfigDefs[op.Name]
	if !known {
		return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, op.Name)
	}
	switch op.Op {
	case ConfigSet:
		cfgs[op.Name] = op.Value
		return nil
	case ConfigDelete:
		delete(cfgs, op.Name)
		return nil
	case ConfigAppend, ConfigSubtract:
	default:
		return fmt.Errorf("%w: operation %d on %q", ErrInvalidConfig, op.Op, op.Name)
	}
	if def.typ != TypeList {
		return fmt.Errorf("%w: %q is a %s config; APPEND and SUBTRACT apply to LIST configs", ErrInvalidConfig, op.Name, def.typ)
	}
	cur, ok := cfgs[op.Name]
	if !ok {
		cur = def.def
	}
	items := splitList(cur)
	for _, v := range splitList(op.Value) {
		has := slices.Contains(items, v)
		switch {
		case op.Op == ConfigAppend && !has:
			items = append(items, v)
		case op.Op == ConfigSubtract && has:
			items = slices.DeleteFunc(items, func(x string) bool { return x == v })
		}
	}
	cfgs[op.Name] = strings.Join(items, ",")
	return nil
}

// Topics lists topic names, sorted.
func (b *Broker) Topics() []string {
	b.mu.RLock()
	names := make([]string, 0, len(b.mu.topics))
	for n := range b.mu.topics {
		names = append(names, n)
	}
	b.mu.RUnlock()
	sort.Strings(names)
	return names
}

// PartitionInfo describes one partition for admin surfaces. Leader,
// epoch, replicas, ISR and offline replicas are the cluster's (see
// clusterstate.go); the offsets and sizes are this broker's replica's, so
// they are there only when Local is true (JSON leaves them out otherwise:
// another broker holds the data).
type PartitionInfo struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// OfflineReplicas are the replicas on brokers that are not live.
	OfflineReplicas []int32 `json:"offline_replicas"`
	// UnderReplicated: the ISR is smaller than the replicas.
	UnderReplicated bool `json:"under_replicated"`
	// Local: this broker holds a replica. The offsets, size and segments
	// are that replica's, and are left out when Local is false.
	Local          bool  `json:"local"`
	LogStartOffset int64 `json:"log_start_offset,omitempty"`
	HighWatermark  int64 `json:"high_watermark,omitempty"`
	// LastStableOffset is where read_committed readers stop: the first
	// offset of the oldest open transaction, else the high watermark.
	LastStableOffset int64 `json:"last_stable_offset,omitempty"`
	LogEndOffset     int64 `json:"log_end_offset,omitempty"`
	SizeBytes        int64 `json:"size_bytes,omitempty"`
	Segments         int   `json:"segments,omitempty"`
	// Cleaner is the local replica's compaction state, for a topic with
	// cleanup.policy=compact.
	Cleaner *CleanerInfo `json:"cleaner,omitempty"`
}

// CleanerInfo is one compacted replica's cleaner state.
type CleanerInfo struct {
	// DirtyRatio is the share of the cleanable bytes not yet cleaned
	// (what min.cleanable.dirty.ratio is compared with).
	DirtyRatio float64 `json:"dirty_ratio"`
	// CleanedTo is the first dirty offset: below it each key's older
	// records are gone.
	CleanedTo int64 `json:"cleaned_to_offset"`
	// LastPass is when the last pass that cleaned something ended (since
	// the broker started; absent when none) and LastPassMs how long it took.
	LastPass   *time.Time `json:"last_pass_time,omitempty"`
	LastPassMs int64      `json:"last_pass_ms"`
}

// cleanerInfo describes p's cleaner state, nil when not compacted.
func cleanerInfo(p *replication.Replica) *CleanerInfo {
	if !p.LogConfig().Compaction.Enabled {
		return nil
	}
	st, err := p.CleanerState(0, time.Now())
	if err != nil {
		return nil
	}
	ci := &CleanerInfo{DirtyRatio: st.DirtyRatio(), CleanedTo: st.FirstDirty, LastPassMs: st.LastPassTook.Milliseconds()}
	if !st.LastPass.IsZero() {
		ci.LastPass = &st.LastPass
	}
	return ci
}

// partitionInfoJSON is PartitionInfo with every field always present, as a
// local replica's description is written.
type partitionInfoJSON struct {
	Partition        int32        `json:"partition"`
	Leader           int32        `json:"leader"`
	LeaderEpoch      int32        `json:"leader_epoch"`
	Replicas         []int32      `json:"replicas"`
	ISR              []int32      `json:"isr"`
	OfflineReplicas  []int32      `json:"offline_replicas"`
	UnderReplicated  bool         `json:"under_replicated"`
	Local            bool         `json:"local"`
	LogStartOffset   int64        `json:"log_start_offset"`
	HighWatermark    int64        `json:"high_watermark"`
	LastStableOffset int64        `json:"last_stable_offset"`
	LogEndOffset     int64        `json:"log_end_offset"`
	SizeBytes        int64        `json:"size_bytes"`
	Segments         int          `json:"segments"`
	Cleaner          *CleanerInfo `json:"cleaner,omitempty"`
}

// MarshalJSON writes a local replica's offsets even when they are 0 (an
// empty partition), and leaves them out for a partition held elsewhere.
func (pi PartitionInfo) MarshalJSON() ([]byte, error) {
	if pi.Local {
		return json.Marshal(partitionInfoJSON(pi))
	}
	type remote PartitionInfo // without the method; omitempty drops the zero offsets
	return json.Marshal(remote(pi))
}

// TopicInfo describes a topic for admin surfaces.
type TopicInfo struct {
	Name              string          `json:"name"`
	ID                string          `json:"id"`
	ReplicationFactor int16           `json:"replication_factor"`
	Partitions        []PartitionInfo `json:"partitions"`
	Configs           []ConfigEntry   `json:"configs"`
}

// DescribeTopic returns a topic's partitions and effective configs. On a
// cluster it describes every partition the controller described, also
// those (and topics) without a replica here.
func (b *Broker) DescribeTopic(name string) (TopicInfo, error) {
	view, _ := b.Cluster()
	t, err := b.describedTopic(name, view)
	if err != nil {
		return TopicInfo{}, err
	}
	info := TopicInfo{
		Name:              name,
		ID:                t.meta.ID,
		ReplicationFactor: t.meta.ReplicationFactor,
		Configs:           b.describeConfigs(t.meta.Configs),
	}
	for i := range view.PartitionsFrom(name, int32(len(t.partitions))) {
		var p *replication.Replica
		var local *replication.Role
		if int(i) < len(t.partitions) && t.partitions[i] != nil {
			p = t.partitions[i]
			r := p.Role()
			local = &r
		}
		pv, inView := view.Partition(name, i)
		best, ok := bestKnown(b.cfg.BrokerID, local, pv, inView)
		if !ok {
			continue // another broker's, not described to this one yet
		}
		pi := PartitionInfo{
			Partition:       i,
			Leader:          best.Leader,
			LeaderEpoch:     best.LeaderEpoch,
			Replicas:        best.Replicas,
			ISR:             best.ISR,
			OfflineReplicas: best.Offline,
			UnderReplicated: best.UnderReplicated(),
		}
		if pi.OfflineReplicas == nil {
			pi.OfflineReplicas = []int32{}
		}
		if p != nil {
			pi.Local = true
			pi.LogStartOffset, pi.HighWatermark, pi.LogEndOffset = p.LogStartOffset(), p.HighWatermark(), p.LogEndOffset()
			pi.LastStableOffset = p.LastStableOffset()
			pi.SizeBytes, pi.Segments = p.Size(), p.SegmentCount()
			pi.Cleaner = cleanerInfo(p)
		}
		info.Partitions = append(info.Partitions, pi)
	}
	return info, nil
}

// PartitionCount returns how many partitions a topic has.
func (b *Broker) PartitionCount(name string) (int32, error) {
	t, err := b.lookup(name)
	if err != nil {
		return 0, err
	}
	return int32(len(t.partitions)), nil
}

// PartitionCountInCluster is how many partitions a topic has on any node
// of a cluster: also a topic this broker holds no replica of, and
// partitions added where it holds none (the controller's view). Listeners
// serving every partition from every node (HTTP reads, streams) use it;
// PartitionCount is this broker's table.
func (b *Broker) PartitionCountInCluster(name string) (int32, error) {
	view, _ := b.Cluster()
	t, err := b.lookup(name)
	if err == nil {
		return t.partitionCount(view), nil
	}
	if errors.Is(err, ErrUnknownTopic) {
		if n := view.PartitionsFrom(name, 0); n > 0 {
			return n, nil
		}
	}
	return 0, err
}

// assignReplicas places a new topic's replicas on the live brokers with
// Kafka's algorithm (replication/assign): on a single node, every
// partition on this one.
func (b *Broker) assignReplicas(partitions, replicationFactor int) ([][]int32, error) {
	brokers, err := b.metadata.Brokers()
	if err != nil {
		return nil, fmt.Errorf("%w: list brokers: %v", ErrStorage, err)
	}
	replicas, err := assign.Assign(brokers, partitions, replicationFactor, assign.Options{Rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))})
	return replicas, assignError(err)
}

// assignMoreReplicas places the replicas of partitions added to tm, up
// to total, as Kafka's AddPartitions does.
func (b *Broker) assignMoreReplicas(tm topicMeta, total int) ([][]int32, error) {
	brokers, err := b.metadata.Brokers()
	if err != nil {
		return nil, fmt.Errorf("%w: list brokers: %v", ErrStorage, err)
	}
	added, err := assign.AddPartitions(brokers, b.recorded(tm).Replicas, total, assign.Options{})
	return added, assignError(err)
}

// newReplicas are the replicas of the partitions added to tm up to
// total: the client's assignment when it gave one, checked as Kafka's
// AdminZkClient.validateReplicaAssignment does, else the broker's.
func (b *Broker) newReplicas(tm topicMeta, total int32, assignment [][]int32) ([][]int32, error) {
	if assignment == nil {
		return b.assignMoreReplicas(tm, int(total))
	}
	existing := b.recorded(tm).Replicas
	if n := int(total) - len(existing); len(assignment) != n {
		return nil, fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided",
			ErrInvalidReplicaAssignment, n, len(assignment))
	}
	return b.checkAssignment(assignment, len(existing), len(existing[0]))
}

// checkAssignment checks replica lists given by a client for partitions
// numbered from first: each of rf distinct live brokers, as Kafka's
// AdminZkClient.validateReplicaAssignment does.
func (b *Broker) checkAssignment(assignment [][]int32, first, rf int) ([][]int32, error) {
	brokers, err := b.metadata.Brokers()
	if err != nil {
		return nil, fmt.Errorf("%w: list brokers: %v", ErrStorage, err)
	}
	live := make([]int32, len(brokers))
	for i, br := range brokers {
		live[i] = br.ID
	}
	slices.Sort(live)
	if rf > len(live) {
		return nil, fmt.Errorf("%w: %d replicas per partition, but only %d live brokers %v",
			ErrInvalidReplicaAssignment, rf, len(live), live)
	}
	out := make([][]int32, len(assignment))
	for i, rs := range assignment {
		p := first + i
		if len(rs) != rf {
			return nil, fmt.Errorf("%w: partition %d has %d replicas; partition 0 has %d, and a topic's partitions have the same replication factor",
				ErrInvalidReplicaAssignment, p, len(rs), rf)
		}
		for j, r := range rs {
			if slices.Contains(rs[:j], r) {
				return nil, fmt.Errorf("%w: partition %d names broker %d twice", ErrInvalidReplicaAssignment, p, r)
			}
			if !slices.Contains(live, r) {
				return nil, fmt.Errorf("%w: partition %d: broker %d is not a live broker (those are %v)",
					ErrInvalidReplicaAssignment, p, r, live)
			}
		}
		out[i] = slices.Clone(rs)
	}
	return out, nil
}

func assignError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidReplicas): // the same error
		return err
	case errors.Is(err, assign.ErrInvalidPartitions):
		return fmt.Errorf("%w: %v", ErrInvalidPartitions, err)
	}
	return fmt.Errorf("%w: %v", ErrInvalidReplicas, err)
}
