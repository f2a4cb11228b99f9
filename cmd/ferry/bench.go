package main

import (
	"context"
	"os"

	"github.com/ferry-mq/ferry/cmd/ferry/kbench"
)

// runBench is `ferry bench produce|consume|e2e`.
func runBench(args []string) error {
	return subcommand("bench", args, map[string]func([]string) error{
		"produce": func(args []string) error { return benchRun("produce", args, kbench.Produce) },
		"consume": func(args []string) error { return benchRun("consume", args, kbench.Consume) },
		"e2e":     func(args []string) error { return benchRun("e2e", args, kbench.EndToEnd) },
	})
}

func benchRun(op string, args []string, run func(context.Context, kbench.Config) (kbench.Result, error)) error {
	fs, bootstrap := newClientFlags("bench " + op)
	var cfg kbench.Config
	cfg.RegisterFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	cfg.Bootstrap = *bootstrap
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if kbench.IsTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := run(ctx, cfg)
	if res.Records > 0 {
		res.WriteText(os.Stdout)
	}
	return err
}
