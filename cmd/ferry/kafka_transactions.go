package main

import (
	"slices"
	"strconv"
)

// kafkaTransactionCommands are kafka-transactions.sh's commands; the
// options before the command are the tool's (--bootstrap-server,
// --command-config), those after it the command's.
var kafkaTransactionCommands = []string{"list", "describe", "describe-producers", "abort", "find-hanging", "force-terminate"}

// kafkaTransactions is kafka-transactions.sh (Kafka 3.9): `--bootstrap-server
// B COMMAND [options]` over `ferry transactions`.
func kafkaTransactions(args []string) error {
	t := newKafkaTool("kafka-transactions.sh", "This tool is used to analyze the transactional state of producers in the cluster. It can be used to detect and recover from hanging transactions.", "command-config", false)
	at := slices.IndexFunc(args, func(a string) bool { return slices.Contains(kafkaTransactionCommands, a) })
	if at < 0 {
		if err := t.parse(args); err != nil {
			return err
		}
		return t.usage("Missing command: one of list, describe, describe-producers, abort, find-hanging, force-terminate")
	}
	if err := t.parse(args[:at]); err != nil {
		return err
	}
	command, rest := args[at], kafkaTransactionOptions(args[at+1:])
	if command == "force-terminate" {
		return t.usage("force-terminate is not supported: abort the transaction's partitions with the abort command")
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return runTransactions(append([]string{command, "--bootstrap", bootstrap}, rest...))
}

// kafkaTransactionOptions turns Kafka's spellings into ferry's:
// find-hanging's --max-transaction-timeout is in minutes there.
func kafkaTransactionOptions(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--max-transaction-timeout" {
			if n, err := strconv.Atoi(out[i+1]); err == nil {
				out[i+1] = strconv.Itoa(n) + "m"
			}
		}
	}
	return out
}
