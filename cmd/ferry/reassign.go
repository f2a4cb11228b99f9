package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runReassign is `ferry reassign`, Kafka's kafka-reassign-partitions.sh
// with its JSON files: --generate proposes a placement of topics on a
// broker list, --execute starts a reassignment, --verify reports it,
// --cancel returns partitions to their original replicas.
func runReassign(args []string) error {
	fs, bootstrap := newClientFlags("reassign --generate|--execute|--verify|--cancel …")
	var o reassignOptions
	fs.BoolVar(&o.generate, "generate", false, "print the current assignment and a proposed one for --topics-to-move-json-file over --broker-list")
	fs.BoolVar(&o.execute, "execute", false, "start the reassignment in --reassignment-json-file")
	fs.BoolVar(&o.verify, "verify", false, "report each partition of --reassignment-json-file: completed, in progress or failed")
	fs.BoolVar(&o.cancel, "cancel", false, "cancel the reassignments of the partitions in --reassignment-json-file")
	fs.StringVar(&o.topicsFile, "topics-to-move-json-file", "", `{"topics":[{"topic":"t"}],"version":1}`)
	fs.StringVar(&o.brokerList, "broker-list", "", "brokers to place the topics on, e.g. 3,4")
	fs.StringVar(&o.planFile, "reassignment-json-file", "", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4]}]}`)
	fs.DurationVar(&o.wait, "wait", 0, "with --execute or --verify: wait up to this long for the reassignment to complete, showing its progress")
	fs.Int64Var(&o.throttle, "throttle", 0, "with --execute: bytes/s the brokers taking part may spend copying the moved replicas (removed by --verify once done)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	o.failIncomplete = true
	return reassign(*bootstrap, o, func(msg string) error { return usageError(fs, msg) })
}

// reassignOptions are kafka-reassign-partitions.sh's, shared by `ferry
// reassign` and the script.
type reassignOptions struct {
	generate, execute, verify, cancel, list bool
	topicsFile, brokerList, planFile        string
	wait                                    time.Duration
	throttle                                int64
	// failIncomplete makes --verify fail while a partition still moves
	// (ferry's own; Kafka's tool reports it and exits 0).
	failIncomplete bool
}

func reassign(bootstrap string, o reassignOptions, usage func(string) error) error {
	if countTrue(o.generate, o.execute, o.verify, o.cancel, o.list) != 1 {
		return usage("give exactly one of --generate, --execute, --verify, --cancel")
	}
	if o.throttle < 0 || o.throttle > 0 && !o.execute {
		return usage("--throttle is a positive number of bytes/s, with --execute")
	}
	if o.generate {
		return reassignGenerate(bootstrap, o.topicsFile, o.brokerList)
	}
	if o.list {
		return withAdmin(bootstrap, reassignList)
	}
	if o.planFile == "" {
		return usage("--reassignment-json-file is needed")
	}
	f, err := os.Open(o.planFile)
	if err != nil {
		return err
	}
	plan, err := kcli.ParseReassignment(f)
	f.Close()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		switch {
		case o.execute:
			return reassignExecute(ctx, adm, plan, o.throttle, o.wait, o.failIncomplete)
		case o.verify:
			return reassignVerify(ctx, adm, plan, o.wait, o.failIncomplete)
		default:
			if err := kcli.Cancel(ctx, adm, plan); err != nil {
				return err
			}
			fmt.Printf("Successfully cancelled partition reassignments for %s\n", partitionNames(plan))
			return nil
		}
	})
}

// reassignList prints the reassignments under way, as --list does.
func reassignList(ctx context.Context, adm *kadm.Client) error {
	moving, err := kcli.ListReassignments(ctx, adm)
	if err != nil {
		return err
	}
	var lines []string
	for topic, parts := range moving {
		for p, r := range parts {
			lines = append(lines, fmt.Sprintf("%s-%d: replicas: %s. adding: %s. removing: %s.",
				topic, p, joinIDs(r.Replicas), joinIDs(r.AddingReplicas), joinIDs(r.RemovingReplicas)))
		}
	}
	if len(lines) == 0 {
		fmt.Println("No partition reassignments found.")
		return nil
	}
	slices.Sort(lines)
	fmt.Println("Current partition reassignments:")
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}

