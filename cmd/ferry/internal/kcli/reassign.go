package kcli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/replication/assign"
)

// The JSON files of Kafka's kafka-reassign-partitions.sh, so an
// operator's files work with either tool.

// TopicsToMove is --topics-to-move-json-file: {"topics":[{"topic":"t"}],"version":1}.
type TopicsToMove struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

// PartitionMove is one partition of a reassignment file.
type PartitionMove struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs"`
}

// Reassignment is --reassignment-json-file:
// {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4],"log_dirs":["any","any"]}]}.
type Reassignment struct {
	Version    int             `json:"version"`
	Partitions []PartitionMove `json:"partitions"`
}

// maxReassignmentFile bounds what is read of a reassignment file.
const maxReassignmentFile = 64 << 20

// ParseTopicsToMove reads a topics-to-move file.
func ParseTopicsToMove(r io.Reader) ([]string, error) {
	var f TopicsToMove
	if err := decodeBounded(r, &f); err != nil {
		return nil, fmt.Errorf("topics to move: %w", err)
	}
	var topics []string
	for _, t := range f.Topics {
		if t.Topic == "" {
			return nil, fmt.Errorf("topics to move: a topic has no name")
		}
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("topics to move: the file names no topic")
	}
	return topics, nil
}

// ParseReassignment reads and checks a reassignment file.
func ParseReassignment(r io.Reader) (Reassignment, error) {
	var f Reassignment
	if err := decodeBounded(r, &f); err != nil {
		return f, fmt.Errorf("reassignment: %w", err)
	}
	if len(f.Partitions) == 0 {
		return f, fmt.Errorf("reassignment: the file names no partition")
	}
	seen := map[string]bool{}
	for _, p := range f.Partitions {
		key := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		switch {
		case p.Topic == "" || p.Partition < 0:
			return f, fmt.Errorf("reassignment: partition %q: a topic and a partition >= 0 are needed", key)
		case seen[key]:
			return f, fmt.Errorf("reassignment: partition %s is listed twice", key)
		case len(p.Replicas) == 0:
			return f, fmt.Errorf("reassignment: partition %s has no replicas", key)
		}
		seen[key] = true
		ids := map[int32]bool{}
		for _, id := range p.Replicas {
			if ids[id] || id < 0 {
				return f, fmt.Errorf("reassignment: partition %s: replica %d is repeated or negative", key, id)
			}
			ids[id] = true
		}
	}
	return f, nil
}

func decodeBounded(r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxReassignmentFile+1))
	if err != nil {
		return err
	}
	if len(data) > maxReassignmentFile {
		return fmt.Errorf("the file is over %d bytes", maxReassignmentFile)
	}
	return json.Unmarshal(data, v)
}

// Current is the topics' assignment now, as a reassignment file (for
// rollback and for --generate's first half).
func Current(md kadm.Metadata, topics []string) (Reassignment, error) {
	out := Reassignment{Version: 1}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil {
			return out, fmt.Errorf("topic %q: %v", t, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			out.Partitions = append(out.Partitions, move(t, p.Partition, p.Replicas))
		}
	}
	sortMoves(out.Partitions)
	return out, nil
}

// Propose places the topics' partitions on brokers with Kafka's
// assignment (rack-aware when every broker has a rack), keeping each
// topic's replication factor, as kafka-reassign-partitions.sh --generate.
func Propose(md kadm.Metadata, topics []string, brokers []int32, seed uint64) (Reassignment, error) {
	var bs []assign.Broker
	for _, id := range brokers {
		i := slices.IndexFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == id })
		if i < 0 {
			return Reassignment{}, fmt.Errorf("broker %d is not in the cluster", id)
		}
		rack := ""
		if r := md.Brokers[i].Rack; r != nil {
			rack = *r
		}
		bs = append(bs, assign.Broker{ID: id, Rack: rack})
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := Reassignment{Version: 1}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return out, fmt.Errorf("topic %q is not in the cluster", t)
		}
		parts := td.Partitions.Sorted()
		rf := len(parts[0].Replicas)
		placed, err := assign.Assign(bs, len(parts), rf, assign.Options{Rand: rng})
		if err != nil {
			return out, fmt.Errorf("topic %s: %w", t, err)
		}
		for i, p := range parts {
			out.Partitions = append(out.Partitions, move(t, p.Partition, placed[i]))
		}
	}
	sortMoves(out.Partitions)
	return out, nil
}

func move(topic string, partition int32, replicas []int32) PartitionMove {
	dirs := make([]string, len(replicas))
	for i := range dirs {
		dirs[i] = "any"
	}
	return PartitionMove{Topic: topic, Partition: partition, Replicas: slices.Clone(replicas), LogDirs: dirs}
}

func sortMoves(ms []PartitionMove) {
	slices.SortFunc(ms, func(a, b PartitionMove) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// JSON is the file's one-line JSON, as Kafka's tool prints it.
func (r Reassignment) JSON() string {
	data, _ := json.Marshal(r)
	return string(data)
}

// Execute starts the file's reassignments (AlterPartitionReassignments).
func Execute(ctx context.Context, adm *kadm.Client, r Reassignment) error {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range r.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	return alter(ctx, adm, req)
}

// Cancel cancels the file's reassignments.
func Cancel(ctx context.Context, adm *kadm.Client, r Reassignment) error {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range r.Partitions {
		req.CancelAssign(p.Topic, p.Partition)
	}
	return alter(ctx, adm, req)
}

func alter(ctx context.Context, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) error {
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var failed []string
	res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			msg := r.Err.Error()
			if r.ErrMessage != "" {
				msg += ": " + r.ErrMessage
			}
			failed = append(failed, fmt.Sprintf("%s-%d: %s", r.Topic, r.Partition, msg))
		}
	})
	if len(failed) > 0 {
		slices.Sort(failed)
		return fmt.Errorf("%d partitions refused:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// Verify reports each partition of the file: completed (its replicas are
// the target and it is not moving), still in progress, or failed (not
// moving, and not at the target).
func Verify(ctx context.Context, adm *kadm.Client, r Reassignment, w io.Writer) (done bool, err error) {
	var topics []string
	for _, p := range r.Partitions {
		topics = append(topics, p.Topic)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	moving, err := ListReassignments(ctx, adm, topics...)
	if err != nil {
		return false, err
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return false, err
	}
	done = true
	fmt.Fprintln(w, "Status of partition reassignment:")
	for _, p := range r.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if _, ok := moving[p.Topic][p.Partition]; ok {
			fmt.Fprintf(w, "Reassignment of partition %s is still in progress.\n", name)
			done = false
			continue
		}
		var now []int32
		if td, ok := md.Topics[p.Topic]; ok {
			if pd, ok := td.Partitions[p.Partition]; ok {
				now = pd.Replicas
			}
		}
		if slices.Equal(now, p.Replicas) {
			fmt.Fprintf(w, "Reassignment of partition %s is completed.\n", name)
		} else {
			fmt.Fprintf(w, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n", name, javaList(now), javaList(p.Replicas))
			done = false
		}
	}
	return done, nil
}

// javaList prints ids as Java prints a list: [1, 2, 3].
func javaList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// ListReassignments lists the partitions of topics (none: every topic)
// being reassigned. kadm asks only for the partitions it is given, and
// for nothing when given none, so they are named from the metadata.
func ListReassignments(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.ListPartitionReassignmentsResponses, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, td := range md.Topics {
		for p := range td.Partitions {
			set.Add(td.Topic, p)
		}
	}
	return adm.ListPartitionReassignments(ctx, set)
}
