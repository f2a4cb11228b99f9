package server

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ferry-mq/ferry/replication/assign"
	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/throttle"
)

// A reassignment's plan, throttle and progress, as Kafka's
// kafka-reassign-partitions.sh works them out (--generate, --throttle,
// --verify), here from this broker's cluster view and the dynamic
// configs every broker reads: the HTTP gateway's side of Admin. The
// throttle is written with the same code as the Kafka listener's config
// changes (ChangeTopicConfigs, changeBrokerEntity), so either way of
// setting it leaves the same znodes.

// PartitionMove is a partition's target replicas (nil in a cancel).
type PartitionMove struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// ReassignmentPlan is topics' assignment now and a proposed one.
type ReassignmentPlan struct {
	Current, Proposed []PartitionMove
}

// PlanReassignment places topics' partitions on brokers with Kafka's
// assignment (rack-aware when every broker has a rack), keeping each
// topic's replication factor (--generate), from a random start as Kafka's.
func (a *Admin) PlanReassignment(topics []string, brokers []int32) (ReassignmentPlan, error) {
	return a.planReassignment(topics, brokers, rand.Uint64())
}

func (a *Admin) planReassignment(topics []string, brokers []int32, seed uint64) (ReassignmentPlan, error) {
	live := a.liveBrokers()
	var bs []assign.Broker
	for _, id := range brokers {
		i := slices.IndexFunc(live, func(b ClusterBroker) bool { return b.ID == id })
		if i < 0 {
			return ReassignmentPlan{}, fmt.Errorf("%w: broker %d is not in the cluster", ErrInvalidReplicaAssignment, id)
		}
		bs = append(bs, assign.Broker{ID: id, Rack: live[i].Rack})
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan ReassignmentPlan
	for _, t := range topics {
		info, err := a.b.DescribeTopic(t)
		if err != nil || len(info.Partitions) == 0 {
			return ReassignmentPlan{}, fmt.Errorf("%w: topic %q is not in the cluster", ErrUnknownTopic, t)
		}
		placed, err := assign.Assign(bs, len(info.Partitions), len(info.Partitions[0].Replicas), assign.Options{Rand: rng})
		if err != nil {
			return ReassignmentPlan{}, fmt.Errorf("topic %s: %w", t, err)
		}
		for i, p := range info.Partitions {
			plan.Current = append(plan.Current, PartitionMove{Topic: t, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
			plan.Proposed = append(plan.Proposed, PartitionMove{Topic: t, Partition: p.Partition, Replicas: placed[i]})
		}
	}
	sortMoves(plan.Current)
	sortMoves(plan.Proposed)
	return plan, nil
}

func sortMoves(ms []PartitionMove) {
	slices.SortFunc(ms, func(x, y PartitionMove) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
}

// liveBrokers are the brokers of the controller's last description, or
// this one alone on a single node.
func (a *Admin) liveBrokers() []ClusterBroker {
	if view, ok := a.b.Cluster(); ok {
		return view.Brokers
	}
	return []ClusterBroker{{ID: a.b.BrokerID()}}
}

// SetReassignmentThrottle limits the copying of moves to rate bytes/s
// (Kafka's --throttle): the leader and follower rates on every broker
// holding or receiving a moved replica, and on each topic the current
// replicas throttled as leaders, the added ones as followers.
func (a *Admin) SetReassignmentThrottle(moves []PartitionMove, rate int64) error {
	if rate <= 0 {
		return fmt.Errorf("%w: the throttle must be a positive number of bytes/s, not %d", ErrInvalidConfig, rate)
	}
	var tm []throttle.Move
	for _, m := range moves {
		info, err := a.b.DescribeTopic(m.Topic)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(info.Partitions, func(p PartitionInfo) bool { return p.Partition == m.Partition })
		if i < 0 {
			return fmt.Errorf("%w: partition %s-%d is not in the cluster", ErrUnknownPartition, m.Topic, m.Partition)
		}
		tm = append(tm, throttle.Move{Topic: m.Topic, Partition: m.Partition, Current: info.Partitions[i].Replicas, Target: m.Replicas})
	}
	plan := throttle.PlanMoves(tm)
	v := strconv.FormatInt(rate, 10)
	rates := []ConfigOp{{Name: CfgLeaderThrottledRate, Op: ConfigSet, Value: v}, {Name: CfgFollowerThrottledRate, Op: ConfigSet, Value: v}}
	for _, id := range plan.Brokers {
		if err := a.b.changeBrokerEntity(strconv.Itoa(int(id)), rates, false); err != nil {
			return fmt.Errorf("set the throttle rate of broker %d: %w", id, err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(plan.Leaders)) {
		ops := []ConfigOp{{Name: CfgLeaderThrottledReplicas, Op: ConfigSet, Value: plan.Leaders[t]}}
		if f, ok := plan.Followers[t]; ok {
			ops = append(ops, ConfigOp{Name: CfgFollowerThrottledReplicas, Op: ConfigSet, Value: f})
		}
		if err := a.b.ChangeTopicConfigs(t, ops, false, false); err != nil {
			return fmt.Errorf("throttle the replicas of %s: %w", t, err)
		}
	}
	return nil
}

// ClearReplicationThrottle removes the throttle rates from every live
// broker and the throttled-replica lists from every topic (Kafka's
// --verify once the move is done); removed says whether there were any.
func (a *Admin) ClearReplicationThrottle() (removed bool, err error) {
	rates := []ConfigOp{{Name: CfgLeaderThrottledRate, Op: ConfigDelete}, {Name: CfgFollowerThrottledRate, Op: ConfigDelete}}
	for _, br := range a.liveBrokers() {
		if a.b.cfg.BrokerConfigs == nil {
			break // a single node has no throttle rates
		}
		entity := strconv.Itoa(int(br.ID))
		own, err := a.b.cfg.BrokerConfigs.BrokerConfigs(entity)
		if err != nil {
			return removed, fmt.Errorf("%w: read broker configs %s: %v", ErrStorage, entity, err)
		}
		if _, l := own[CfgLeaderThrottledRate]; !l {
			if _, f := own[CfgFollowerThrottledRate]; !f {
				continue
			}
		}
		if err := a.b.changeBrokerEntity(entity, rates, false); err != nil {
			return removed, fmt.Errorf("remove the throttle rates of broker %d: %w", br.ID, err)
		}
		removed = true
	}
	lists := []ConfigOp{{Name: CfgLeaderThrottledReplicas, Op: ConfigDelete}, {Name: CfgFollowerThrottledReplicas, Op: ConfigDelete}}
	for _, t := range a.b.KnownTopics() {
		info, err := a.b.DescribeTopic(t)
		if err != nil || !hasThrottledReplicas(info.Configs) {
			continue
		}
		if err := a.b.ChangeTopicConfigs(t, lists, false, false); err != nil {
			return removed, fmt.Errorf("remove the throttled replicas of %s: %w", t, err)
		}
		removed = true
	}
	return removed, nil
}

func hasThrottledReplicas(cfgs []ConfigEntry) bool {
	for _, c := range cfgs {
		if (c.Name == CfgLeaderThrottledReplicas || c.Name == CfgFollowerThrottledReplicas) && c.Value != "" {
			return true
		}
	}
	return false
}

// ReplicationThrottleRate is the highest leader or follower throttle rate
// in force on a live broker (its own or every broker's default; 0: none).
func (a *Admin) ReplicationThrottleRate() (int64, error) {
	store := a.b.cfg.BrokerConfigs
	if store == nil {
		return 0, nil
	}
	def, err := store.BrokerConfigs(DefaultBrokerEntity)
	if err != nil {
		return 0, fmt.Errorf("%w: read broker configs: %v", ErrStorage, err)
	}
	var highest int64
	for _, br := range a.liveBrokers() {
		own, err := store.BrokerConfigs(strconv.Itoa(int(br.ID)))
		if err != nil {
			return 0, fmt.Errorf("%w: read broker configs %d: %v", ErrStorage, br.ID, err)
		}
		for _, key := range []string{CfgLeaderThrottledRate, CfgFollowerThrottledRate} {
			v, ok := own[key]
			if !ok {
				v, ok = def[key]
			}
			if n, err := parseLong(v); ok && err == nil && n != throttle.Unlimited {
				highest = max(highest, n)
			}
		}
	}
	return highest, nil
}

// MoveProgress counts the bytes of a move: BytesToCopy is the leader's
// log size once per adding replica, BytesCopied what those replicas hold
// of it (each counted up to the leader's size).
type MoveProgress struct {
	BytesCopied, BytesToCopy int64
}

// ReassignmentProgress measures moving partitions from the sizes of
// their replicas (this broker's own, the others' through the peers).
// Best effort: a partition whose leader or an adding replica's broker did
// not answer within ctx is left out.
func (a *Admin) ReassignmentProgress(ctx context.Context, moving map[controller.TopicPartition]controller.Assignment) map[controller.TopicPartition]MoveProgress {
	view, _ := a.b.Cluster()
	leaders := map[controller.TopicPartition]int32{}
	asked := map[int32][]controller.TopicPartition{}
	for tp, as := range moving {
		leader := int32(-1)
		if pv, ok := view.Partition(tp.Topic, tp.Partition); ok {
			leader = pv.Leader
		} else if p, err := a.b.Partition(tp.Topic, tp.Partition); err == nil {
			leader = p.Leader()
		}
		leaders[tp] = leader
		for _, b := range append([]int32{leader}, as.Adding...) {
			if !slices.Contains(asked[b], tp) {
				asked[b] = append(asked[b], tp)
			}
		}
	}
	sizes := a.replicaSizes(ctx, asked)
	out := map[controller.TopicPartition]MoveProgress{}
	for tp, as := range moving {
		full, ok := sizes[leaders[tp]][tp]
		if !ok {
			continue
		}
		var mp MoveProgress
		for _, b := range as.Adding {
			held, known := sizes[b]
			if !known {
				ok = false
				break
			}
			mp.BytesToCopy += full
			mp.BytesCopied += min(held[tp], full)
		}
		if ok {
			out[tp] = mp
		}
	}
	return out
}

// replicaSizes are each asked broker's sizes of the partitions asked of
// it; a broker that did not answer is absent.
func (a *Admin) replicaSizes(ctx context.Context, asked map[int32][]controller.TopicPartition) map[int32]map[controller.TopicPartition]int64 {
	out := map[int32]map[controller.TopicPartition]int64{}
	self := a.b.BrokerID()
	if _, ok := asked[self]; ok {
		own := map[controller.TopicPartition]int64{}
		for _, p := range a.b.LocalReplicas() {
			own[controller.TopicPartition{Topic: p.Topic(), Partition: p.Index()}] = p.Size()
		}
		out[self] = own
	}
	if a.peers == nil {
		return out
	}
	// Asked together: one broker that does not answer costs the wait
	// once, not once per broker after it.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for b, parts := range asked {
		if b == self || b < 0 {
			continue
		}
		wg.Go(func() {
			got, err := a.peers.LogDirSizes(ctx, b, parts)
			if err != nil {
				return
			}
			mu.Lock()
			out[b] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