func reassignGenerate(bootstrap, topicsFile, brokerList string) error {
	if topicsFile == "" || brokerList == "" {
		return fmt.Errorf("--generate needs --topics-to-move-json-file and --broker-list")
	}
	f, err := os.Open(topicsFile)
	if err != nil {
		return err
	}
	topics, err := kcli.ParseTopicsToMove(f)
	f.Close()
	if err != nil {
		return err
	}
	var brokers []int32
	for _, s := range strings.Split(brokerList, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return fmt.Errorf("--broker-list %q: %w", brokerList, err)
		}
		brokers = append(brokers, int32(id))
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		md, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return err
		}
		cur, err := kcli.Current(md, topics)
		if err != nil {
			return err
		}
		proposed, err := kcli.Propose(md, topics, brokers, uint64(time.Now().UnixNano()))
		if err != nil {
			return err
		}
		fmt.Printf("Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", cur.JSON(), proposed.JSON())
		return nil
	})
}

func reassignExecute(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, throttle int64, wait time.Duration, failIncomplete bool) error {
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	cur, err := kcli.Current(md, topics)
	if err != nil {
		return err
	}
	fmt.Printf("Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", cur.JSON())
	if throttle > 0 {
		tp, err := kcli.PlanThrottle(md, plan)
		if err != nil {
			return err
		}
		if err := kcli.SetThrottle(ctx, adm, tp, throttle); err != nil {
			return err
		}
		fmt.Printf("Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\n")
		fmt.Printf("The inter-broker throttle limit was set to %d B/s on brokers %v\n", throttle, tp.Brokers)
	}
	if err := kcli.Execute(ctx, adm, plan); err != nil {
		return err
	}
	fmt.Printf("Successfully started partition reassignments for %s\n", partitionNames(plan))
	if wait > 0 {
		return reassignVerify(ctx, adm, plan, wait, failIncomplete)
	}
	return nil
}

// reassignVerify reports the plan's partitions, polling up to wait for
// them to complete and showing the copy's progress meanwhile; it fails
// when one failed or is still moving. Once all are done it removes the
// replication throttle, as Kafka's --verify does.
func reassignVerify(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, wait time.Duration, failIncomplete bool) error {
	deadline := time.Now().Add(wait)
	var shown time.Time
	for {
		var out strings.Builder
		done, err := kcli.Verify(ctx, adm, plan, &out)
		if err != nil {
			return err
		}
		last := done || time.Now().After(deadline)
		if !done && (last || time.Since(shown) >= 2*time.Second) {
			shown = time.Now()
			if err := printProgress(ctx, adm, plan); err != nil {
				fmt.Printf("(progress unknown: %v)\n", err)
			}
		}
		if last {
			fmt.Print(out.String())
			if !done && failIncomplete {
				return fmt.Errorf("the reassignment is not complete")
			}
			if !done {
				return nil
			}
			removed, err := kcli.ClearThrottles(ctx, adm, planTopics(plan))
			if err != nil {
				return fmt.Errorf("the reassignment is complete but its throttle was not removed: %w", err)
			}
			if removed {
				fmt.Println("Throttle was removed.")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// printProgress draws a bar per partition of plan still copying, and
// their total.
func printProgress(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment) error {
	moving, err := kcli.ListReassignments(ctx, adm, planTopics(plan)...)
	if err != nil {
		return err
	}
	mine := kadm.ListPartitionReassignmentsResponses{}
	for _, p := range plan.Partitions {
		if r, ok := moving[p.Topic][p.Partition]; ok {
			if mine[p.Topic] == nil {
				mine[p.Topic] = map[int32]kadm.ListPartitionReassignmentsResponse{}
			}
			mine[p.Topic][p.Partition] = r
		}
	}
	progress, err := kcli.Progress(ctx, adm, mine)
	if err != nil || len(progress) == 0 {
		return err
	}
	var copied, total int64
	for _, mp := range progress {
		kcli.ProgressBar(os.Stdout, fmt.Sprintf("%s-%d", mp.Topic, mp.Partition), mp.BytesCopied, mp.BytesToCopy)
		copied, total = copied+mp.BytesCopied, total+mp.BytesToCopy
	}
	kcli.ProgressBar(os.Stdout, "total", copied, total)
	return nil
}

func planTopics(plan kcli.Reassignment) []string {
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

func partitionNames(plan kcli.Reassignment) string {
	var names []string
	for _, p := range plan.Partitions {
		names = append(names, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	return strings.Join(names, ",")
}
