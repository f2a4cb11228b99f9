package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/isr"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/storage"
)

// Config is the broker core's configuration. The zero value plus Defaults
// gives a single node with Kafka's defaults.
type Config struct {
	// BrokerID is this node's id (broker.id).
	BrokerID int32
	// DataDir holds one directory per partition and the topic metadata (log.dirs).
	DataDir string
	// NumPartitions is the partition count of auto-created topics and of
	// topics created without one (num.partitions). Default 1.
	NumPartitions int32
	// DefaultReplicationFactor is the replica count of topics created
	// without one (default.replication.factor). Default 1.
	DefaultReplicationFactor int16
	// MinInsyncReplicas is min.insync.replicas for topics without the
	// override: an acks=all produce needs that many in-sync replicas.
	// Default 1.
	MinInsyncReplicas int
	// AutoCreateTopics creates a topic on first produce (auto.create.topics.enable).
	AutoCreateTopics bool
	// MessageMaxBytes is the largest record batch accepted (message.max.bytes),
	// overridable per topic by max.message.bytes. Default 1048588, as Kafka.
	MessageMaxBytes int
	// Log holds the broker-wide log defaults (log.segment.bytes, log.retention.*,
	// log.flush.*); topic configs override them.
	Log storage.Config
	// RetentionCheckInterval is how often retention runs (log.retention.check.interval.ms).
	// Default 5 minutes.
	RetentionCheckInterval time.Duration
	// FlushCheckInterval is how often logs are asked whether their flush
	// interval has passed (log.flush.scheduler.interval.ms). Default 1 second.
	FlushCheckInterval time.Duration
	// FailedLogProbeInterval is how often a partition whose log failed on a
	// write or fsync error (disk full, EIO) is tried again: once its
	// directory takes a probe write, the log is recovered and takes appends
	// (log.failure.probe.interval.ms, ferry's own). Default 5 seconds.
	FailedLogProbeInterval time.Duration
	// ProducerIDExpiration drops an idempotent producer's state on a
	// partition once it appended nothing there for this long
	// (producer.id.expiration.ms), checked on the retention loop's ticks.
	// Default 1 day, as Kafka.
	ProducerIDExpiration time.Duration
	// LogFS is the filesystem the partition logs use; nil: the real disk.
	// Tests inject faults through it (storage/errorfs).
	LogFS storage.FS
	// LogAppendTime stamps batches with the broker's time (log.message.timestamp.type=LogAppendTime).
	LogAppendTime bool
	// MaxDecompressedBytes caps how far one batch may expand when the core
	// decompresses it to validate or to serve it over HTTP. Default 64 MiB.
	MaxDecompressedBytes int
	// MaxPartitions bounds the partitions this broker holds (max.partitions,
	// as proposed in KIP-578); creates beyond it fail with ErrPartitionLimit.
	// 0: DefaultMaxPartitions.
	MaxPartitions int
	// MaxOpenLogFiles bounds the descriptors all partition logs hold open
	// together (ferry.log.open.files.max, ferry's own): segment, index and
	// checkpoint files are opened on use and the least recently used idle
	// ones closed beyond it. 0: a quarter of the file-descriptor soft limit.
	MaxOpenLogFiles int
	// AdvertisedKafkaAddr is the host:port clients are told to connect to.
	AdvertisedKafkaAddr string
	// InterBrokerDial connects the replica fetchers to the leaders'
	// inter-broker listener (nil: plain TCP; TLS when it is SSL).
	InterBrokerDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Metrics receives per-topic traffic, leader elections and log flush
	// latencies, and reads partition state at scrape time; nil: no metrics.
	Metrics *metrics.Metrics
	// ValueValidator checks record values of topics with
	// confluent.value.schema.validation=true (the schema registry); nil:
	// such topics reject every produce with a clear error.
	ValueValidator ValueValidator
	// Metadata is where topics are recorded; nil: the single-node file in
	// DataDir (replication.LocalMetadata).
	Metadata replication.Metadata
	// AwaitRoles: a cluster's broker, whose partitions neither lead nor
	// follow until the controller says (LeaderAndIsr).
	AwaitRoles bool
	// ProducerIDs reserves a cluster's producer id blocks; nil: this data
	// dir's own file reserves them (a single node).
	ProducerIDs ProducerIDSource
	// BrokerConfigs holds a cluster's dynamic broker configs (the
	// replication throttle rates); nil on a single node, which has none.
	BrokerConfigs BrokerConfigStore
	// Forwarder writes and reads the partitions other brokers lead, for
	// the HTTP gateway on a cluster (forward.go); nil: those partitions
	// answer ErrNotLeader, as on a Kafka listener.
	Forwarder Forwarder
	// ISRStore records leaders' ISR changes (a cluster's metadata); nil:
	// none are recorded (a single node makes none).
	ISRStore ISRStore
	// ZooKeeperSession is the broker's ZooKeeper session as its leaders'
	// self-fencing sees it (replication.SessionGuard, fed by the session
	// watcher); nil: a single node, never fenced.
	ZooKeeperSession *replication.SessionGuard
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has
	// not caught up for longer leaves the ISR. Default 30 s.
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchWaitMax is replica.fetch.wait.max.ms: how long a
	// follower's fetch waits at its leader for records (or for a high
	// watermark it was not told). Default 500 ms (the lag time if that
	// is shorter); at most ReplicaLagTimeMax, as Kafka requires, or an
	// idle follower would drop out of the ISR between two fetches.
	ReplicaFetchWaitMax time.Duration
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms: how often every
	// partition's high watermark is written to the data dir's
	// replication-offset-checkpoint (also written at a clean shutdown),
	// where a restarted replica resumes from. Default 5 s, as Kafka.
	HighWatermarkCheckpointInterval time.Duration
	// Cleaner is the log cleaner's settings (log.cleaner.*).
	Cleaner CleanerConfig
}

