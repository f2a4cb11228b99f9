package kcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ListGroups returns every consumer group, sorted by name.
func ListGroups(ctx context.Context, adm *kadm.Client) ([]kadm.ListedGroup, error) {
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return groups.Sorted(), nil
}

// DescribeGroup returns a group's state, members with their assignments,
// and committed offsets with lag per partition.
func DescribeGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroupLag, error) {
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return kadm.DescribedGroupLag{}, fmt.Errorf("describe group %q: %w", group, err)
	}
	l, ok := lags[group]
	if !ok {
		return l, fmt.Errorf("describe group %q: not in the answer", group)
	}
	if err := l.Error(); err != nil {
		return l, fmt.Errorf("describe group %q: %w", group, err)
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		return l, fmt.Errorf("%w: %q", ErrNoGroup, group)
	}
	return l, nil
}

// ErrNoGroup is returned by DescribeGroup for a group the coordinator does
// not know (state Dead, no committed offsets).
var ErrNoGroup = errors.New("no such consumer group")

// DeleteGroup deletes a group with no members and its committed offsets.
func DeleteGroup(ctx context.Context, adm *kadm.Client, group string) error {
	resp, err := adm.DeleteGroup(ctx, group)
	if resp.Err != nil {
		return brokerErr("delete group", group, resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("delete group %q: %w", group, err)
	}
	return nil
}

// WriteGroup prints a group as kafka-consumer-groups.sh --describe does
// (one line per partition with committed offset, log end and lag), preceded
// by its state and a member table with each member's assignment.
func WriteGroup(w io.Writer, g kadm.DescribedGroupLag) {
	fmt.Fprintf(w, "GROUP %s\tSTATE %s\tMEMBERS %d\n\n", g.Group, g.State, len(g.Members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(g.Members) > 0 {
		fmt.Fprintln(tw, "CONSUMER-ID\tHOST\tCLIENT-ID\tASSIGNMENT")
		for _, m := range g.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientHost, m.ClientID, assignment(m))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, l := range g.Lag.Sorted() {
		member, host, client := "-", "-", "-"
		if !l.IsEmpty() {
			member, host, client = l.Member.MemberID, l.Member.ClientHost, l.Member.ClientID
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Group, l.Topic, l.Partition,
			dashIfNeg(l.Commit.At), dashIfNeg(l.End.Offset), dashIfNeg(l.Lag), member, host, client)
	}
	tw.Flush()
}

func assignment(m kadm.DescribedGroupMember) string {
	c, ok := m.Assigned.AsConsumer()
	if !ok {
		return "-"
	}
	var parts []string
	for _, t := range c.Topics {
		ps := append([]int32(nil), t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, t.Topic+":"+joinInt32(ps))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func dashIfNeg(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// ResetTarget says where `groups reset-offsets` moves a group: exactly
// one of its fields is set.
type ResetTarget struct {
	Earliest, Latest, Current bool
	Offset                    int64      // --to-offset; -1 when not given
	Shift                     *int64     // --shift-by: the committed offset plus this
	At                        *time.Time // --to-datetime, --by-duration: the first offset at or after
}

// ResetScope names the partitions to reset: each topic's listed
// partitions (none listed: all of them), or with AllTopics every topic
// the group has committed offsets for.
type ResetScope struct {
	Topics    map[string][]int32
	AllTopics bool
}

// PlanReset computes the new committed offset of every partition in scope
// for a group. Like Kafka, every target is clamped to each partition's
// [start, end] range.
func PlanReset(ctx context.Context, adm *kadm.Client, group string, scope ResetScope, to ResetTarget) (kadm.Offsets, error) {
	var committed kadm.OffsetResponses
	if scope.AllTopics || to.Current || to.Shift != nil {
		var err error
		if committed, err = adm.FetchOffsets(ctx, group); err == nil {
			err = committed.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("fetch committed offsets of group %q: %w", group, err)
		}
	}
	topics := scopeTopics(scope, committed)
	for _, topic := range topics {
		if err := checkTopic(ctx, adm, topic); err != nil {
			return nil, err
		}
	}
	starts, ends, err := offsetBounds(ctx, adm, topics)
	if err != nil {
		return nil, err
	}
	var atTime kadm.ListedOffsets
	if to.At != nil {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, to.At.UnixMilli(), topics...); err == nil {
			err = atTime.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list offsets at %v: %w", to.At, err)
		}
	}
	plan := make(kadm.Offsets)
	var planErr error
	starts.Each(func(s kadm.ListedOffset) {
		if !inScope(scope, committed, s.Topic, s.Partition) {
			return
		}
		end, _ := ends.Lookup(s.Topic, s.Partition)
		at, err := resetOffset(to, s, end.Offset, committed, atTime)
		if err != nil && planErr == nil {
			planErr = err
		}
		plan.AddOffset(s.Topic, s.Partition, min(max(at, s.Offset), end.Offset), -1)
	})
	return plan, planErr
}

func scopeTopics(scope ResetScope, committed kadm.OffsetResponses) []string {
	var topics []string
	if scope.AllTopics {
		for t := range committed {
			topics = append(topics, t)
		}
	} else {
		for t := range scope.Topics {
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	return topics
}

func inScope(scope ResetScope, committed kadm.OffsetResponses, topic string, p int32) bool {
	if scope.AllTopics {
		_, ok := committed.Lookup(topic, p)
		return ok
	}
	parts := scope.Topics[topic]
	return len(parts) == 0 || slices.Contains(parts, p)
}

func offsetBounds(ctx context.Context, adm *kadm.Client, topics []string) (starts, ends kadm.ListedOffsets, err error) {
	if starts, err = adm.ListStartOffsets(ctx, topics...); err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list start offsets: %w", err)
	}
	if ends, err = adm.ListEndOffsets(ctx, topics...); err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	return starts, ends, nil
}

// resetOffset is one partition's target before clamping.
func resetOffset(to ResetTarget, start kadm.ListedOffset, end int64, committed kadm.OffsetResponses, atTime kadm.ListedOffsets) (int64, error) {
	switch {
	case to.Earliest:
		return start.Offset, nil
	case to.Latest:
		return end, nil
	case to.At != nil:
		if o, ok := atTime.Lookup(start.Topic, start.Partition); ok && o.Err == nil && o.Offset >= 0 {
			return o.Offset, nil
		}
		return end, nil
	case to.Current || to.Shift != nil:
		c, ok := committed.Lookup(start.Topic, start.Partition)
		if !ok || c.At < 0 {
			return start.Offset, fmt.Errorf("partition %s-%d has no committed offset to reset from", start.Topic, start.Partition)
		}
		if to.Shift != nil {
			return c.At + *to.Shift, nil
		}
		return c.At, nil
	}
	return to.Offset, nil
}

// ErrGroupActive is returned by ExecuteReset when the group has members.
var ErrGroupActive = errors.New("group is active")

// ExecuteReset commits plan for group, which must have no members, as
// Kafka requires.
func ExecuteReset(ctx context.Context, adm *kadm.Client, group string, plan kadm.Offsets) error {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, err)
	}
	if d, ok := described[group]; ok && len(d.Members) > 0 {
		return fmt.Errorf("%w: offsets of %q can only be reset while it has no members, but it is %s with %d",
			ErrGroupActive, group, d.State, len(d.Members))
	}
	if err := adm.CommitAllOffsets(ctx, group, plan); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, err)
	}
	return nil
}

// WritePlan prints a reset plan as kafka-consumer-groups.sh does.
func WritePlan(w io.Writer, group string, plan kadm.Offsets) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, o := range plan.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, o.Topic, o.Partition, o.At)
	}
	tw.Flush()
}
