package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runLeaderElection is `ferry leader-election`, Kafka's
// kafka-leader-election.sh: preferred (give each partition back to its
// first replica) or unclean (a leaderless partition to a live replica
// outside the ISR), for one partition or all.
func runLeaderElection(args []string) error {
	fs, bootstrap := newClientFlags("leader-election --election-type preferred|unclean (--topic T --partition P | --all-topic-partitions)")
	typ := fs.String("election-type", "", "preferred or unclean")
	topic := fs.String("topic", "", "the topic of the partition to elect for")
	partition := fs.Int("partition", -1, "the partition to elect for (with --topic)")
	all := fs.Bool("all-topic-partitions", false, "elect for every partition of the cluster")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	how, err := electionHow(*typ)
	if err != nil {
		return err
	}
	var set kadm.TopicsSet
	switch {
	case *all && (*topic != "" || *partition >= 0):
		return usageError(fs, "--all-topic-partitions excludes --topic and --partition")
	case *all:
	case *topic != "" && *partition >= 0:
		set = kadm.TopicsSet{}
		set.Add(*topic, int32(*partition))
	default:
		return usageError(fs, "name a partition (--topic and --partition) or --all-topic-partitions")
	}
	return electLeaders(*bootstrap, how, set)
}

// electLeaders runs the elections (set nil: every partition) and prints
// their outcome as kafka-leader-election.sh does.
func electLeaders(bootstrap string, how kadm.ElectLeadersHow, set kadm.TopicsSet) error {
	typ := "PREFERRED"
	if how == kadm.ElectLiveReplica {
		typ = "UNCLEAN"
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		results, err := adm.ElectLeaders(ctx, how, set)
		if err != nil {
			return err
		}
		return writeElections(results, typ)
	})
}

func electionHow(typ string) (kadm.ElectLeadersHow, error) {
	switch strings.ToLower(typ) {
	case "preferred":
		return kadm.ElectPreferredReplica, nil
	case "unclean":
		return kadm.ElectLiveReplica, nil
	}
	return 0, fmt.Errorf("--election-type %q: want preferred or unclean", typ)
}

// writeElections prints the outcome as Kafka's tool does and fails when a
// partition's election failed (not when it was not needed).
func writeElections(results kadm.ElectLeadersResults, typ string) error {
	var done, notNeeded, failed []string
	for _, t := range slices.Sorted(maps.Keys(results)) {
		for _, p := range slices.Sorted(maps.Keys(results[t])) {
			r := results[t][p]
			name := fmt.Sprintf("%s-%d", t, p)
			switch {
			case r.Err == nil:
				done = append(done, name)
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				notNeeded = append(notNeeded, name)
			default:
				msg := r.Err.Error()
				if r.ErrMessage != "" {
					msg = r.ErrMessage
				}
				failed = append(failed, name+": "+msg)
			}
		}
	}
	if len(done) > 0 {
		fmt.Printf("Successfully completed leader election (%s) for partitions %s\n", typ, strings.Join(done, ", "))
	}
	if len(notNeeded) > 0 {
		fmt.Printf("Valid replica already elected for partitions %s\n", strings.Join(notNeeded, ", "))
	}
	for _, f := range failed {
		fmt.Fprintf(os.Stderr, "Error completing leader election (%s) for partition %s\n", typ, f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d elections failed", len(failed), len(done)+len(notNeeded)+len(failed))
	}
	return nil
}

func usageError(fs *flag.FlagSet, msg string) error {
	fs.Usage()
	return errors.New(msg)
}
