package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
)

// Config holds the coordinator's settings. The zero value gives Kafka's
// defaults.
type Config struct {
	Logger *slog.Logger
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first join phase of an empty group waits for more members (each
	// new member extends it, up to the rebalance timeout). Default 3 s;
	// negative disables it.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min/max.session.timeout.ms). Defaults 6 s and 30 min.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// OffsetsTopicPartitions is the partition count used when creating
	// __consumer_offsets (offsets.topic.num.partitions). Default 50, as
	// Kafka, so groups spread over partitions (and, on a cluster, over
	// coordinators). An existing topic keeps its count.
	OffsetsTopicPartitions int32
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor:
	// the replicas of __consumer_offsets when a cluster creates it, on the
	// first FindCoordinator; with fewer live brokers the lookup answers
	// COORDINATOR_NOT_AVAILABLE. Default 3, as Kafka. A single node uses 1.
	OffsetsTopicReplicationFactor int16
	// OffsetsTopicSegmentBytes is segment.bytes of __consumer_offsets when
	// it is created (offsets.topic.segment.bytes). Default 100 MiB, as
	// Kafka: the cleaner never touches the active segment, so a smaller
	// segment than the 1 GiB default keeps the compacted topic small.
	OffsetsTopicSegmentBytes int32
	// OffsetsRetention expires the committed offsets of an empty group
	// this long after it became empty (a standalone group's, after the
	// commit) (offsets.retention.minutes). Default 7 days, as Kafka 2.0+.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is how often expiry runs
	// (offsets.retention.check.interval.ms). Default 10 minutes.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes bounds a commit's metadata string
	// (offset.metadata.max.bytes). Default 4096.
	OffsetMetadataMaxBytes int
	// ConsumerIdleTimeout expires REST and SSE consumer instances that see
	// no request for this long (REST Proxy's consumer.instance.timeout.ms).
	// Default 5 min.
	ConsumerIdleTimeout time.Duration
	// TickInterval is how often timeouts are checked. Default 100 ms.
	TickInterval time.Duration
	// Now is the clock; tests inject a fake one. Default time.Now.
	Now func() time.Time
	// ManualTick turns off the background timeout loop; tests then call
	// Tick (and SampleLag) themselves.
	ManualTick bool
	// LagSampleInterval is how often each group's lag is sampled into its
	// history (laghistory.go). Default 10 s.
	LagSampleInterval time.Duration
	// LagSamples is how many samples a group's history keeps (default
	// 360: an hour at the default interval); LagHistoryGroups how many
	// groups have one (default 1000).
	LagSamples       int
	LagHistoryGroups int
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.OffsetsTopicPartitions == 0 {
		c.OffsetsTopicPartitions = 50
	}
	if c.OffsetsTopicReplicationFactor == 0 {
		c.OffsetsTopicReplicationFactor = 3
	}
	if c.OffsetsTopicSegmentBytes == 0 {
		c.OffsetsTopicSegmentBytes = 100 << 20
	}
	if c.OffsetsRetention == 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.OffsetsRetentionCheckInterval == 0 {
		c.OffsetsRetentionCheckInterval = 10 * time.Minute
	}
	if c.OffsetMetadataMaxBytes == 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.ConsumerIdleTimeout == 0 {
		c.ConsumerIdleTimeout = 5 * time.Minute
	}
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.LagSampleInterval == 0 {
		c.LagSampleInterval = 10 * time.Second
	}
	if c.LagSamples == 0 {
		c.LagSamples = 360
	}
	if c.LagHistoryGroups == 0 {
		c.LagHistoryGroups = 1000
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("session timeout bounds [%v, %v] are invalid", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.OffsetsTopicPartitions < 1:
		return fmt.Errorf("offsets.topic.num.partitions %d: must be >= 1", c.OffsetsTopicPartitions)
	case c.OffsetsTopicReplicationFactor < 1:
		return fmt.Errorf("offsets.topic.replication.factor %d: must be >= 1", c.OffsetsTopicReplicationFactor)
	case c.OffsetsTopicSegmentBytes < 1024:
		return fmt.Errorf("offsets.topic.segment.bytes %d: must be >= 1024", c.OffsetsTopicSegmentBytes)
	case c.OffsetsRetention < time.Minute || c.OffsetsRetentionCheckInterval <= 0:
		return fmt.Errorf("offsets.retention.minutes must be >= 1 and offsets.retention.check.interval.ms > 0")
	case c.TickInterval <= 0:
		return fmt.Errorf("tick interval must be > 0")
	case c.LagSampleInterval <= 0 || c.LagSamples < 1 || c.LagHistoryGroups < 1:
		return fmt.Errorf("lag history: interval %v, %d samples, %d groups: must be positive", c.LagSampleInterval, c.LagSamples, c.LagHistoryGroups)
	}
	return nil
}

// Coordinator runs every consumer group of this node. Each group is owned
// by its own mutex (group.mu); the coordinator's mu guards only the map of
// groups and of consumer instances. Lock order: commitMu of a group, then
// Coordinator.mu or group.mu — never Coordinator.mu while holding a group's
// mu except in removeLocked (a group's removal: by the tick loop, a
// delete, a resigned partition), which takes them in the order group.mu →
// Coordinator.mu and is the only place that nests.
type Coordinator struct {
	broker *server.Broker
	cfg    Config
	logger *slog.Logger
	env    *env

	mu struct {
		sync.Mutex
		groups    map[string]*group
		instances map[instanceKey]*instance
	}
	// own is the __consumer_offsets partitions this broker leads: their
	// groups are the ones it serves (ownership.go). Lock order: own, then
	// Coordinator.mu, then a group's mu.
	own *ownership.Table[*loadedPartition]

	// txnVerifier checks TxnOffsetCommits (txnoffsets.go); nil: none.
	txnVerifier atomic.Pointer[verifierBox]
	// markersVsInstall orders a marker's telling (TxnMarkerWritten, read
	// lock) with a loaded partition's install (write lock), which reads
	// what was appended since the load and installs the groups: a marker
	// is either in what the install read or told to installed groups.
	markersVsInstall sync.RWMutex
	// readTail, when not nil, replaces readPartition as the install's read
	// of what was appended while a partition loaded (tests: a failing read).
	readTail func(p int32, l *loadedPartition) error
	// lagHistory is each group's lag over time, sampled by tickLoop.
	lagHistory *lagHistory

	// offsets is __consumer_offsets: its creation, a group's partition and
	// coordinator, its log read back.
	offsets *ownership.Topic
	// life runs the tick loop and the loads; Close ends it.
	life *ownership.Lifecycle
}

// New starts the coordinator. On a single node it creates
// __consumer_offsets if missing and loads every committed offset before it
// returns; on a cluster it serves the groups of the partitions the
// controller makes this broker lead, each once loaded, and the topic is
// created by the first FindCoordinator.
func New(b *server.Broker, cfg Config) (*Coordinator, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{broker: b, cfg: cfg, logger: cfg.Logger.With("component", "group"), life: ownership.NewLifecycle()}
	c.env = &env{logger: c.logger, initialDelay: cfg.InitialRebalanceDelay, partitionCount: c.partitionCount}
	c.mu.groups = map[string]*group{}
	c.mu.instances = map[instanceKey]*instance{}
	c.offsets = &ownership.Topic{Broker: b, Name: OffsetsTopic, Partitions: cfg.OffsetsTopicPartitions,
		ReplicationFactor: cfg.OffsetsTopicReplicationFactor, ReplicationSetting: "offsets.topic.replication.factor",
		SegmentBytes: cfg.OffsetsTopicSegmentBytes, PartitionOf: OffsetsPartition, NoCoordinator: errNoCoordinator}
	c.own = c.newOwnership()
	c.lagHistory = newLagHistory(cfg.LagSamples, cfg.LagHistoryGroups)
	// Following first: a role given while the led partitions load is not
	// missed. A new epoch while still leading (an ISR change by the
	// controller) leaves the groups loaded as they are.
	c.own.FollowLeadership(c.offsets)
	if !c.offsets.Clustered() {
		if err := c.offsets.Create(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	groups, offsets, err := c.loadLedPartitions()
	if err != nil {
		return nil, err
	}
	c.logger.Info("committed offsets loaded", "offsets", offsets, "groups", groups, "took", time.Since(start))
	if !cfg.ManualTick {
		c.life.TickLoop(
			ownership.Every{Interval: cfg.TickInterval, Run: c.Tick},
			ownership.Every{Interval: cfg.OffsetsRetentionCheckInterval, Run: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c.ExpireOffsets(ctx, c.now())
			}},
			ownership.Every{Interval: cfg.LagSampleInterval, Run: func() { c.SampleLag(c.now()) }})
	}
	return c, nil
}

// Close stops the timeout loop and answers every waiting join or sync with
// COORDINATOR_NOT_AVAILABLE (via the handlers' closing check).
func (c *Coordinator) Close() error {
	c.life.Close()
	return nil
}

func (c *Coordinator) now() time.Time { return c.cfg.Now() }

func (c *Coordinator) partitionCount(topic string) int32 {
	// Members may read any of them, here or from their leaders.
	n, err := c.broker.PartitionCountInCluster(topic)
	if err != nil {
		return 0
	}
	return n
}

// Tick applies every timeout due at the clock's current time: session
// expiry, join and sync deadlines, the initial delay, idle consumer
// instances, and removal of groups that hold nothing. The background loop
// calls it every TickInterval; with ManualTick, tests call it.
func (c *Coordinator) Tick() {
	now := c.now()
	for _, g := range c.groupList() {
		g.mu.Lock()
		g.tick(now)
		if g.removable(now) {
			c.removeLocked(g)
		}
		g.mu.Unlock()
	}
	c.expireInstances(now)
}

// removeLocked ends g: its waiting joins and syncs end, and it leaves the
// coordinator's map (unless a new group of its name took its place).
// Callers hold g.mu, which orders before c.mu.
func (c *Coordinator) removeLocked(g *group) {
	g.state = stateDead
	g.notify()
	c.mu.Lock()
	if c.mu.groups[g.name] == g {
		delete(c.mu.groups, g.name)
	}
	c.mu.Unlock()
}

// removable: an empty group with nothing committed is forgotten, but only
// emptyGroupMemory after its last member left, so a consumer that comes
// back soon finds the size of its last generation (lastGenerationBack).
func (g *group) removable(now time.Time) bool {
	return g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && g.committing == 0 && len(g.txnOffsets) == 0 &&
		(g.lastSize == 0 || now.Sub(g.emptySince) >= emptyGroupMemory)
}

// emptyGroupMemory is how long an Empty group without commits is kept.
const emptyGroupMemory = 5 * time.Minute

func (c *Coordinator) groupList() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].name < gs[j].name })
	return gs
}

