package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/replication/wire"
)

// runReassign is `ferry reassign`, Kafka's kafka-reassign-partitions.sh
// with its JSON files: --generate proposes a placement of topics on a
// broker list, --execute starts a reassignment, --verify reports it,
// --cancel returns partitions to their original replicas.
func runReassign(args []string) error {
	fs, bootstrap := newClientFlags("reassign --generate|--execute|--verify|--cancel …")
	generate := fs.Bool("generate", false, "print the current assignment and a proposed one for --topics-to-move-json-file over --broker-list")
	execute := fs.Bool("execute", false, "start the reassignment in --reassignment-json-file")
	verify := fs.Bool("verify", false, "report each partition of --reassignment-json-file: completed, in progress or failed")
	cancel := fs.Bool("cancel", false, "cancel the reassignments of the partitions in --reassignment-json-file")
	topicsFile := fs.String("topics-to-move-json-file", "", `{"topics":[{"topic":"t"}],"version":1}`)
	brokerList := fs.String("broker-list", "", "brokers to place the topics on, e.g. 3,4")
	planFile := fs.String("reassignment-json-file", "", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4]}]}`)
	wait := fs.Duration("wait", 0, "with --execute or --verify: wait up to this long for the reassignment to complete, showing its progress")
	throttle := fs.Int64("throttle", 0, "with --execute: bytes/s the brokers taking part may spend copying the moved replicas (removed by --verify once done)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	modes := 0
	for _, m := range []bool{*generate, *execute, *verify, *cancel} {
		if m {
			modes++
		}
	}
	if modes != 1 {
		return usageError(fs, "give exactly one of --generate, --execute, --verify, --cancel")
	}
	if *throttle < 0 || *throttle > 0 && !*execute {
		return usageError(fs, "--throttle is a positive number of bytes/s, with --execute")
	}
	if *generate {
		return reassignGenerate(*bootstrap, *topicsFile, *brokerList)
	}
	if *planFile == "" {
		return usageError(fs, "--reassignment-json-file is needed")
	}
	f, err := os.Open(*planFile)
	if err != nil {
		return err
	}
	plan, err := kcli.ParseReassignment(f)
	f.Close()
	if err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		switch {
		case *execute:
			return reassignExecute(ctx, adm, plan, *throttle, *wait)
		case *verify:
			return reassignVerify(ctx, adm, plan, *wait)
		default:
			if err := kcli.Cancel(ctx, adm, plan); err != nil {
				return err
			}
			fmt.Printf("Successfully cancelled partition reassignments for %s\n", partitionNames(plan))
			return nil
		}
	})
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

func reassignExecute(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, throttle int64, wait time.Duration) error {
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
		return reassignVerify(ctx, adm, plan, wait)
	}
	return nil
}

// reassignVerify reports the plan's partitions, polling up to wait for
// them to complete and showing the copy's progress meanwhile; it fails
// when one failed or is still moving. Once all are done it removes the
// replication throttle, as Kafka's --verify does.
func reassignVerify(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, wait time.Duration) error {
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
			if !done {
				return fmt.Errorf("the reassignment is not complete")
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

// kafkaReassigner is the HTTP gateway's reassignments: Kafka requests
// through this node's own listener, which the client routes to the
// controller wherever it is.
type kafkaReassigner struct {
	kafkaAddr string
	dial      wire.DialFunc
}

func (k kafkaReassigner) admin() (*kadm.Client, error) {
	cl, err := kgo.NewClient(selfClientOpts(k.kafkaAddr, k.dial)...)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

func (k kafkaReassigner) Plan(ctx context.Context, topics []string, brokers []int32) (api.ReassignmentPlan, error) {
	adm, err := k.admin()
	if err != nil {
		return api.ReassignmentPlan{}, err
	}
	defer adm.Close()
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return api.ReassignmentPlan{}, err
	}
	cur, err := kcli.Current(md, topics)
	if err != nil {
		return api.ReassignmentPlan{}, err
	}
	proposed, err := kcli.Propose(md, topics, brokers, uint64(time.Now().UnixNano()))
	if err != nil {
		return api.ReassignmentPlan{}, err
	}
	return api.ReassignmentPlan{Current: toMoves(cur), Proposed: toMoves(proposed)}, nil
}

func toMoves(r kcli.Reassignment) []api.ReassignmentMove {
	out := make([]api.ReassignmentMove, 0, len(r.Partitions))
	for _, p := range r.Partitions {
		out = append(out, api.ReassignmentMove{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas})
	}
	return out
}

func (k kafkaReassigner) Start(ctx context.Context, moves []api.ReassignmentMove) ([]api.PartitionResult, error) {
	adm, err := k.admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, m := range moves {
		if m.Replicas == nil {
			req.CancelAssign(m.Topic, m.Partition)
		} else {
			req.Assign(m.Topic, m.Partition, m.Replicas)
		}
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []api.PartitionResult
	res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		pr := api.PartitionResult{Topic: r.Topic, Partition: r.Partition}
		pr.ErrorCode, pr.Message = kafkaError(r.Err, r.ErrMessage)
		out = append(out, pr)
	})
	slices.SortFunc(out, func(a, b api.PartitionResult) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

func (k kafkaReassigner) Moving(ctx context.Context) (api.Reassignments, error) {
	adm, err := k.admin()
	if err != nil {
		return api.Reassignments{}, err
	}
	defer adm.Close()
	res, err := kcli.ListReassignments(ctx, adm)
	if err != nil {
		return api.Reassignments{}, err
	}
	answer := api.Reassignments{}
	// Progress and the throttle are best effort, and bounded: a broker
	// that does not answer (frozen, partitioned away) leaves the moves
	// without progress rather than holding the list.
	extra, cancel := context.WithTimeout(ctx, progressTimeout)
	defer cancel()
	progress, _ := kcli.Progress(extra, adm, res)
	of := map[string]kcli.MoveProgress{}
	for _, mp := range progress {
		of[fmt.Sprintf("%s-%d", mp.Topic, mp.Partition)] = mp
	}
	for _, t := range slices.Sorted(maps.Keys(res)) {
		for _, p := range slices.Sorted(maps.Keys(res[t])) {
			r := res[t][p]
			mp := api.MovingPartition{Topic: t, Partition: p, Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas}
			if got, ok := of[fmt.Sprintf("%s-%d", t, p)]; ok {
				mp.Progress = &api.MoveProgress{BytesCopied: got.BytesCopied, BytesToCopy: got.BytesToCopy}
				answer.Total.BytesCopied += got.BytesCopied
				answer.Total.BytesToCopy += got.BytesToCopy
			}
			answer.Reassignments = append(answer.Reassignments, mp)
		}
	}
	answer.ThrottleBytesPerSec, _ = kcli.ThrottleRate(extra, adm)
	return answer, nil
}

// progressTimeout bounds the DescribeLogDirs and DescribeConfigs a
// listing of moves asks every broker.
const progressTimeout = 3 * time.Second

func (k kafkaReassigner) Throttle(ctx context.Context, moves []api.ReassignmentMove, rate int64) error {
	adm, err := k.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	if rate <= 0 {
		_, err := kcli.ClearThrottles(ctx, adm, nil)
		return err
	}
	plan := kcli.Reassignment{Version: 1}
	var topics []string
	for _, m := range moves {
		plan.Partitions = append(plan.Partitions, kcli.PartitionMove{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas})
		topics = append(topics, m.Topic)
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	tp, err := kcli.PlanThrottle(md, plan)
	if err != nil {
		return err
	}
	return kcli.SetThrottle(ctx, adm, tp, rate)
}
