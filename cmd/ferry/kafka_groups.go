package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// groupsOptions are kafka-consumer-groups.sh's options.
type groupsOptions struct {
	list, describe, delete, resetOffsets, deleteOffsets bool
	members, state, offsets, verbose, allGroups         bool
	groups, topics                                      stringList
	allTopics, execute, dryRun, export                  bool
	toEarliest, toLatest, toCurrent                     bool
	toOffset, shiftBy                                   string
	toDatetime, byDuration, fromFile                    string
	timeoutMs                                           int64
}

// kafkaConsumerGroups is kafka-consumer-groups.sh.
func kafkaConsumerGroups(args []string) error {
	t := newKafkaTool("kafka-consumer-groups.sh", "This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, or reset consumer group offsets.", "command-config", false)
	var o groupsOptions
	t.flag(&o.list, "list", "List all consumer groups.")
	t.flag(&o.describe, "describe", "Describe consumer group and list offset lag (number of messages not yet processed) related to given group.")
	t.flag(&o.delete, "delete", "Pass in groups to delete topic partition offsets and ownership information over the entire consumer group.")
	t.flag(&o.resetOffsets, "reset-offsets", "Reset offsets of consumer group. Supports one consumer group at the time, and instances should be inactive. Has 2 execution options: --dry-run (the default) to plan which offsets to reset, and --execute to update the offsets.")
	t.flag(&o.deleteOffsets, "delete-offsets", "Delete offsets of consumer group. Supports one consumer group at the time, and multiple topics.")
	t.list(&o.groups, "group", "String: consumer group", "The consumer group we wish to act on.")
	t.flag(&o.allGroups, "all-groups", "Apply to all consumer groups.")
	t.list(&o.topics, "topic", "String: topic", "The topic whose consumer group information should be deleted or topic whose should be included in the reset offset process. In `reset-offsets` case, partitions can be specified using this format: `topic1:0,1,2`.")
	t.flag(&o.allTopics, "all-topics", "Consider all topics assigned to a group in the `reset-offsets` process.")
	t.flag(&o.members, "members", "Describe members of the group.")
	t.flag(&o.state, "state", "When specified with '--describe', includes the state of the group. When specified with '--list', it displays the state of all groups.")
	t.flag(&o.offsets, "offsets", "Describe the group and list all topic partitions in the group along with their offset lag (the default with --describe).")
	t.flag(&o.verbose, "verbose", "Provide additional information, if any, when describing the group.")
	t.flag(&o.execute, "execute", "Execute operation. Supported operations: reset-offsets.")
	t.flag(&o.dryRun, "dry-run", "Only show results without executing changes on Consumer Groups. Supported operations: reset-offsets.")
	t.flag(&o.export, "export", "Export operation execution to a CSV file. Supported operations: reset-offsets.")
	t.flag(&o.toEarliest, "to-earliest", "Reset offsets to earliest offset.")
	t.flag(&o.toLatest, "to-latest", "Reset offsets to latest offset.")
	t.flag(&o.toCurrent, "to-current", "Reset offsets to current offset.")
	t.str(&o.toOffset, "to-offset", "Long: offset", "Reset offsets to a specific offset.")
	t.str(&o.shiftBy, "shift-by", "Long: number-of-offsets", "Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")
	t.str(&o.toDatetime, "to-datetime", "String: datetime", "Reset offsets to offset from datetime. Format: 'YYYY-MM-DDThh:mm:ss.sss'")
	t.str(&o.byDuration, "by-duration", "String: duration", "Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")
	t.str(&o.fromFile, "from-file", "String: path to CSV file", "Reset offsets to values defined in CSV file.")
	t.num(&o.timeoutMs, "timeout", "Long: timeout (ms)", "The timeout that can be set for some use cases.")
	if err := t.parse(args); err != nil {
		return err
	}
	if countTrue(o.list, o.describe, o.delete, o.resetOffsets, o.deleteOffsets) != 1 {
		return t.usage("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets")
	}
	if (o.describe || o.delete || o.resetOffsets) && len(o.groups) == 0 && !o.allGroups {
		return t.usage("Option [%s] takes one of these options: [all-groups], [group]", actionName(o))
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	if o.resetOffsets {
		return groupsResetKafka(t, bootstrap, o)
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		switch {
		case o.list:
			return groupsListKafka(ctx, adm, o.state)
		case o.describe:
			return groupsDescribeKafka(ctx, adm, o)
		case o.deleteOffsets:
			return groupsDeleteOffsetsKafka(ctx, adm, o)
		}
		return groupsDeleteKafka(ctx, adm, o)
	})
}

