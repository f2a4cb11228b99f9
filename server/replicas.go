package server

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/fetcher"
	"github.com/ferry-mq/ferry/replication/isr"
)

// The broker's side of the controller's decisions (Kafka's
// ReplicaManager.becomeLeaderOrFollower and stopReplicas): LeaderAndIsr
// makes this broker lead some partitions and follow others, StopReplica
// stops following (and may delete). The listener decodes the requests;
// the core applies them to its partitions and its replica fetchers.

// ErrStaleControllerEpoch: a request from a controller older than one this
// broker has heard from (Kafka's STALE_CONTROLLER_EPOCH).
var ErrStaleControllerEpoch = errors.New("stale controller epoch")

// PartitionRole is one partition of a LeaderAndIsr request.
type PartitionRole struct {
	Topic     string
	Partition int32
	replication.Role
}

// BrokerAddress is where a broker's inter-broker listener is.
type BrokerAddress struct {
	ID   int32
	Host string
	Port int32
}

func (a BrokerAddress) addr() string { return net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port))) }

// ApplyLeaderAndIsr applies the controller's roles for partitions this
// broker holds: for each, lead it or follow its leader (whose address is
// in leaders), in the order given, and returns one error per partition
// (nil: applied). A request from an older controller epoch than the last
// one applied is refused whole.
func (b *Broker) ApplyLeaderAndIsr(controllerEpoch int32, roles []PartitionRole, leaders []BrokerAddress) ([]error, error) {
	if err := b.checkControllerEpoch(controllerEpoch); err != nil {
		return nil, err
	}
	addrs := make(map[int32]string, len(leaders))
	for _, l := range leaders {
		addrs[l.ID] = l.addr()
	}
	errs := make([]error, len(roles))
	failed := 0
	for i, r := range roles {
		errs[i] = b.applyRole(r, addrs)
		if errs[i] != nil {
			failed++
			b.logger.Warn("controller's partition role not applied", "topic", r.Topic, "partition", r.Partition,
				"leader", r.Leader, "leader_epoch", r.LeaderEpoch, "err", errs[i])
		}
	}
	b.logger.Info("LeaderAndIsr applied", "controller_epoch", controllerEpoch, "partitions", len(roles), "failed", failed)
	return errs, nil
}

func (b *Broker) applyRole(r PartitionRole, addrs map[int32]string) error {
	p, err := b.partition(r.Topic, r.Partition)
	if err != nil && slices.Contains(r.Replicas, b.cfg.BrokerID) {
		// A new replica here (a new topic or partition, a reassignment):
		// its log is created now, as Kafka's LeaderAndIsr does.
		p, err = b.openReplica(r.Topic, r.Partition)
	}
	if err != nil {
		return err
	}
	if r.Leader == b.cfg.BrokerID {
		// Stop copying before leading: no follower append may land after
		// the leader's first one.
		b.fetchers.Unfollow(r.Topic, r.Partition)
		if err := p.SetRole(r.Role); err != nil {
			return err
		}
		b.leadershipChanged(r.Topic, LeadershipChange{Partition: r.Partition, LeaderEpoch: r.LeaderEpoch, Leading: true})
		return nil
	}
	addr, ok := addrs[r.Leader]
	if !ok && r.Leader != replication.NoLeader {
		return fmt.Errorf("%w: %s-%d: the leader %d is not among the request's live leaders",
			ErrInvalidRequest, r.Topic, r.Partition, r.Leader)
	}
	if err := p.SetRole(r.Role); err != nil {
		return err
	}
	b.leadershipChanged(r.Topic, LeadershipChange{Partition: r.Partition, LeaderEpoch: r.LeaderEpoch})
	if r.Leader == replication.NoLeader {
		b.fetchers.Unfollow(r.Topic, r.Partition)
		return nil
	}
	b.fetchers.Follow(p, r.Leader, addr)
	return nil
}

// openReplica opens partition index of a topic the cluster metadata
// records, adding the topic to this broker's table when it is new here,
// and the partition when it was added since the table was read.
func (b *Broker) openReplica(name string, index int32) (*replication.Replica, error) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, err := b.lookup(name)
	if errors.Is(err, ErrUnknownTopic) || err == nil && int(index) >= len(t.partitions) {
		t, _, err = b.refreshTopic(name)
	}
	if err != nil {
		return nil, err
	}
	if p, err := t.partition(index); err == nil {
		return p, nil // opened meanwhile
	} else if !errors.Is(err, ErrNotLeader) {
		return nil, err // beyond even the metadata's partitions
	}
	p, err := b.openPartition(name, index, t.settings, false)
	if err != nil {
		return nil, err
	}
	next := &topic{meta: t.meta, settings: t.settings, partitions: slices.Clone(t.partitions)}
	next.partitions[index] = p
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		p.Close()
		return nil, ErrShuttingDown
	}
	b.mu.topics[name] = next
	return p, nil
}