// groupsOfPartition is the groups whose offsets partition is p, in no
// order: a marker on p (once per transaction that commits offsets) and
// p's unload look only at them, without the sorted copy of every group.
func (c *Coordinator) groupsOfPartition(p int32) []*group {
	n := c.offsets.PartitionCount() // asks the broker: not under c.mu
	if n < 1 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var gs []*group
	for name, g := range c.mu.groups {
		if c.offsets.PartitionOf(name, n) == p {
			gs = append(gs, g)
		}
	}
	return gs
}

// lockGroup returns the named group with its mu held, creating it when
// create is set; nil when it does not exist.
func (c *Coordinator) lockGroup(name string, create bool) *group {
	for {
		c.mu.Lock()
		g, ok := c.mu.groups[name]
		if !ok {
			if !create {
				c.mu.Unlock()
				return nil
			}
			g = newGroup(name, c.env)
			c.mu.groups[name] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state != stateDead {
			return g
		}
		g.mu.Unlock() // removed under us: look again
	}
}

// errClosed answers requests that arrive during shutdown.
var errClosed = errors.New("group coordinator is closed")

func (c *Coordinator) closed() bool { return c.life.Closed() }

type clientKey struct{}

// ClientInfo is what the listener knows of the connection a request came
// on; DescribeGroups reports it per member.
type ClientInfo struct {
	ClientID string
	Host     string
}

// WithClient attaches the request header's client id and the peer's host
// to ctx, for JoinGroup to record.
func WithClient(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, clientKey{}, ClientInfo{ClientID: clientID, Host: host})
}

func clientFrom(ctx context.Context) ClientInfo {
	ci, _ := ctx.Value(clientKey{}).(ClientInfo)
	return ci
}
