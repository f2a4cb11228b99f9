// Package kcli is the logic behind ferry's Kafka client subcommands
// (`ferry topics`, `produce`, `consume`, `groups`): what kafka-topics.sh,
// kafka-console-producer.sh, kafka-console-consumer.sh and
// kafka-consumer-groups.sh do, spoken through franz-go (kgo for records, kadm
// for administration). cmd/ferry parses flags into the config structs here and
// prints what these functions return; nothing here reads flags or os.Args.
// Both of cmd/ferry's front ends use it: ferry's own subcommands and Kafka's
// script names (kafka-topics.sh, …; cmd/ferry/kafka*.go), so an operation
// has one implementation whichever way it is asked for.
//
// Every command starts with Dial, which checks that a bootstrap broker accepts
// TCP connections before handing the seeds to kgo: kgo retries an unreachable
// seed until its context ends, and a user who typed the wrong port deserves
// "connection refused" in a second rather than a timeout after thirty.
package kcli