// learnTopic adds a topic created elsewhere in the cluster, with none of
// its partitions open yet. Expects adminMu.
func (b *Broker) learnTopic(name string) (*topic, error) {
	t, _, err := b.refreshTopic(name)
	return t, err
}

// refreshTopic re-reads a topic from the cluster metadata and brings this
// broker's table up to it: a topic new here is added, partitions added
// elsewhere are appended, none of them open (LeaderAndIsr opens a replica
// here). It answers the table's entry and the metadata as read. Expects
// adminMu.
func (b *Broker) refreshTopic(name string) (*topic, replication.TopicMetadata, error) {
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return nil, tm, fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return nil, tm, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return nil, tm, ErrShuttingDown
	}
	t := b.mu.topics[name]
	switch {
	case t == nil:
		meta := topicMetaOf(tm)
		t = &topic{meta: meta, settings: b.resolveSettings(meta.Configs), partitions: make([]*replication.Replica, meta.Partitions)}
	case t.meta.ID != tm.ID:
		// Its deletion has not reached this broker yet: the old
		// topic's partitions must not be mixed with the new one's.
		return nil, tm, fmt.Errorf("%w: %s was deleted and created again; this broker still holds the old one",
			ErrUnknownTopic, name)
	case len(t.partitions) >= len(tm.Replicas):
		return t, tm, nil
	default:
		grown := &topic{meta: t.meta, settings: t.settings, partitions: slices.Clone(t.partitions)}
		grown.partitions = append(grown.partitions, make([]*replication.Replica, len(tm.Replicas)-len(t.partitions))...)
		grown.meta.Partitions, grown.meta.replicas = tm.Partitions(), tm.Replicas
		t = grown
	}
	b.mu.topics[name] = t
	return t, tm, nil
}

// StopReplicas stops following partitions (StopReplica), as the
// controller asks when a replica leaves this broker; with deletePartitions
// the replicas' logs are deleted too (topic deletion: the topic leaves
// this broker's table with its last replica). Deleting a replica this
// broker does not hold succeeds: it may have been deleted before.
func (b *Broker) StopReplicas(controllerEpoch int32, topic string, partitions []int32, deletePartitions bool) ([]error, error) {
	if err := b.checkControllerEpoch(controllerEpoch); err != nil {
		return nil, err
	}
	errs := make([]error, len(partitions))
	for i, part := range partitions {
		if _, err := b.partition(topic, part); err != nil {
			if !deletePartitions {
				errs[i] = err
			}
			continue
		}
		b.fetchers.Unfollow(topic, part)
		b.leadershipChanged(topic, LeadershipChange{Partition: part, LeaderEpoch: -1})
		if deletePartitions {
			errs[i] = b.deleteReplica(topic, part)
		}
	}
	return errs, nil
}

// deleteReplica removes one replica from the topic table and renames its
// directory for the background deleter.
func (b *Broker) deleteReplica(name string, index int32) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, err := b.lookup(name)
	if err != nil || index < 0 || int(index) >= len(t.partitions) || t.partitions[index] == nil {
		return nil // gone meanwhile
	}
	p := t.partitions[index]
	next := &topic{meta: t.meta, settings: t.settings, partitions: slices.Clone(t.partitions)}
	next.partitions[index] = nil
	last := !slices.ContainsFunc(next.partitions, func(p *replication.Replica) bool { return p != nil })
	b.mu.Lock()
	if last {
		delete(b.mu.topics, name)
	} else {
		b.mu.topics[name] = next
	}
	b.mu.Unlock()
	gone, err := p.Delete("." + t.meta.ID + deleteSuffix)
	if err != nil {
		return fmt.Errorf("%w: delete %s-%d: %v", ErrStorage, name, index, err)
	}
	select {
	case b.toDelete <- gone:
	default: // the next start removes it
	}
	if last {
		b.cfg.Metrics.ForgetTopic(name)
	}
	b.logger.Info("replica deleted", "topic", name, "partition", index)
	return nil
}

// FollowingFrom is the leader this broker copies a partition from; ok is
// false when it does not follow the partition.
func (b *Broker) FollowingFrom(topicName string, partition int32) (leader int32, ok bool) {
	return b.fetchers.Leader(topicName, partition)
}