func actionName(o groupsOptions) string {
	switch {
	case o.describe:
		return "describe"
	case o.delete:
		return "delete"
	}
	return "reset-offsets"
}

// colWidth is the width Kafka gives a column: 15, or its longest value.
func colWidth(values ...string) int {
	w := 15
	for _, v := range values {
		w = max(w, len(v))
	}
	return w
}

func groupsListKafka(ctx context.Context, adm *kadm.Client, withState bool) error {
	groups, err := kcli.ListGroups(ctx, adm)
	if err != nil {
		return err
	}
	if !withState {
		for _, g := range groups {
			fmt.Println(g.Group)
		}
		return nil
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Group
	}
	w := colWidth(names...)
	fmt.Printf("%-*s %s\n", w, "GROUP", "STATE")
	for _, g := range groups {
		fmt.Printf("%-*s %s\n", w, g.Group, kafkaGroupState(g.State))
	}
	return nil
}

// kafkaGroupState is the state as Kafka's tool names it.
func kafkaGroupState(s string) string {
	switch s {
	case "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty":
		return s
	case "":
		return "Unknown"
	}
	return s
}

func groupNames(ctx context.Context, adm *kadm.Client, o groupsOptions) ([]string, error) {
	if !o.allGroups {
		return o.groups, nil
	}
	groups, err := kcli.ListGroups(ctx, adm)
	var names []string
	for _, g := range groups {
		names = append(names, g.Group)
	}
	return names, err
}

func groupsDescribeKafka(ctx context.Context, adm *kadm.Client, o groupsOptions) error {
	names, err := groupNames(ctx, adm, o)
	if err != nil {
		return err
	}
	var missing []string
	for _, name := range names {
		g, err := kcli.DescribeGroup(ctx, adm, name)
		if errors.Is(err, kcli.ErrNoGroup) {
			fmt.Fprintf(os.Stderr, "\nError: Consumer group '%s' does not exist.\n", name)
			missing = append(missing, name)
			continue
		}
		if err != nil {
			return err
		}
		switch g.State {
		case "Empty":
			fmt.Fprintf(os.Stderr, "\nConsumer group '%s' has no active members.\n", name)
		case "PreparingRebalance", "CompletingRebalance":
			fmt.Fprintf(os.Stderr, "\nWarning: Consumer group '%s' is rebalancing.\n", name)
		}
		switch {
		case o.members:
			printGroupMembers(g)
		case o.state:
			printGroupState(g)
		default:
			printGroupOffsets(g)
		}
	}
	if len(missing) > 0 {
		return &kafkaError{} // each reported above
	}
	return nil
}

// printGroupOffsets is the default --describe table, laid out as
// ConsumerGroupCommand does: a leading newline per line, "-" for none.
func printGroupOffsets(g kadm.DescribedGroupLag) {
	rows := g.Lag.Sorted()
	groups, topics, members, hosts := []string{g.Group}, []string{}, []string{}, []string{}
	for _, l := range rows {
		topics = append(topics, l.Topic)
		if !l.IsEmpty() {
			members, hosts = append(members, l.Member.MemberID), append(hosts, l.Member.ClientHost)
		}
	}
	gw, tw, mw, hw := colWidth(groups...), colWidth(topics...), colWidth(members...), colWidth(hosts...)
	line := func(group, topic, part, cur, end, lag, member, host, client string) {
		fmt.Printf("\n%-*s %-*s %-10s %-15s %-15s %-15s %-*s %-*s %s", gw, group, tw, topic, part, cur, end, lag, mw, member, hw, host, client)
	}
	line("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, l := range rows {
		member, host, client := "-", "-", "-"
		if !l.IsEmpty() {
			member, host, client = l.Member.MemberID, l.Member.ClientHost, l.Member.ClientID
		}
		lag := dashIfNegative(l.Lag)
		if l.Commit.At < 0 {
			lag = "-" // nothing committed: no lag to speak of
		}
		line(g.Group, l.Topic, strconv.Itoa(int(l.Partition)), dashIfNegative(l.Commit.At), dashIfNegative(l.End.Offset), lag, member, host, client)
	}
	fmt.Println()
	fmt.Println()
}

