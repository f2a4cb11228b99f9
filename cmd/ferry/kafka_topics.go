package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// topicsOptions are kafka-topics.sh's options.
type topicsOptions struct {
	create, list, describe, alter, delete                                 bool
	topic, replicaAssignment                                              string
	partitions, replicationFactor                                         int64
	configs, deleteConfigs                                                stringList
	ifExists, ifNotExists, excludeInternal, withOverrides                 bool
	underReplicated, underMinISR, atMinISR, unavailable, disableRackAware bool
}

// kafkaTopics is kafka-topics.sh.
func kafkaTopics(args []string) error {
	t := newKafkaTool("kafka-topics.sh", "Create, delete, describe, or change a topic.", "command-config", true)
	o := topicsOptions{partitions: -1, replicationFactor: -1}
	t.flag(&o.create, "create", "Create a new topic.")
	t.flag(&o.list, "list", "List all available topics.")
	t.flag(&o.describe, "describe", "List details for the given topics.")
	t.flag(&o.alter, "alter", "Alter the number of partitions and replica assignment.")
	t.flag(&o.delete, "delete", "Delete a topic.")
	t.str(&o.topic, "topic", "String: topic", "The topic to create, alter, describe or delete. It also accepts a regular expression, except for --create.")
	t.num(&o.partitions, "partitions", "Integer: # of partitions", "The number of partitions for the topic being created or altered.")
	t.num(&o.replicationFactor, "replication-factor", "Integer: replication factor", "The replication factor for each partition in the topic being created.")
	t.str(&o.replicaAssignment, "replica-assignment", "broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , …", "A list of manual partition-to-broker assignments for the topic being created or altered.")
	t.list(&o.configs, "config", "String: name=value", "A topic configuration override for the topic being created or altered (repeatable).")
	t.list(&o.deleteConfigs, "delete-config", "String: name", "A topic configuration override to be removed for an existing topic (repeatable).")
	t.flag(&o.ifExists, "if-exists", "If set when altering or deleting or describing topics, the action will only execute if the topic exists.")
	t.flag(&o.ifNotExists, "if-not-exists", "If set when creating topics, the action will only execute if the topic does not already exist.")
	t.flag(&o.excludeInternal, "exclude-internal", "Exclude internal topics when running list or describe command.")
	t.flag(&o.withOverrides, "topics-with-overrides", "If set when describing topics, only show topics that have overridden configs.")
	t.flag(&o.underReplicated, "under-replicated-partitions", "If set when describing topics, only show under replicated partitions.")
	t.flag(&o.underMinISR, "under-min-isr-partitions", "If set when describing topics, only show partitions whose isr count is less than the configured minimum.")
	t.flag(&o.atMinISR, "at-min-isr-partitions", "If set when describing topics, only show partitions whose isr count is equal to the configured minimum.")
	t.flag(&o.unavailable, "unavailable-partitions", "If set when describing topics, only show partitions whose leader is not available.")
	t.flag(&o.disableRackAware, "disable-rack-aware", "Disable rack aware replica assignment (accepted; the brokers place replicas).")
	if err := t.parse(args); err != nil {
		return err
	}
	if n := countTrue(o.create, o.list, o.describe, o.alter, o.delete); n != 1 {
		return t.usage("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
	}
	if (o.create || o.alter || o.delete) && o.topic == "" {
		return t.usage("Missing required argument \"[topic]\"")
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return topicCommandError(withClient(bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		switch {
		case o.create:
			return topicsCreateKafka(ctx, cl, o)
		case o.list:
			names, err := matchTopics(ctx, adm, o.topic, o.excludeInternal)
			for _, n := range names {
				fmt.Println(n)
			}
			return err
		case o.describe:
			return topicsDescribeKafka(ctx, adm, o)
		case o.alter:
			return topicsAlterKafka(ctx, adm, o)
		}
		return topicsDeleteKafka(ctx, adm, o)
	}))
}

// topicCommandError prints a failure as TopicCommand does: a topic that
// is not there as it is, anything else after "Error while executing topic
// command : " on stdout.
func topicCommandError(err error) error {
	var ke *kafkaError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke) && strings.HasSuffix(ke.msg, "does not exist as expected"):
		return err
	case errors.As(err, &ke):
		return &kafkaError{msg: "Error while executing topic command : " + ke.msg, stdout: true}
	}
	return &kafkaError{msg: "Error while executing topic command : " + err.Error(), stdout: true}
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func topicsCreateKafka(ctx context.Context, cl *kgo.Client, o topicsOptions) error {
	configs, err := propertyMap(o.configs)
	if err != nil {
		return err
	}
	spec := kcli.TopicSpec{Name: o.topic, Partitions: int32(o.partitions), ReplicationFactor: int16(o.replicationFactor), Configs: configs}
	if o.replicaAssignment != "" {
		if o.partitions >= 0 || o.replicationFactor >= 0 {
			return fmt.Errorf("Option \"[replica-assignment]\" can't be used with option \"[partitions]\" or \"[replication-factor]\"")
		}
		if spec.Assignment, err = parseReplicaAssignment(o.replicaAssignment); err != nil {
			return err
		}
		err = kcli.CreateTopicAssigned(ctx, cl, spec)
	} else {
		err = kcli.CreateTopic(ctx, kadm.NewClient(cl), spec)
	}
	if err != nil {
		if o.ifNotExists && errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		return kafkaMessage(err)
	}
	fmt.Printf("Created topic %s.\n", o.topic)
	return nil
}

