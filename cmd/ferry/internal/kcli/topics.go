package kcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicSpec is what `ferry topics create` asks for.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1: the broker's num.partitions
	ReplicationFactor int16 // -1: the broker's default
	Configs           map[string]string
	// Assignment, when set, places partition i on Assignment[i]
	// (kafka-topics.sh --replica-assignment); Partitions and
	// ReplicationFactor are then -1.
	Assignment [][]int32
}

// TopicAlter is what `ferry topics alter` asks for; zero fields change nothing.
type TopicAlter struct {
	Name       string
	Partitions int32 // new total partition count; 0 leaves it
	Set        map[string]string
	Delete     []string
}

// PartitionInfo describes one partition for `ferry topics describe`.
type PartitionInfo struct {
	kadm.PartitionDetail
	StartOffset, EndOffset int64 // -1 when unknown
}

// TopicInfo describes one topic for `ferry topics describe`.
type TopicInfo struct {
	Name       string
	ID         kadm.TopicID
	Internal   bool
	Partitions []PartitionInfo
	Configs    []kadm.Config
	Err        error
}

// BrokerError is a per-resource error a broker answered, with its
// message, if any.
type BrokerError struct {
	Op, Name string
	Err      error // the Kafka error code's error (kerr)
	Message  string
}

func (e *BrokerError) Error() string {
	if e.Message != "" && !strings.Contains(e.Err.Error(), e.Message) {
		return fmt.Sprintf("%s %q: %v: %s", e.Op, e.Name, e.Err, e.Message)
	}
	return fmt.Sprintf("%s %q: %v", e.Op, e.Name, e.Err)
}

func (e *BrokerError) Unwrap() error { return e.Err }

// Words is what Kafka's tools print for the error: the broker's message,
// or the error code's description.
func (e *BrokerError) Words() string {
	if e.Message != "" {
		return e.Message
	}
	var ke *kerr.Error
	if errors.As(e.Err, &ke) {
		return ke.Description
	}
	return e.Err.Error()
}

// brokerErr joins a per-resource error with the broker's message, if any.
func brokerErr(op, name string, err error, msg string) error {
	if err == nil {
		return nil
	}
	return &BrokerError{Op: op, Name: name, Err: err, Message: msg}
}

