package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// The replication throttle, as Kafka names it: each broker has a leader
// rate (bytes/s it serves to followers of throttled replicas that are not
// in sync) and a follower rate (bytes/s it fetches for its throttled
// replicas that have not caught up), dynamic broker configs set per
// broker id or for every broker (<default>); the topic configs
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name the replicas they apply
// to. A reassignment throttles its sources as leaders and its new
// replicas as followers, so the copy does not starve producers.

// Dynamic broker config keys.
const (
	CfgLeaderThrottledRate   = "leader.replication.throttled.rate"
	CfgFollowerThrottledRate = "follower.replication.throttled.rate"
)

// DefaultBrokerEntity names the configs of every broker that has no own
// value (Kafka's /config/brokers/<default>).
const DefaultBrokerEntity = "<default>"

// BrokerConfigStore keeps dynamic broker configs where every broker reads
// them (ZooKeeper's /config/brokers/<entity>) and tells every broker of a
// change.
type BrokerConfigStore interface {
	// BrokerConfigs are an entity's (a broker id or DefaultBrokerEntity)
	// overrides; none is an empty map.
	BrokerConfigs(entity string) (map[string]string, error)
	// SetBrokerConfigs replaces an entity's overrides and notifies the
	// brokers.
	SetBrokerConfigs(entity string, cfgs map[string]string) error
}

// dynamicBrokerConfigs are the broker configs a cluster changes at run
// time, with their checks: the replication throttle rates here, the log
// defaults and cleaner threads of dynamicconfigs.go.
var dynamicBrokerConfigs = map[string]func(string) error{
	CfgLeaderThrottledRate:   longAtLeast(0),
	CfgFollowerThrottledRate: longAtLeast(0),
	CfgLogRetentionMs:        longAtLeast(-1),
	CfgLogRetentionMinutes:   intBetween(-1, math.MaxInt32),
	CfgLogRetentionHours:     intBetween(-1, math.MaxInt32),
	CfgLogRetentionBytes:     longAtLeast(-1),
	CfgLogSegmentBytes:       intBetween(14, math.MaxInt32),
	CfgLogRollMs:             longAtLeast(1),
	CfgLogRollHours:          intBetween(1, math.MaxInt32),
	CfgLogCleanerThreads:     intBetween(1, maxCleanerThreads),
	CfgLogFlushMessages:      longAtLeast(1),
	CfgLogFlushMs:            longAtLeast(0),
	CfgLogIndexInterval:      intBetween(0, math.MaxInt32),
	CfgBrokerMinISR:          intBetween(1, math.MaxInt32),
	CfgCleanerBackoffMs:      longAtLeast(0),
	CfgCleanerDeleteRetMs:    longAtLeast(0),
	CfgCleanerMinLagMs:       longAtLeast(0),
	CfgCleanerMaxLagMs:       longAtLeast(1),
	CfgCleanerMinCleanRatio:  doubleBetween(0, 1),
}

// replicationThrottle holds the broker's two rates.
type replicationThrottle struct {
	leader, follower throttle.Rate
}

// ChangeBrokerConfigs applies ops to the dynamic configs of entity (a
// broker id, or "" or DefaultBrokerEntity for every broker), all or none.
// Only the replication throttle rates change at run time; other broker
// settings are static (INVALID_CONFIG names them).
func (b *Broker) ChangeBrokerConfigs(entity string, ops []ConfigOp, validateOnly bool) error {
	entity, err := b.brokerEntity(entity)
	if err != nil {
		return err
	}
	return b.changeBrokerEntity(entity, ops, validateOnly)
}

// changeBrokerEntity applies ops to the dynamic configs of entity (a
// broker id, any broker's, or DefaultBrokerEntity), all or none: the
// Kafka listener's changes of this broker's configs, and Admin's of the
// brokers a reassignment throttles (as Kafka's ZooKeeper-era admin
// client writes /config/brokers/<id> of any broker).
func (b *Broker) changeBrokerEntity(entity string, ops []ConfigOp, validateOnly bool) error {
	for _, op := range ops {
		check, ok := dynamicBrokerConfigs[op.Name]
		switch {
		case !ok:
			return fmt.Errorf("%w: broker config %q cannot be changed while the broker runs; the dynamic ones are %s",
				ErrInvalidConfig, op.Name, strings.Join(slices.Sorted(maps.Keys(dynamicBrokerConfigs)), ", "))
		case op.Op != ConfigSet && op.Op != ConfigDelete:
			return fmt.Errorf("%w: %q is a number; only SET and DELETE apply", ErrInvalidConfig, op.Name)
		case op.Op == ConfigSet:
			if err := check(op.Value); err != nil {
				return fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, op.Name, op.Value, err)
			}
			if n, _ := parseLong(op.Value); op.Name == CfgLogCleanerThreads && b.cfg.Cleaner.DedupeBufferSize/n < 1<<10 {
				// Each thread's offset map is its share of the buffer.
				return fmt.Errorf("%w: %s=%d: log.cleaner.dedupe.buffer.size %d is too small for that many threads",
					ErrInvalidConfig, op.Name, n, b.cfg.Cleaner.DedupeBufferSize)
			}
		}
	}
	if b.cfg.BrokerConfigs == nil {
		return fmt.Errorf("%w: dynamic broker configs need a cluster (--zookeeper)", ErrInvalidRequest)
	}
	if validateOnly {
		return nil
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	cfgs, err := b.cfg.BrokerConfigs.BrokerConfigs(entity)
	if err != nil {
		return fmt.Errorf("%w: read broker configs %s: %v", ErrStorage, entity, err)
	}
	next := maps.Clone(cfgs)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Op == ConfigSet {
			next[op.Name] = op.Value
		} else {
			delete(next, op.Name)
		}
	}
	if maps.Equal(next, cfgs) {
		return nil
	}
	if err := b.cfg.BrokerConfigs.SetBrokerConfigs(entity, next); err != nil {
		return fmt.Errorf("%w: write broker configs %s: %v", ErrStorage, entity, err)
	}
	return b.reloadBrokerConfigsLocked()
}