// kafkaMessage is a broker's answer in its own words, as Kafka's tools
// print it ("Topic 't' already exists.").
func kafkaMessage(err error) error {
	var be *kcli.BrokerError
	if errors.As(err, &be) {
		return &kafkaError{msg: be.Words()}
	}
	return err
}

// parseReplicaAssignment reads "1:2,2:3": partition i's replicas are the
// i-th comma-separated list of colon-separated broker ids.
func parseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var replicas []int32
		seen := map[int32]bool{}
		for _, id := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--replica-assignment %q: %q is not a broker id", s, id)
			}
			if seen[int32(n)] {
				return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %d", n)
			}
			seen[int32(n)] = true
			replicas = append(replicas, int32(n))
		}
		if len(out) > 0 && len(replicas) != len(out[0]) {
			return nil, fmt.Errorf("Partition %d has different replication factor: %v", i, replicas)
		}
		out = append(out, replicas)
	}
	return out, nil
}

// matchTopics lists the topics matching pattern (Kafka's --topic is a
// regular expression; a comma also separates alternatives), sorted.
func matchTopics(ctx context.Context, adm *kadm.Client, pattern string, excludeInternal bool) ([]string, error) {
	all, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if pattern != "" {
		p := strings.ReplaceAll(strings.Trim(strings.TrimSpace(pattern), `"'`), ",", "|")
		if re, err = regexp.Compile("^(?:" + p + ")$"); err != nil {
			return nil, fmt.Errorf("--topic %q: %w", pattern, err)
		}
	}
	var names []string
	for _, d := range all {
		if d.Err != nil || excludeInternal && d.IsInternal || re != nil && !re.MatchString(d.Topic) {
			continue
		}
		names = append(names, d.Topic)
	}
	sort.Strings(names)
	return names, nil
}

// requireTopics fails as Kafka does when --topic matched nothing.
func requireTopics(names []string, o topicsOptions) error {
	if len(names) == 0 && o.topic != "" && !o.ifExists {
		return &kafkaError{msg: fmt.Sprintf("Topic '%s' does not exist as expected", o.topic)}
	}
	return nil
}

func topicsDescribeKafka(ctx context.Context, adm *kadm.Client, o topicsOptions) error {
	names, err := matchTopics(ctx, adm, o.topic, o.excludeInternal)
	if err != nil {
		return err
	}
	if err := requireTopics(names, o); err != nil || len(names) == 0 {
		return err
	}
	details, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return err
	}
	infos, err := kcli.DescribeTopicDetails(ctx, adm, details)
	if err != nil {
		return err
	}
	moving, _ := kcli.ListReassignments(ctx, adm, names...)
	live := map[int32]bool{}
	if md, err := adm.BrokerMetadata(ctx); err == nil {
		for _, b := range md.Brokers {
			live[b.NodeID] = true
		}
	}
	filtered := o.underReplicated || o.underMinISR || o.atMinISR || o.unavailable
	for _, info := range infos {
		if info.Err != nil {
			continue
		}
		overrides := topicOverrides(info.Configs)
		if o.withOverrides && overrides == "" {
			continue
		}
		if !filtered {
			printTopicSummary(info, overrides)
		}
		if o.withOverrides {
			continue
		}
		minISR := configInt(info.Configs, "min.insync.replicas", 1)
		for _, p := range info.Partitions {
			if filtered && !partitionSelected(o, p, minISR, live) {
				continue
			}
			printPartitionLine(info.Name, p, moving[info.Name])
		}
	}
	return nil
}

