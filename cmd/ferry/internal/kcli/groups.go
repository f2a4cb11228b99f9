package kcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

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
	if err != nil {
		return fmt.Errorf("delete group %q: %w", group, err)
	}
	return brokerErr("delete group", group, resp.Err, resp.ErrMessage)
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

// ResetTarget says where `groups reset-offsets` moves a group.
type ResetTarget struct {
	Earliest, Latest bool
	Offset           int64 // used when neither Earliest nor Latest
}

// PlanReset computes the new committed offset of every partition of the
// topics for a group. Like Kafka, an explicit offset is clamped to each
// partition's [start, end] range.
func PlanReset(ctx context.Context, adm *kadm.Client, topics []string, to ResetTarget) (kadm.Offsets, error) {
	for _, topic := range topics {
		if err := checkTopic(ctx, adm, topic); err != nil {
			return nil, err
		}
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	plan := make(kadm.Offsets)
	starts.Each(func(s kadm.ListedOffset) {
		end, _ := ends.Lookup(s.Topic, s.Partition)
		at := min(max(to.Offset, s.Offset), end.Offset)
		switch {
		case to.Earliest:
			at = s.Offset
		case to.Latest:
			at = end.Offset
		}
		plan.AddOffset(s.Topic, s.Partition, at, -1)
	})
	return plan, nil
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
