package main

import (
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runGroups is `ferry groups list|describe|reset-offsets|delete`.
func runGroups(args []string) error {
	return subcommand("groups", args, map[string]func([]string) error{
		"list":          groupsList,
		"describe":      groupsDescribe,
		"reset-offsets": groupsResetOffsets,
		"delete":        groupsDelete,
	})
}

func groupsList(args []string) error {
	fs, bootstrap := newClientFlags("groups list")
	state := fs.Bool("state", false, "print each group's state after its name")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		groups, err := kcli.ListGroups(ctx, adm)
		for _, g := range groups {
			if *state {
				fmt.Printf("%s\t%s\n", g.Group, g.State)
			} else {
				fmt.Println(g.Group)
			}
		}
		return err
	})
}

func groupsDescribe(args []string) error {
	fs, bootstrap := newClientFlags("groups describe GROUP")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one GROUP"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		g, err := kcli.DescribeGroup(ctx, adm, pos[0])
		if err != nil {
			return err
		}
		kcli.WriteGroup(os.Stdout, g)
		return nil
	})
}

func groupsDelete(args []string) error {
	fs, bootstrap := newClientFlags("groups delete GROUP")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one GROUP"); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return kcli.DeleteGroup(ctx, adm, pos[0])
	})
}

func groupsResetOffsets(args []string) error {
	fs, bootstrap := newClientFlags("groups reset-offsets GROUP --topic T --to-earliest|--to-latest|--to-offset N")
	var topics stringList
	fs.Var(&topics, "topic", "topic whose partitions are reset (required, repeatable)")
	to := kcli.ResetTarget{Offset: -1}
	fs.BoolVar(&to.Earliest, "to-earliest", false, "reset to each partition's start offset")
	fs.BoolVar(&to.Latest, "to-latest", false, "reset to each partition's end offset")
	fs.Int64Var(&to.Offset, "to-offset", -1, "reset to this offset, clamped to each partition's range")
	execute := fs.Bool("execute", false, "commit the new offsets (default: dry run, print them)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkResetArgs(pos, topics, to); err != nil {
		return err
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		scope := kcli.ResetScope{Topics: map[string][]int32{}}
		for _, t := range topics {
			scope.Topics[t] = nil
		}
		plan, err := kcli.PlanReset(ctx, adm, pos[0], scope, to)
		if err != nil {
			return err
		}
		if *execute {
			if err := kcli.ExecuteReset(ctx, adm, pos[0], plan); err != nil {
				return err
			}
		}
		kcli.WritePlan(os.Stdout, pos[0], plan)
		if !*execute {
			fmt.Fprintln(os.Stderr, "dry run: nothing committed; add --execute to apply")
		}
		return nil
	})
}

func checkResetArgs(pos []string, topics []string, to kcli.ResetTarget) error {
	if err := wantArgs(pos, 1, 1, "one GROUP"); err != nil {
		return err
	}
	if len(topics) == 0 {
		return usageErr("--topic is required")
	}
	n := 0
	for _, set := range []bool{to.Earliest, to.Latest, to.Offset >= 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageErr("give exactly one of --to-earliest, --to-latest, --to-offset N")
	}
	return nil
}