// checkControllerEpoch refuses an older controller than the newest this
// broker has heard from, and remembers a newer one.
func (b *Broker) checkControllerEpoch(epoch int32) error {
	for {
		cur := b.controllerEpoch.Load()
		if epoch < cur {
			return fmt.Errorf("%w: %d, this broker has heard from epoch %d", ErrStaleControllerEpoch, epoch, cur)
		}
		if epoch == cur || b.controllerEpoch.CompareAndSwap(cur, epoch) {
			return nil
		}
	}
}

func newFetcherManager(cfg Config, b *Broker) *fetcher.Manager {
	return fetcher.NewManager(fetcher.Config{BrokerID: cfg.BrokerID, Logger: b.logger, MaxWait: cfg.ReplicaFetchWaitMax, Throttle: followerThrottle{b}, Dial: cfg.InterBrokerDial})
}

// ISRStore records leaders' ISR changes in the cluster metadata
// (zookeeper.Metadata on a cluster; a single node makes none).
type ISRStore interface {
	// WriteISR writes st conditionally on st.Version and returns the new
	// version; it fails when another writer changed the state first.
	WriteISR(topic string, partition int32, st isr.State) (int32, error)
	// ReadState is the partition's state as the store holds it now.
	ReadState(topic string, partition int32) (isr.State, error)
}

// proposeISR writes a leader's ISR change and reports the outcome to the
// partition; on a conflict it re-reads the state, which tells the leader
// its ISR (or that it no longer leads: the controller's LeaderAndIsr
// follows). Runs on its own goroutine: ZooKeeper is not on the produce or
// fetch path.
func (b *Broker) proposeISR(p *replication.Replica, prop *isr.Proposal) {
	store := b.cfg.ISRStore
	select {
	case <-b.stop:
		store = nil // closing: the next leader decides
	default:
	}
	if store == nil {
		p.ISRConflict(prop) // nowhere to write it: the ISR stays
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		v, err := store.WriteISR(p.Topic(), p.Index(), prop.State)
		if err == nil {
			p.ISRCommitted(prop, v)
			b.countISRChange(prop.Change)
			b.logISRChange(p, prop, time.Now())
			return
		}
		p.ISRConflict(prop)
		b.logger.Warn("ISR change not written", "topic", p.Topic(), "partition", p.Index(), "err", err)
		st, err := store.ReadState(p.Topic(), p.Index())
		if err != nil {
			return
		}
		r := p.Role()
		if st.Leader == r.Leader && st.LeaderEpoch == r.LeaderEpoch {
			r.ISR, r.ZkVersion, r.ControllerEpoch = st.ISR, st.Version, st.ControllerEpoch
			if err := p.SetRole(r); err != nil {
				b.logger.Warn("ISR re-read not applied", "topic", p.Topic(), "partition", p.Index(), "err", err)
			}
		}
	}()
}

// logISRChange logs a committed ISR change; a follower's return says how
// long it was out (as this leader knew it) and how long it took to catch
// up from its first fetch (issue 23: returns must be visible).
func (b *Broker) logISRChange(p *replication.Replica, prop *isr.Proposal, now time.Time) {
	attrs := []any{"topic", p.Topic(), "partition", p.Index(), "change", prop.Change.String(), "replicas", prop.Replicas, "isr", prop.State.ISR}
	if prop.Change != isr.Expand || prop.OutSince.IsZero() {
		b.logger.Info("ISR changed", attrs...)
		return
	}
	attrs = append(attrs, "out_for", now.Sub(prop.OutSince).Round(time.Millisecond),
		"since_first_fetch", now.Sub(prop.FirstFetch).Round(time.Millisecond))
	b.logger.Info(fmt.Sprintf("replica %v rejoined the ISR of %s-%d after %v out of it", prop.Replicas, p.Topic(), p.Index(),
		now.Sub(prop.OutSince).Round(time.Millisecond)), attrs...)
}

// countISRChange counts a committed ISR change where Kafka does, in the
// leader's Partition.shrinkIsr / expandIsr.
func (b *Broker) countISRChange(c isr.Change) {
	switch c {
	case isr.Shrink:
		b.cfg.Metrics.ISRShrunk()
	case isr.Expand:
		b.cfg.Metrics.ISRExpanded()
	}
}

// tickLeaders lets every leader shrink its ISR by the followers that lag
// (Kafka's isr-expiration task, every replica.lag.time.max.ms / 2).
func (b *Broker) tickLeaders(now time.Time) {
	b.eachPartition(func(p *replication.Replica) { p.Tick(now) })
}
