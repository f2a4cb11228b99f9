package kcli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// The replication throttle of a reassignment, set and removed as Kafka's
// kafka-reassign-partitions.sh does: --execute --throttle sets
// leader.replication.throttled.rate and follower.replication.throttled.rate
// on every broker holding or receiving a moved replica, and on each topic
// throttles the current replicas as leaders and the new ones as followers;
// --verify removes all of it once every partition is done.

// Broker and topic config names of the throttle.
const (
	leaderRate        = "leader.replication.throttled.rate"
	followerRate      = "follower.replication.throttled.rate"
	leaderReplicas    = "leader.replication.throttled.replicas"
	followerReplicas  = "follower.replication.throttled.replicas"
	throttleUnlimited = "9223372036854775807"
)

// ThrottlePlan is what --throttle sets for a move: the brokers that get
// the rates, and each topic's throttled-replica lists.
type ThrottlePlan struct {
	Brokers []int32
	// Leaders and Followers map a topic to its list values
	// ("partition:broker,…").
	Leaders, Followers map[string]string
}

// PlanThrottle works out the throttle for moving r's partitions from
// their replicas in md: the current replicas copy as leaders, the added
// ones fetch as followers.
func PlanThrottle(md kadm.Metadata, r Reassignment) (ThrottlePlan, error) {
	var moves []throttle.Move
	for _, p := range r.Partitions {
		td, ok := md.Topics[p.Topic]
		if !ok || td.Err != nil {
			return ThrottlePlan{}, fmt.Errorf("topic %q is not in the cluster", p.Topic)
		}
		pd, ok := td.Partitions[p.Partition]
		if !ok {
			return ThrottlePlan{}, fmt.Errorf("partition %s-%d is not in the cluster", p.Topic, p.Partition)
		}
		moves = append(moves, throttle.Move{Topic: p.Topic, Partition: p.Partition, Current: pd.Replicas, Target: p.Replicas})
	}
	plan := throttle.PlanMoves(moves)
	return ThrottlePlan{Brokers: plan.Brokers, Leaders: plan.Leaders, Followers: plan.Followers}, nil
}

// SetThrottle applies plan at rate bytes/s.
func SetThrottle(ctx context.Context, adm *kadm.Client, plan ThrottlePlan, rate int64) error {
	if rate <= 0 {
		return fmt.Errorf("the throttle must be a positive number of bytes/s, not %d", rate)
	}
	v := strconv.FormatInt(rate, 10)
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderRate, Value: &v},
		{Op: kadm.SetConfig, Name: followerRate, Value: &v},
	}, plan.Brokers...)
	if err := configResult(res, err); err != nil {
		return fmt.Errorf("set the throttle rate: %w", err)
	}
	for _, t := range slices.Sorted(maps.Keys(plan.Leaders)) {
		cfgs := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderReplicas, Value: ptr(plan.Leaders[t])}}
		if f, ok := plan.Followers[t]; ok {
			cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerReplicas, Value: ptr(f)})
		}
		res, err := adm.AlterTopicConfigs(ctx, cfgs, t)
		if err := configResult(res, err); err != nil {
			return fmt.Errorf("throttle the replicas of %s: %w", t, err)
		}
	}
	return nil
}

func ptr(s string) *string { return &s }

func configResult(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			msg := r.Err.Error()
			if r.ErrMessage != "" {
				msg += ": " + r.ErrMessage
			}
			return fmt.Errorf("%s: %s", r.Name, msg)
		}
	}
	return nil
}

// ClearThrottles removes the throttle rates from every broker and the
// throttled-replica lists from every topic that has them (topics nil: all
// topics). It reports whether anything was removed.
func ClearThrottles(ctx context.Context, adm *kadm.Client, topics []string) (bool, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return false, err
	}
	removed := false
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	described, err := adm.DescribeBrokerConfigs(ctx, brokers...)
	if err != nil {
		return false, err
	}
	var throttled []int32
	for _, rc := range described {
		if rc.Err == nil && (dynamic(rc, leaderRate) || dynamic(rc, followerRate)) {
			id, _ := strconv.ParseInt(rc.Name, 10, 32)
			throttled = append(throttled, int32(id))
		}
	}
	if len(throttled) > 0 {
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderRate}, {Op: kadm.DeleteConfig, Name: followerRate},
		}, throttled...)
		if err := configResult(res, err); err != nil {
			return false, fmt.Errorf("remove the throttle rates: %w", err)
		}
		removed = true
	}
	names := md.Topics.Names()
	if len(names) == 0 {
		return removed, nil
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return removed, err
	}
	for _, rc := range tcs {
		if rc.Err != nil || !(overridden(rc, leaderReplicas) || overridden(rc, followerReplicas)) {
			continue
		}
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderReplicas}, {Op: kadm.DeleteConfig, Name: followerReplicas},
		}, rc.Name)
		if err := configResult(res, err); err != nil {
			return removed, fmt.Errorf("remove the throttled replicas of %s: %w", rc.Name, err)
		}
		removed = true
	}
	return removed, nil
}