func printTopicSummary(info kcli.TopicInfo, overrides string) {
	rf := 0
	if len(info.Partitions) > 0 {
		rf = len(info.Partitions[0].Replicas)
	}
	fmt.Printf("Topic: %s", info.Name)
	if info.ID != (kadm.TopicID{}) {
		fmt.Printf("\tTopicId: %s", base64.RawURLEncoding.EncodeToString(info.ID[:]))
	}
	fmt.Printf("\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n", len(info.Partitions), rf, overrides)
}

func printPartitionLine(topic string, p kcli.PartitionInfo, moving map[int32]kadm.ListPartitionReassignmentsResponse) {
	leader := "none"
	if p.Leader >= 0 {
		leader = strconv.Itoa(int(p.Leader))
	}
	fmt.Printf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s", topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
	if r, ok := moving[p.Partition]; ok {
		fmt.Printf("\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(r.AddingReplicas), joinIDs(r.RemovingReplicas))
	}
	// Eligible leader replicas (KIP-966) are a KRaft feature.
	fmt.Print("\tElr: N/A\tLastKnownElr: N/A\n")
}

func partitionSelected(o topicsOptions, p kcli.PartitionInfo, minISR int, live map[int32]bool) bool {
	noLeader := p.Leader < 0 || !live[p.Leader]
	switch {
	case o.underReplicated && len(p.ISR) < len(p.Replicas):
	case o.underMinISR && (p.Leader < 0 || len(p.ISR) < minISR):
	case o.atMinISR && len(p.ISR) == minISR:
	case o.unavailable && noLeader:
	default:
		return false
	}
	return true
}

// topicOverrides are the configs that are not defaults, as Kafka 3.9
// lists them on the topic's line.
func topicOverrides(configs []kadm.Config) string {
	var kv []string
	for _, c := range configs {
		if c.Source == kmsg.ConfigSourceDefaultConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "null"
		}
		kv = append(kv, c.Key+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func configInt(configs []kadm.Config, key string, def int) int {
	for _, c := range configs {
		if c.Key == key {
			if n, err := strconv.Atoi(c.MaybeValue()); err == nil {
				return n
			}
		}
	}
	return def
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func topicsAlterKafka(ctx context.Context, adm *kadm.Client, o topicsOptions) error {
	names, err := matchTopics(ctx, adm, o.topic, false)
	if err != nil {
		return err
	}
	if err := requireTopics(names, o); err != nil {
		return err
	}
	set, err := propertyMap(o.configs)
	if err != nil {
		return err
	}
	if o.replicaAssignment != "" {
		return fmt.Errorf("--replica-assignment with --alter: ferry places added partitions itself (move them afterwards with kafka-reassign-partitions.sh)")
	}
	if o.partitions < 0 && len(set) == 0 && len(o.deleteConfigs) == 0 {
		return fmt.Errorf("--alter needs --partitions, --config or --delete-config")
	}
	for _, name := range names {
		alter := kcli.TopicAlter{Name: name, Set: set, Delete: o.deleteConfigs}
		if o.partitions > 0 {
			alter.Partitions = int32(o.partitions)
		}
		if err := kcli.AlterTopic(ctx, adm, alter); err != nil {
			return kafkaMessage(err)
		}
	}
	if o.partitions > 0 {
		fmt.Println("WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected")
		fmt.Println("Adding partitions succeeded!")
	}
	return nil
}

func topicsDeleteKafka(ctx context.Context, adm *kadm.Client, o topicsOptions) error {
	names, err := matchTopics(ctx, adm, o.topic, false)
	if err != nil {
		return err
	}
	if err := requireTopics(names, o); err != nil {
		return err
	}
	for _, name := range names {
		if err := kcli.DeleteTopic(ctx, adm, name); err != nil {
			return kafkaMessage(err)
		}
	}
	return nil
}