// DefaultMessageMaxBytes is Kafka's message.max.bytes default.
const DefaultMessageMaxBytes = 1048588

// Defaults fills zero fields with their defaults.
func (c *Config) Defaults() {
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.NumPartitions == 0 {
		c.NumPartitions = 1
	}
	if c.DefaultReplicationFactor == 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.MinInsyncReplicas == 0 {
		c.MinInsyncReplicas = 1
	}
	if c.ReplicaLagTimeMax == 0 {
		c.ReplicaLagTimeMax = isr.DefaultReplicaLagTimeMax
	}
	if c.ReplicaFetchWaitMax == 0 {
		// Kafka's 500 ms, or the lag time when that is set shorter: only
		// an explicit wait above the lag time is refused.
		c.ReplicaFetchWaitMax = min(500*time.Millisecond, c.ReplicaLagTimeMax)
	}
	if c.HighWatermarkCheckpointInterval == 0 {
		c.HighWatermarkCheckpointInterval = 5 * time.Second
	}
	if c.MessageMaxBytes == 0 {
		c.MessageMaxBytes = DefaultMessageMaxBytes
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = 5 * time.Minute
	}
	if c.FlushCheckInterval == 0 {
		c.FlushCheckInterval = time.Second
	}
	if c.FailedLogProbeInterval == 0 {
		c.FailedLogProbeInterval = 5 * time.Second
	}
	if c.ProducerIDExpiration == 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.MaxDecompressedBytes == 0 {
		c.MaxDecompressedBytes = 64 << 20
	}
	c.Log = c.Log.Defaults()
	c.Cleaner.Defaults()
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.BrokerID < 0:
		return fmt.Errorf("broker.id %d: must be >= 0", c.BrokerID)
	case c.NumPartitions < 1:
		return fmt.Errorf("num.partitions %d: must be >= 1", c.NumPartitions)
	case c.DefaultReplicationFactor < 1:
		return fmt.Errorf("default.replication.factor %d: must be >= 1", c.DefaultReplicationFactor)
	case c.MinInsyncReplicas < 1:
		return fmt.Errorf("min.insync.replicas %d: must be >= 1", c.MinInsyncReplicas)
	case c.ReplicaLagTimeMax < 2*time.Millisecond:
		return fmt.Errorf("replica.lag.time.max.ms %v: must be at least 2 ms", c.ReplicaLagTimeMax)
	case c.ReplicaFetchWaitMax < time.Millisecond || c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax:
		return fmt.Errorf("replica.fetch.wait.max.ms %v: must be at least 1 ms and at most replica.lag.time.max.ms (%v)", c.ReplicaFetchWaitMax, c.ReplicaLagTimeMax)
	case c.HighWatermarkCheckpointInterval <= 0:
		return fmt.Errorf("replica.high.watermark.checkpoint.interval.ms: must be > 0")
	case c.MessageMaxBytes < 64:
		return fmt.Errorf("message.max.bytes %d: must be >= 64", c.MessageMaxBytes)
	case c.RetentionCheckInterval <= 0:
		return fmt.Errorf("log.retention.check.interval.ms: must be > 0")
	case c.MaxPartitions < 0:
		return fmt.Errorf("max.partitions %d: must be >= 0", c.MaxPartitions)
	case c.MaxOpenLogFiles < 0:
		return fmt.Errorf("ferry.log.open.files.max %d: must be >= 0", c.MaxOpenLogFiles)
	case c.FlushCheckInterval <= 0:
		return fmt.Errorf("flush check interval: must be > 0")
	case c.ProducerIDExpiration <= 0:
		return fmt.Errorf("producer.id.expiration.ms: must be > 0")
	case c.FailedLogProbeInterval <= 0:
		return fmt.Errorf("log.failure.probe.interval.ms: must be > 0")
	}
	if err := c.Cleaner.Validate(); err != nil {
		return err
	}
	return c.Log.Validate()
}
