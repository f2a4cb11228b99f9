package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runBrokers is `ferry brokers list`: each live broker with the replicas
// it holds, the partitions it leads and their bytes on disk, so an
// imbalance shows at a glance.
func runBrokers(args []string) error {
	return subcommand("brokers", args, map[string]func([]string) error{
		"list":         brokersList,
		"decommission": brokersDecommission,
	})
}

func brokersList(args []string) error {
	fs, bootstrap := newClientFlags("brokers list")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		// A broker that does not answer leaves its bytes unknown ("-").
		dirs, _ := adm.DescribeAllLogDirs(ctx, nil)
		kcli.WriteLoads(os.Stdout, kcli.Loads(md, dirs))
		return nil
	})
}

// brokersDecommission drains broker N: it plans moving each of its
// replicas to the least loaded other broker, starts the moves and, with
// --wait, waits for them. N can then be stopped without losing a replica.
func brokersDecommission(args []string) error {
	fs, bootstrap := newClientFlags("brokers decommission N")
	wait := fs.Duration("wait", 25*time.Second, "how long to wait for the moves to complete (0: do not wait)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one broker id"); err != nil {
		return err
	}
	id, err := strconv.ParseInt(pos[0], 10, 32)
	if err != nil {
		return fmt.Errorf("broker id %q: %w", pos[0], err)
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		plan, err := kcli.Drain(md, int32(id))
		if err != nil {
			return err
		}
		if len(plan.Partitions) == 0 {
			fmt.Printf("Broker %d holds no replica.\n", id)
			return nil
		}
		fmt.Printf("Moving %d replicas off broker %d:\n%s\n", len(plan.Partitions), id, plan.JSON())
		if err := kcli.Execute(ctx, adm, plan); err != nil {
			return err
		}
		if *wait <= 0 {
			return nil
		}
		return reassignVerify(ctx, adm, plan, *wait, true)
	})
}