// brokerEntity names the configs a broker resource means: this broker's
// id, or the default for "".
func (b *Broker) brokerEntity(name string) (string, error) {
	switch name {
	case "", DefaultBrokerEntity:
		return DefaultBrokerEntity, nil
	case strconv.Itoa(int(b.cfg.BrokerID)):
		return name, nil
	}
	return "", fmt.Errorf("%w: broker %q: this is broker %d (send a broker's configs to that broker)", ErrInvalidRequest, name, b.cfg.BrokerID)
}

// ReloadBrokerConfigs re-reads this broker's dynamic configs: another
// broker changed them, or the broker starts.
func (b *Broker) ReloadBrokerConfigs() error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	return b.reloadBrokerConfigsLocked()
}

func (b *Broker) reloadBrokerConfigsLocked() error {
	if b.cfg.BrokerConfigs == nil {
		return nil
	}
	own, def, err := b.readBrokerConfigs()
	if err != nil {
		return err
	}
	rate := func(key string) int64 {
		v, ok := own[key]
		if !ok {
			v, ok = def[key]
		}
		n, err := parseLong(v)
		if !ok || err != nil {
			return throttle.Unlimited
		}
		return n
	}
	now := time.Now()
	leader, follower := rate(CfgLeaderThrottledRate), rate(CfgFollowerThrottledRate)
	if leader != b.throttle.leader.Limit() || follower != b.throttle.follower.Limit() {
		b.logger.Info("replication throttle", "leader_bytes_per_sec", leader, "follower_bytes_per_sec", follower)
	}
	b.throttle.leader.SetLimit(leader, now)
	b.throttle.follower.SetLimit(follower, now)
	b.applyDynamicLocked(own, def)
	return nil
}

func (b *Broker) readBrokerConfigs() (own, def map[string]string, err error) {
	own, err = b.cfg.BrokerConfigs.BrokerConfigs(strconv.Itoa(int(b.cfg.BrokerID)))
	if err == nil {
		def, err = b.cfg.BrokerConfigs.BrokerConfigs(DefaultBrokerEntity)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: read broker configs: %v", ErrStorage, err)
	}
	return own, def, nil
}

// DynamicBrokerConfig is one dynamic broker config as described: its
// value and whether it is this broker's own (else every broker's
// default).
type DynamicBrokerConfig struct {
	Name, Value string
	Default     bool
}

// DynamicBrokerConfigs lists the dynamic configs in force on this broker,
// sorted by name.
func (b *Broker) DynamicBrokerConfigs() ([]DynamicBrokerConfig, error) {
	if b.cfg.BrokerConfigs == nil {
		return nil, nil
	}
	own, def, err := b.readBrokerConfigs()
	if err != nil {
		return nil, err
	}
	var out []DynamicBrokerConfig
	for _, name := range slices.Sorted(maps.Keys(dynamicBrokerConfigs)) {
		if v, ok := own[name]; ok {
			out = append(out, DynamicBrokerConfig{Name: name, Value: v})
		} else if v, ok := def[name]; ok {
			out = append(out, DynamicBrokerConfig{Name: name, Value: v, Default: true})
		}
	}
	return out, nil
}

// ReplicationThrottleRates are the leader and follower rates in force
// (throttle.Unlimited: none).
func (b *Broker) ReplicationThrottleRates() (leader, follower int64) {
	return b.throttle.leader.Limit(), b.throttle.follower.Limit()
}

// LeaderThrottle reports whether a follower's fetch of a partition this
// broker leads counts against the leader rate (the topic throttles this
// replica as a leader and the follower is not in the ISR), and how long
// until the rate allows it (0: now).
func (b *Broker) LeaderThrottle(topicName string, p Partition, replica int32) (throttled bool, delay time.Duration) {
	t, err := b.lookup(topicName)
	if err != nil || !t.settings.leaderThrottled.Has(p.Index(), b.cfg.BrokerID) || slices.Contains(p.ISR(), replica) {
		return false, 0
	}
	return true, b.throttle.leader.Delay(time.Now())
}

// RecordLeaderThrottled counts bytes served to a throttled follower.
func (b *Broker) RecordLeaderThrottled(n int) { b.throttle.leader.Record(n, time.Now()) }

// followerThrottle is the fetchers' side of the throttle (fetcher.Throttle).
type followerThrottle struct{ b *Broker }

func (f followerThrottle) Throttled(topicName string, partition int32) bool {
	t, err := f.b.lookup(topicName)
	return err == nil && t.settings.followerThrottled.Has(partition, f.b.cfg.BrokerID)
}

func (f followerThrottle) Delay(now time.Time) time.Duration { return f.b.throttle.follower.Delay(now) }

func (f followerThrottle) Record(n int, now time.Time) { f.b.throttle.follower.Record(n, now) }