// CreateTopic creates one topic.
func CreateTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec) error {
	configs := make(map[string]*string, len(spec.Configs))
	for k, v := range spec.Configs {
		configs[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, spec.Partitions, spec.ReplicationFactor, configs, spec.Name)
	if resp.Err != nil {
		return brokerErr("create topic", spec.Name, resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// CreateTopicAssigned creates a topic with its replicas placed by hand
// (spec.Assignment), which kadm's CreateTopics cannot ask for.
func CreateTopicAssigned(ctx context.Context, cl *kgo.Client, spec TopicSpec) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, -1, -1
	for i, replicas := range spec.Assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	for k, v := range spec.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %q: %d topics in the answer", spec.Name, len(resp.Topics))
	}
	r := resp.Topics[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return brokerErr("create topic", spec.Name, kerr.ErrorForCode(r.ErrorCode), msg)
}

// ListTopics returns the names of the non-internal topics, sorted.
func ListTopics(ctx context.Context, adm *kadm.Client) ([]string, error) {
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	names := topics.Names()
	sort.Strings(names)
	return names, nil
}

// DeleteTopic deletes one topic.
func DeleteTopic(ctx context.Context, adm *kadm.Client, name string) error {
	resp, err := adm.DeleteTopic(ctx, name)
	if resp.Err != nil {
		return brokerErr("delete topic", name, resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// AlterTopic grows the partition count and sets or deletes configs.
func AlterTopic(ctx context.Context, adm *kadm.Client, a TopicAlter) error {
	if a.Partitions > 0 {
		resps, err := adm.UpdatePartitions(ctx, int(a.Partitions), a.Name)
		if err != nil {
			return fmt.Errorf("alter partitions of %q: %w", a.Name, err)
		}
		resp := resps[a.Name]
		if err := brokerErr("alter partitions of", a.Name, resp.Err, resp.ErrMessage); err != nil {
			return err
		}
	}
	var alters []kadm.AlterConfig
	for k, v := range a.Set {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range a.Delete {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return nil
	}
	resps, err := adm.AlterTopicConfigs(ctx, alters, a.Name)
	if err != nil {
		return fmt.Errorf("alter configs of %q: %w", a.Name, err)
	}
	for _, r := range resps {
		if err := brokerErr("alter configs of", a.Name, r.Err, r.ErrMessage); err != nil {
			return err
		}
	}
	return nil
}

// DescribeTopics describes the named topics, or every non-internal topic
// when names is empty: partitions with leader, replicas, ISR and start/end
// offsets, and configs. A topic that does not exist has Err set.
func DescribeTopics(ctx context.Context, adm *kadm.Client, names ...string) ([]TopicInfo, error) {
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	return DescribeTopicDetails(ctx, adm, details)
}

// DescribeTopicDetails is DescribeTopics for topics already listed.
func DescribeTopicDetails(ctx context.Context, adm *kadm.Client, details kadm.TopicDetails) ([]TopicInfo, error) {
	var found []string
	for _, d := range details {
		if d.Err == nil {
			found = append(found, d.Topic)
		}
	}
	starts, ends, configs, err := offsetsAndConfigs(ctx, adm, found)
	if err != nil {
		return nil, err
	}
	var infos []TopicInfo
	for _, d := range details.Sorted() {
		info := TopicInfo{Name: d.Topic, ID: d.ID, Internal: d.IsInternal, Err: d.Err}
		for _, p := range d.Partitions.Sorted() {
			info.Partitions = append(info.Partitions, PartitionInfo{PartitionDetail: p,
				StartOffset: offsetOf(starts, d.Topic, p.Partition), EndOffset: offsetOf(ends, d.Topic, p.Partition)})
		}
		if rc, err := configs.On(d.Topic, nil); err == nil {
			info.Configs = rc.Configs
		}
		infos = append(infos, info)
	}
	return infos, nil
}

func offsetsAndConfigs(ctx context.Context, adm *kadm.Client, topics []string) (starts, ends kadm.ListedOffsets, configs kadm.ResourceConfigs, err error) {
	if len(topics) == 0 {
		return nil, nil, nil, nil
	}
	// A partition or topic that fails (one deleted meanwhile, say) shows
	// without offsets or configs rather than failing the whole answer.
	if starts, err = adm.ListStartOffsets(ctx, topics...); partialErr(err) != nil {
		return nil, nil, nil, fmt.Errorf("list start offsets: %w", err)
	}
	if ends, err = adm.ListEndOffsets(ctx, topics...); partialErr(err) != nil {
		return nil, nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	if configs, err = adm.DescribeTopicConfigs(ctx, topics...); partialErr(err) != nil {
		return nil, nil, nil, fmt.Errorf("describe configs: %w", err)
	}
	return starts, ends, configs, nil
}

// partialErr drops kadm's error for a request that the brokers answered
// with per-partition or per-topic errors; those show as missing values.
func partialErr(err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		return nil
	}
	return err
}

func offsetOf(l kadm.ListedOffsets, topic string, p int32) int64 {
	if o, ok := l.Lookup(topic, p); ok && o.Err == nil {
		return o.Offset
	}
	return -1
}

// WriteTopicInfos prints topics as kafka-topics.sh --describe does, with
// each partition's start and end offsets added. Only configs set on the
// topic are shown unless allConfigs.
func WriteTopicInfos(w io.Writer, infos []TopicInfo, allConfigs bool) {
	for _, t := range infos {
		if t.Err != nil {
			fmt.Fprintf(w, "Topic: %s\tError: %v\n", t.Name, t.Err)
			continue
		}
		rf := 0
		if len(t.Partitions) > 0 {
			rf = len(t.Partitions[0].Replicas)
		}
		fmt.Fprintf(w, "Topic: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
			t.Name, len(t.Partitions), rf, formatConfigs(t.Configs, allConfigs))
		for _, p := range t.Partitions {
			fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %d\tReplicas: %s\tIsr: %s\tStartOffset: %s\tEndOffset: %s\n",
				t.Name, p.Partition, p.Leader, joinInt32(p.Replicas), joinInt32(p.ISR), dashIfNeg(p.StartOffset), dashIfNeg(p.EndOffset))
		}
	}
}

func formatConfigs(configs []kadm.Config, all bool) string {
	var kv []string
	for _, c := range configs {
		if !all && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		kv = append(kv, c.Key+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func joinInt32(ns []int32) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
