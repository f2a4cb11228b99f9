package main

import (
	"fmt"
	"os"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// runProduce is `ferry produce TOPIC`: one record per stdin line.
func runProduce(args []string) error {
	fs, bootstrap := newClientFlags("produce TOPIC")
	cfg := kcli.ProduceConfig{}
	fs.StringVar(&cfg.KeySeparator, "key-separator", "", "split each line into key SEP value (default: no key)")
	fs.StringVar(&cfg.Acks, "acks", "all", "acknowledgements: 0, 1 or all")
	fs.StringVar(&cfg.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	partition := fs.Int("partition", -1, "write every record to this partition (default: the key's, or spread)")
	verbose := fs.Bool("verbose", false, "print topic, partition and offset of each record to stderr")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one TOPIC"); err != nil {
		return err
	}
	cfg.Topic, cfg.Partition = pos[0], int32(*partition)
	if _, err := kcli.ProducerOpts(cfg.Acks, cfg.Compression); err != nil {
		return usageErr("%v", err)
	}
	if *verbose {
		cfg.Verbose = os.Stderr
	}
	ctx, stop := signalContext()
	defer stop()
	n, err := kcli.Produce(ctx, *bootstrap, cfg, os.Stdin)
	if *verbose {
		fmt.Fprintf(os.Stderr, "%d records acknowledged\n", n)
	}
	return err
}
