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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
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
	wait := fs.Duration("wait", 0, "with --execute or --verify: wait up to this long for the reassignment to complete")
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
			return reassignExecute(ctx, adm, plan, *wait)
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

func reassignExecute(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, wait time.Duration) error {
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
// them to complete; it fails when one failed or is still moving.
func reassignVerify(ctx context.Context, adm *kadm.Client, plan kcli.Reassignment, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var out strings.Builder
		done, err := kcli.Verify(ctx, adm, plan, &out)
		if err != nil {
			return err
		}
		if done || time.Now().After(deadline) {
			fmt.Print(out.String())
			if !done {
				return fmt.Errorf("the reassignment is not complete")
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
type kafkaReassigner struct{ kafkaAddr string }

func (k kafkaReassigner) admin() (*kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.kafkaAddr))
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.kafkaAddr))
	if err != nil {
		return api.Reassignments{}, err
	}
	defer cl.Close()
	// kadm's ListPartitionReassignments answers an empty map for no
	// topics without asking; a null topic list asks for every move.
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return api.Reassignments{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return api.Reassignments{}, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return api.Reassignments{}, err
	}
	var out []api.MovingPartition
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, api.MovingPartition{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas})
		}
	}
	slices.SortFunc(out, func(a, b api.MovingPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return api.Reassignments{Reassignments: out}, nil
}

func (k kafkaReassigner) Throttle(ctx context.Context, moves []api.ReassignmentMove, rate int64) error {
	return fmt.Errorf("replication throttles are not built yet")
}
