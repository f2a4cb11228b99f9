// Command ferry is the single ferry binary: `ferry serve` runs a node; other
// subcommands are clients of a running node.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `ferry — Kafka-compatible messaging with an HTTP gateway

Usage:
  ferry serve [flags]     run a node (ferry serve -h for flags)
  ferry version           print the version
  ferry health [--url http://127.0.0.1:8080/healthz]   exit 0 if the node answers 200

Kafka clients of a running node (--bootstrap host:port, default localhost:9092,
env FERRY_BOOTSTRAP; on a SASL listener --sasl-mechanism M --sasl-username U
--sasl-password-file F; add -h to any command for its flags):
  ferry topics create NAME [--partitions N] [--replication-factor R] [--config k=v]…
  ferry topics list
  ferry topics describe [NAME…]
  ferry topics alter NAME [--partitions N] [--config k=v]… [--delete-config k]…
  ferry topics delete NAME
  ferry produce TOPIC     stdin lines to records [--key-separator S] [--acks 0|1|all]
                          [--partition P] [--compression none|gzip|snappy|lz4|zstd]
  ferry consume TOPIC     records to stdout [--from-beginning] [--group G] [--partition P]
                          [--offset N|earliest|latest] [--max-messages N] [--timeout 5s]
                          [--print-key] [--key-separator S]
  ferry groups list | describe GROUP | delete GROUP
  ferry groups reset-offsets GROUP --topic T… --to-earliest|--to-latest|--to-offset N [--execute]
  ferry transactions list [--state S]… [--producer-id I] | describe --transactional-id X
  ferry transactions describe-producers --topic T --partition P | find-hanging [--topic T]…
  ferry transactions abort --topic T --partition P (--start-offset N |
                          --producer-id I --producer-epoch E --coordinator-epoch C)
  ferry features describe | upgrade --feature transaction.version=2 |
                          downgrade --feature transaction.version=1 [--unsafe] [--dry-run]
  ferry reassign --generate --topics-to-move-json-file F --broker-list 3,4
  ferry reassign --execute|--verify|--cancel --reassignment-json-file F [--wait D]
                          (kafka-reassign-partitions.sh's JSON files)
  ferry brokers list      each broker's replicas, leaders and bytes
  ferry brokers decommission N [--wait D]   move every replica off broker N
  ferry leader-election --election-type preferred|unclean
                          (--topic T --partition P | --all-topic-partitions)
  ferry users create NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]
                          [--password-file F]   (default: the password from stdin)
  ferry users list [NAME…] | delete NAME [--mechanism M]
                          (offline instead of --bootstrap: --data-dir D of a stopped
                          single node, or --zookeeper Z of a cluster)
  ferry tokens create NAME [--user U] [--expires-in 720h] | list | revoke ID
                          HTTP API tokens, through --url URL as --http-user (password from
                          --password-file or stdin), or offline: --data-dir D | --zookeeper Z
  ferry acls add --allow-principal|--deny-principal User:NAME [--operation OP]…
                          (--topic T|--group G|--cluster|--transactional-id X|--subject S)…
                          [--resource-pattern-type literal|prefixed] [--allow-host IP]
  ferry acls list [same filters; --resource-pattern-type any|match too]
  ferry acls remove (resource flags) [--allow-principal P] [--operation OP] …
  ferry quotas set --entity-type users|clients (--entity-name N | --entity-default)…
                          --add-config producer_byte_rate=B[,consumer_byte_rate=B,request_percentage=P]
  ferry quotas set --entity-type ips (--entity-name IP | --entity-default) --add-config connection_creation_rate=N
  ferry quotas remove …entity… --delete-config K[,K…] | list [--entity-type T [--entity-name N | --entity-default]]…
  ferry bench produce|consume [--topic T] [--records N] [--record-size B] [--duration D] …

Kafka's scripts, with Kafka 3.9's flags (and --zookeeper/--broker-list of 0.8):
  ferry install-scripts DIR   link kafka-topics.sh, kafka-console-producer.sh, … in DIR
                          to this binary (make build does it in bin/); run by those
                          names it behaves as they do (--help on each)

`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if runKafkaScript(os.Args[0], os.Args[1:]) {
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(os.Args[2:])
	case "topics":
		err = runTopics(os.Args[2:])
	case "produce":
		err = runProduce(os.Args[2:])
	case "consume":
		err = runConsume(os.Args[2:])
	case "groups":
		err = runGroups(os.Args[2:])
	case "transactions":
		err = runTransactions(os.Args[2:])
	case "features":
		err = runFeatures(os.Args[2:])
	case "bench":
		err = runBench(os.Args[2:])
	case "brokers":
		err = runBrokers(os.Args[2:])
	case "reassign":
		err = runReassign(os.Args[2:])
	case "quotas":
		err = runQuotas(os.Args[2:])
	case "users":
		err = runUsers(os.Args[2:])
	case "tokens":
		err = runTokens(os.Args[2:])
	case "leader-election":
		err = runLeaderElection(os.Args[2:])
	case "acls":
		err = runACLs(os.Args[2:])
	case "install-scripts":
		err = runInstallScripts(os.Args[2:])
	case "health":
		err = runHealth(os.Args[2:])
	case "version", "--version":
		fmt.Println("ferry", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "ferry: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	exit(err)
}

// exit ends the process: 0 for success or -h, 2 for a usage mistake, 1 for
// anything else.
func exit(err error) {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "ferry:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "ferry:", err)
	os.Exit(1)
}
