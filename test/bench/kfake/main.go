// Command kfake is the baseline of the Kafka benchmark: it starts an
// in-process franz-go kfake cluster of one broker on loopback and runs the
// same produce-then-consume benchmark as `ferry bench` (package
// cmd/ferry/kbench) against it, printing the same RESULT lines.
// scripts/bench-kafka.sh runs it next to ferry and prints the ratio.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ferry-mq/ferry/cmd/ferry/kbench"
)

func main() {
	var cfg kbench.Config
	fs := flag.NewFlagSet("kfake", flag.ExitOnError)
	cfg.RegisterFlags(fs)
	ops := fs.String("ops", "produce,consume", "benchmarks to run, in order: produce, consume, e2e")
	fs.Parse(os.Args[1:])
	if err := run(cfg, strings.Split(*ops, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "kfake bench:", err)
		os.Exit(1)
	}
}

var benchmarks = map[string]func(context.Context, kbench.Config) (kbench.Result, error){
	"produce": kbench.Produce, "consume": kbench.Consume, "e2e": kbench.EndToEnd,
}

func run(cfg kbench.Config, ops []string) error {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	cfg.Bootstrap = strings.Join(cluster.ListenAddrs(), ",")
	if kbench.IsTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, op := range ops {
		bench, ok := benchmarks[op]
		if !ok {
			return fmt.Errorf("--ops: unknown benchmark %q", op)
		}
		res, err := bench(ctx, cfg)
		if err != nil {
			return err
		}
		res.WriteText(os.Stdout)
	}
	return nil
}
