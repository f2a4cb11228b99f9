package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runTransactions is `ferry transactions list|describe|describe-producers|
// abort|find-hanging`, as kafka-transactions.sh.
func runTransactions(args []string) error {
	return subcommand("transactions", args, map[string]func([]string) error{
		"list":               transactionsList,
		"describe":           transactionsDescribe,
		"describe-producers": transactionsDescribeProducers,
		"abort":              transactionsAbort,
		"find-hanging":       transactionsFindHanging,
	})
}

func transactionsList(args []string) error {
	fs, bootstrap := newClientFlags("transactions list")
	var states stringList
	fs.Var(&states, "state", "only transactions in this state (Ongoing, PrepareCommit, CompleteAbort, …); repeatable")
	pid := fs.Int64("producer-id", -1, "only this producer id's transactional id")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	var pids []int64
	if *pid >= 0 {
		pids = []int64{*pid}
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		txns, err := kcli.ListTransactions(ctx, adm, states, pids)
		kcli.WriteListedTransactions(os.Stdout, txns)
		return err
	})
}

func transactionsDescribe(args []string) error {
	fs, bootstrap := newClientFlags("transactions describe --transactional-id X")
	id := fs.String("transactional-id", "", "the transactional id to describe")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *id == "" {
		return usageErr("--transactional-id is required")
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		d, err := kcli.DescribeTransaction(ctx, adm, *id)
		if err != nil {
			return err
		}
		kcli.WriteDescribedTransaction(os.Stdout, d, time.Now())
		return nil
	})
}

func transactionsDescribeProducers(args []string) error {
	fs, bootstrap := newClientFlags("transactions describe-producers --topic T --partition P")
	topic := fs.String("topic", "", "the partition's topic")
	partition := fs.Int("partition", -1, "the partition")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *topic == "" || *partition < 0 {
		return usageErr("--topic and --partition are required")
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		producers, err := kcli.DescribeProducers(ctx, adm, *topic, int32(*partition))
		if err != nil {
			return err
		}
		kcli.WriteDescribedProducers(os.Stdout, producers)
		return nil
	})
}

func transactionsAbort(args []string) error {
	fs, bootstrap := newClientFlags("transactions abort --topic T --partition P (--start-offset N | --producer-id I --producer-epoch E --coordinator-epoch C)")
	topic := fs.String("topic", "", "the hanging transaction's topic")
	partition := fs.Int("partition", -1, "the hanging transaction's partition")
	start := fs.Int64("start-offset", -1, "the offset the hanging transaction starts at (its producer is looked up)")
	pid := fs.Int64("producer-id", -1, "the hanging transaction's producer id")
	epoch := fs.Int("producer-epoch", -1, "its producer epoch")
	coord := fs.Int("coordinator-epoch", -1, "its coordinator epoch")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	switch {
	case *topic == "" || *partition < 0:
		return usageErr("--topic and --partition are required")
	case *start < 0 && (*pid < 0 || *epoch < 0 || *epoch > 32767 || *coord < 0):
		return usageErr("give --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch")
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		spec := kcli.AbortSpec{Topic: *topic, Partition: int32(*partition), ProducerID: *pid,
			ProducerEpoch: int16(*epoch), CoordinatorEpoch: int32(*coord)}
		if *start >= 0 {
			var err error
			if spec, err = kcli.AbortSpecFromStart(ctx, adm, *topic, int32(*partition), *start); err != nil {
				return err
			}
		}
		if err := kcli.AbortTransaction(ctx, adm, spec); err != nil {
			return err
		}
		fmt.Printf("aborted producer %d (epoch %d) on %s-%d\n", spec.ProducerID, spec.ProducerEpoch, spec.Topic, spec.Partition)
		return nil
	})
}

func transactionsFindHanging(args []string) error {
	fs, bootstrap := newClientFlags("transactions find-hanging [--topic T]…")
	var topics stringList
	fs.Var(&topics, "topic", "search this topic's partitions (default: every topic); repeatable")
	maxTimeout := fs.Duration("max-transaction-timeout", 15*time.Minute,
		"transactions open longer than this are suspects (the brokers' transaction.max.timeout.ms)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		hanging, err := kcli.FindHanging(ctx, adm, topics, *maxTimeout, time.Now())
		if err != nil {
			return err
		}
		kcli.WriteHanging(os.Stdout, hanging)
		if len(hanging) > 0 {
			fmt.Fprintf(os.Stderr, "%d hanging transaction(s): end each with `ferry transactions abort` (%s)\n", len(hanging),
				strings.Join([]string{"--topic", "--partition", "--start-offset"}, " "))
		}
		return nil
	})
}
