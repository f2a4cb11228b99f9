package main

import (
	"context"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runBrokers is `ferry brokers list`: each live broker with the replicas
// it holds, the partitions it leads and their bytes on disk, so an
// imbalance shows at a glance.
func runBrokers(args []string) error {
	return subcommand("brokers", args, map[string]func([]string) error{
		"list": brokersList,
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