// dynamic reports whether a broker's config is set at run time.
func dynamic(rc kadm.ResourceConfig, name string) bool {
	for _, c := range rc.Configs {
		if c.Key == name && c.Value != nil && *c.Value != throttleUnlimited &&
			(c.Source == kmsg.ConfigSourceDynamicBrokerConfig || c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
			return true
		}
	}
	return false
}

func overridden(rc kadm.ResourceConfig, name string) bool {
	for _, c := range rc.Configs {
		if c.Key == name && c.Value != nil && *c.Value != "" {
			return true
		}
	}
	return false
}

// ThrottleRate is the highest throttle rate set on any broker (0: none).
func ThrottleRate(ctx context.Context, adm *kadm.Client) (int64, error) {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, err
	}
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	described, err := adm.DescribeBrokerConfigs(ctx, brokers...)
	if err != nil {
		return 0, err
	}
	var highest int64
	for _, rc := range described {
		for _, c := range rc.Configs {
			if (c.Key == leaderRate || c.Key == followerRate) && c.Value != nil && *c.Value != throttleUnlimited {
				if n, err := strconv.ParseInt(*c.Value, 10, 64); err == nil {
					highest = max(highest, n)
				}
			}
		}
	}
	return highest, nil
}

// MoveProgress is one moving partition's copy: BytesToCopy is the
// leader's size once per adding replica, BytesCopied what those replicas
// hold of it.
type MoveProgress struct {
	Topic                    string
	Partition                int32
	BytesCopied, BytesToCopy int64
}

// Progress measures the moves in progress from every broker's log dirs
// (DescribeLogDirs): what each adding replica holds of its leader's log.
func Progress(ctx context.Context, adm *kadm.Client, moving kadm.ListPartitionReassignmentsResponses) ([]MoveProgress, error) {
	if len(moving) == 0 {
		return nil, nil
	}
	set := kadm.TopicsSet{}
	for t, ps := range moving {
		for p := range ps {
			set.Add(t, p)
		}
	}
	md, err := adm.Metadata(ctx, set.Topics()...)
	if err != nil {
		return nil, err
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, err
	}
	size := map[int32]map[string]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if size[p.Broker] == nil {
				size[p.Broker] = map[string]map[int32]int64{}
			}
			if size[p.Broker][p.Topic] == nil {
				size[p.Broker][p.Topic] = map[int32]int64{}
			}
			size[p.Broker][p.Topic][p.Partition] += p.Size
		})
	})
	var out []MoveProgress
	for _, t := range slices.Sorted(maps.Keys(moving)) {
		for _, p := range slices.Sorted(maps.Keys(moving[t])) {
			leader := int32(-1)
			if pd, ok := md.Topics[t].Partitions[p]; ok {
				leader = pd.Leader
			}
			full := size[leader][t][p]
			mp := MoveProgress{Topic: t, Partition: p}
			for _, b := range moving[t][p].AddingReplicas {
				mp.BytesToCopy += full
				mp.BytesCopied += min(size[b][t][p], full)
			}
			out = append(out, mp)
		}
	}
	return out, nil
}

// ProgressBar draws "[#####.....]  52% 10.0 MiB of 19.1 MiB" for a move.
func ProgressBar(w io.Writer, label string, copied, total int64) {
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = float64(copied) / float64(total)
	}
	n := int(frac * width)
	fmt.Fprintf(w, "%-24s [%s%s] %3d%% %s of %s\n", label, strings.Repeat("#", n), strings.Repeat(".", width-n),
		int(frac*100), humanBytes(copied), humanBytes(total))
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