func dashIfNegative(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func printGroupMembers(g kadm.DescribedGroupLag) {
	ids, hosts, clients := []string{}, []string{}, []string{}
	for _, m := range g.Members {
		ids, hosts, clients = append(ids, m.MemberID), append(hosts, m.ClientHost), append(clients, m.ClientID)
	}
	gw, iw, hw, cw := colWidth(g.Group), colWidth(ids...), colWidth(hosts...), colWidth(clients...)
	fmt.Printf("\n%-*s %-*s %-*s %-*s %-12s", gw, "GROUP", iw, "CONSUMER-ID", hw, "HOST", cw, "CLIENT-ID", "#PARTITIONS")
	for _, m := range g.Members {
		n := 0
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				n += len(t.Partitions)
			}
		}
		fmt.Printf("\n%-*s %-*s %-*s %-*s %-12d", gw, g.Group, iw, m.MemberID, hw, m.ClientHost, cw, m.ClientID, n)
	}
	fmt.Println()
	fmt.Println()
}

func printGroupState(g kadm.DescribedGroupLag) {
	coord := fmt.Sprintf("%s:%d (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)
	gw, cw := colWidth(g.Group), max(25, len(coord))
	strategy := g.Protocol
	if strategy == "" {
		strategy = "-"
	}
	fmt.Printf("\n%-*s %-*s %-20s %-15s %s", gw, "GROUP", cw, "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
	fmt.Printf("\n%-*s %-*s %-20s %-15s %d\n\n", gw, g.Group, cw, coord, strategy, kafkaGroupState(g.State), len(g.Members))
}

func groupsDeleteKafka(ctx context.Context, adm *kadm.Client, o groupsOptions) error {
	names, err := groupNames(ctx, adm, o)
	if err != nil {
		return err
	}
	var failed []string
	for _, name := range names {
		if err := kcli.DeleteGroup(ctx, adm, name); err != nil {
			var be *kcli.BrokerError
			if errors.As(err, &be) {
				err = errors.New(be.Words())
			}
			failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: %v", name, err))
		}
	}
	if len(failed) > 0 {
		return &kafkaError{msg: "Error: Deletion of some consumer groups failed:\n" + strings.Join(failed, "\n")}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	fmt.Printf("Deletion of requested consumer groups (%s) was successful.\n", strings.Join(quoted, ", "))
	return nil
}

func groupsDeleteOffsetsKafka(ctx context.Context, adm *kadm.Client, o groupsOptions) error {
	if len(o.groups) != 1 || len(o.topics) == 0 {
		return errors.New("--delete-offsets takes one --group and one or more --topic")
	}
	scope, err := parseTopicPartitions(o.topics)
	if err != nil {
		return err
	}
	set := kadm.TopicsSet{}
	for topic, parts := range scope {
		if len(parts) == 0 {
			md, err := adm.ListTopics(ctx, topic)
			if err != nil {
				return err
			}
			for p := range md[topic].Partitions {
				parts = append(parts, p)
			}
		}
		set.Add(topic, parts...)
	}
	resps, err := adm.DeleteOffsets(ctx, o.groups[0], set)
	if err != nil {
		return err
	}
	fmt.Printf("\n%-30s %-15s %s", "TOPIC", "PARTITION", "STATUS")
	failed := 0
	for _, topic := range slices.Sorted(maps.Keys(resps)) {
		for _, p := range slices.Sorted(maps.Keys(resps[topic])) {
			status := "Successful"
			if err := resps[topic][p]; err != nil {
				status, failed = "Error: "+err.Error(), failed+1
			}
			fmt.Printf("\n%-30s %-15d %s", topic, p, status)
		}
	}
	fmt.Println()
	if failed > 0 {
		return &kafkaError{msg: fmt.Sprintf("Encounter some partition level error, see the above output for details (%d partitions)", failed)}
	}
	return nil
}

// parseTopicPartitions reads --topic values: "t" (every partition) or
// "t:0,1,2".
func parseTopicPartitions(topics []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, arg := range topics {
		topic, parts, hasParts := strings.Cut(arg, ":")
		if topic == "" {
			return nil, fmt.Errorf("--topic %q: no topic name", arg)
		}
		if _, ok := out[topic]; !ok {
			out[topic] = nil
		}
		if !hasParts {
			continue
		}
		for _, p := range strings.Split(parts, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--topic %q: %q is not a partition", arg, p)
			}
			out[topic] = append(out[topic], int32(n))
		}
	}
	return out, nil
}

func groupsResetKafka(t *kafkaTool, bootstrap string, o groupsOptions) error {
	if len(o.groups) != 1 || o.allGroups {
		return t.usage("Option [reset-offsets] takes one --group")
	}
	if (len(o.topics) == 0) == !o.allTopics {
		return t.usage("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
	}
	if o.execute && o.dryRun {
		return t.usage("Option [reset-offsets] only accepts one of [execute], [dry-run]")
	}
	if o.fromFile != "" || o.export {
		return errors.New("--from-file and --export: ferry resets from the other scenarios only")
	}
	to, err := resetTarget(t, o)
	if err != nil {
		return err
	}
	scope := kcli.ResetScope{AllTopics: o.allTopics}
	if !o.allTopics {
		if scope.Topics, err = parseTopicPartitions(o.topics); err != nil {
			return err
		}
	}
	if !o.execute && !o.dryRun {
		fmt.Println("WARN: No action will be performed as the --execute option is missing. In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.")
	}
	group := o.groups[0]
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		plan, err := kcli.PlanReset(ctx, adm, group, scope, to)
		if err != nil {
			return err
		}
		if o.execute {
			if err := kcli.ExecuteReset(ctx, adm, group, plan); err != nil {
				if errors.Is(err, kcli.ErrGroupActive) {
					return &kafkaError{msg: fmt.Sprintf("Error: Assignments can only be reset if the group '%s' is inactive, but the current state is Stable.", group)}
				}
				return err
			}
		}
		fmt.Printf("\n%-30s %-30s %-10s %-15s", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
		for _, p := range plan.Sorted() {
			fmt.Printf("\n%-30s %-30s %-10d %-15d", group, p.Topic, p.Partition, p.At)
		}
		fmt.Println()
		fmt.Println()
		return nil
	})
}

// resetTarget reads the one reset scenario given.
func resetTarget(t *kafkaTool, o groupsOptions) (kcli.ResetTarget, error) {
	to := kcli.ResetTarget{Offset: -1, Earliest: o.toEarliest, Latest: o.toLatest, Current: o.toCurrent}
	n := countTrue(o.toEarliest, o.toLatest, o.toCurrent, o.toOffset != "", o.shiftBy != "", o.toDatetime != "", o.byDuration != "")
	if n != 1 {
		return to, t.usage("Option [reset-offsets] takes exactly one of these options: [to-datetime], [by-duration], [to-earliest], [to-latest], [shift-by], [from-file], [to-current], [to-offset]")
	}
	switch {
	case o.toOffset != "":
		v, err := strconv.ParseInt(o.toOffset, 10, 64)
		if err != nil || v < 0 {
			return to, fmt.Errorf("--to-offset %q: want a non-negative number", o.toOffset)
		}
		to.Offset = v
	case o.shiftBy != "":
		v, err := strconv.ParseInt(o.shiftBy, 10, 64)
		if err != nil {
			return to, fmt.Errorf("--shift-by %q: want a number", o.shiftBy)
		}
		to.Shift = &v
	case o.toDatetime != "":
		at, err := parseKafkaDatetime(o.toDatetime)
		if err != nil {
			return to, err
		}
		to.At = &at
	case o.byDuration != "":
		d, err := parseISODuration(o.byDuration)
		if err != nil {
			return to, err
		}
		at := time.Now().Add(-d)
		to.At = &at
	}
	return to, nil
}

// parseKafkaDatetime reads --to-datetime as Kafka does:
// yyyy-MM-ddTHH:mm:ss[.SSS] with an optional zone (Z, +hh:mm, +hhmm);
// without one, local time.
func parseKafkaDatetime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700"} {
		if at, err := time.Parse(layout, s); err == nil {
			return at, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		if at, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("Error parsing timestamp. It does not conform to any of the expected formats: yyyy-MM-dd'T'HH:mm:ss.SSS, with an optional time zone: %q", s)
}

var isoDuration = regexp.MustCompile(`^([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads Java's Duration.parse form, PnDTnHnMn.nS.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("--by-duration %q: want an ISO-8601 duration, PnDTnHnMn.nS (e.g. PT15M, P1DT2H)", s)
	}
	var total time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+2] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+2], 10, 64)
		if err != nil || n > int64(time.Duration(1<<62)/unit) || -n > int64(time.Duration(1<<62)/unit) {
			return 0, fmt.Errorf("--by-duration %q: out of range", s)
		}
		total += time.Duration(n) * unit
	}
	if frac := m[6]; frac != "" {
		ns, _ := strconv.Atoi((frac + "000000000")[:9])
		total += time.Duration(ns)
	}
	if m[1] == "-" {
		total = -total
	}
	return total, nil
}
