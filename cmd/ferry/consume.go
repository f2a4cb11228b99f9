package main

import (
	"fmt"
	"os"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runConsume is `ferry consume TOPIC`: record values to stdout, one a line.
func runConsume(args []string) error {
	fs, bootstrap := newClientFlags("consume TOPIC")
	cfg := kcli.ConsumeConfig{}
	fs.BoolVar(&cfg.FromBeginning, "from-beginning", false, "start at the earliest offset (with --group: if nothing is committed)")
	fs.StringVar(&cfg.Group, "group", "", "consume as a member of this group, committing what is printed")
	partition := fs.Int("partition", -1, "read only this partition")
	fs.StringVar(&cfg.Offset, "offset", "", "start offset: earliest, latest or a number (default latest)")
	fs.Int64Var(&cfg.MaxMessages, "max-messages", 0, "exit after printing this many records (0: no limit)")
	fs.DurationVar(&cfg.IdleTimeout, "timeout", 0, "exit when nothing arrives for this long, e.g. 5s (0: wait forever)")
	fs.BoolVar(&cfg.PrintKey, "print-key", false, "print the key before the value")
	fs.StringVar(&cfg.KeySeparator, "key-separator", "\t", "separator between key and value with --print-key")
	verbose := fs.Bool("verbose", false, "print the count of records consumed to stderr at exit")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one TOPIC"); err != nil {
		return err
	}
	cfg.Topic, cfg.Partition = pos[0], int32(*partition)
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	ctx, stop := signalContext()
	defer stop()
	n, err := kcli.Consume(ctx, *bootstrap, cfg, os.Stdout)
	if *verbose {
		fmt.Fprintf(os.Stderr, "Processed a total of %d messages\n", n)
	}
	return err
}
