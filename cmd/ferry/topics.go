package main

import (
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runTopics is `ferry topics create|list|describe|delete|alter`.
func runTopics(args []string) error {
	return subcommand("topics", args, map[string]func([]string) error{
		"create":   topicsCreate,
		"list":     topicsList,
		"describe": topicsDescribe,
		"delete":   topicsDelete,
		"alter":    topicsAlter,
	})
}

func topicsCreate(args []string) error {
	fs, bootstrap := newClientFlags("topics create NAME")
	partitions := fs.Int("partitions", -1, "partition count (default: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (default: the broker's default)")
	configs := keyValues{}
	fs.Var(configs, "config", "topic config key=value (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one topic NAME"); err != nil {
		return err
	}
	spec := kcli.TopicSpec{Name: pos[0], Partitions: int32(*partitions), ReplicationFactor: int16(*rf), Configs: configs}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return kcli.CreateTopic(ctx, adm, spec)
	})
}

func topicsList(args []string) error {
	fs, bootstrap := newClientFlags("topics list")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		names, err := kcli.ListTopics(ctx, adm)
		for _, n := range names {
			fmt.Println(n)
		}
		return err
	})
}

func topicsDescribe(args []string) error {
	fs, bootstrap := newClientFlags("topics describe [NAME…]")
	all := fs.Bool("all-configs", false, "show every config, not only those set on the topic")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		infos, err := kcli.DescribeTopics(ctx, adm, pos...)
		if err != nil {
			return err
		}
		kcli.WriteTopicInfos(os.Stdout, infos, *all)
		for _, t := range infos {
			if t.Err != nil {
				return fmt.Errorf("topic %q: %w", t.Name, t.Err)
			}
		}
		return nil
	})
}

func topicsDelete(args []string) error {
	fs, bootstrap := newClientFlags("topics delete NAME")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one topic NAME"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return kcli.DeleteTopic(ctx, adm, pos[0])
	})
}

func topicsAlter(args []string) error {
	fs, bootstrap := newClientFlags("topics alter NAME")
	partitions := fs.Int("partitions", 0, "new total partition count (can only grow)")
	set := keyValues{}
	fs.Var(set, "config", "set topic config key=value (repeatable)")
	var del stringList
	fs.Var(&del, "delete-config", "remove a topic config, back to the broker default (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one topic NAME"); err != nil {
		return err
	}
	if *partitions == 0 && len(set) == 0 && len(del) == 0 {
		return usageErr("ferry topics alter: give --partitions, --config or --delete-config")
	}
	alter := kcli.TopicAlter{Name: pos[0], Partitions: int32(*partitions), Set: set, Delete: del}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return kcli.AlterTopic(ctx, adm, alter)
	})
}
