package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// runClassTools maps the classes old runbooks start with
// kafka-run-class.sh to the scripts that front them (Kafka moved several
// from kafka.* to org.apache.kafka.tools.*; both names are kept).
var runClassTools = map[string]string{
	"kafka.admin.TopicCommand":                                   "kafka-topics.sh",
	"org.apache.kafka.tools.TopicCommand":                        "kafka-topics.sh",
	"kafka.tools.ConsoleProducer":                                "kafka-console-producer.sh",
	"org.apache.kafka.tools.ConsoleProducer":                     "kafka-console-producer.sh",
	"kafka.tools.ConsoleConsumer":                                "kafka-console-consumer.sh",
	"org.apache.kafka.tools.consumer.ConsoleConsumer":            "kafka-console-consumer.sh",
	"kafka.admin.ConsumerGroupCommand":                           "kafka-consumer-groups.sh",
	"org.apache.kafka.tools.consumer.group.ConsumerGroupCommand": "kafka-consumer-groups.sh",
	"kafka.admin.ReassignPartitionsCommand":                      "kafka-reassign-partitions.sh",
	"org.apache.kafka.tools.reassign.ReassignPartitionsCommand":  "kafka-reassign-partitions.sh",
	"kafka.admin.PreferredReplicaLeaderElectionCommand":          "kafka-preferred-replica-election.sh",
	"kafka.admin.LeaderElectionCommand":                          "kafka-leader-election.sh",
	"org.apache.kafka.tools.LeaderElectionCommand":               "kafka-leader-election.sh",
	"kafka.admin.ConfigCommand":                                  "kafka-configs.sh",
	"kafka.admin.AclCommand":                                     "kafka-acls.sh",
	"kafka.tools.GetOffsetShell":                                 "kafka-get-offsets.sh",
	"org.apache.kafka.tools.GetOffsetShell":                      "kafka-get-offsets.sh",
	"kafka.admin.DeleteRecordsCommand":                           "kafka-delete-records.sh",
	"org.apache.kafka.tools.DeleteRecordsCommand":                "kafka-delete-records.sh",
	"kafka.admin.LogDirsCommand":                                 "kafka-log-dirs.sh",
	"org.apache.kafka.tools.LogDirsCommand":                      "kafka-log-dirs.sh",
	"kafka.tools.DumpLogSegments":                                "kafka-dump-log.sh",
	"kafka.tools.ProducerPerformance":                            "kafka-producer-perf-test.sh",
	"org.apache.kafka.tools.ProducerPerformance":                 "kafka-producer-perf-test.sh",
	"org.apache.kafka.tools.TransactionsCommand":                 "kafka-transactions.sh",
	"kafka.tools.ConsumerPerformance":                            "kafka-consumer-perf-test.sh",
	"org.apache.kafka.tools.ConsumerPerformance":                 "kafka-consumer-perf-test.sh",
}

// kafkaRunClass is kafka-run-class.sh CLASS ARGS…, for the classes above
// and 0.8's kafka.admin.DeleteTopicCommand (--topic T --zookeeper Z).
func kafkaRunClass(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		var classes []string
		for c := range runClassTools {
			classes = append(classes, c)
		}
		classes = append(classes, "kafka.admin.DeleteTopicCommand")
		sort.Strings(classes)
		fmt.Printf("USAGE: kafka-run-class.sh [-daemon] [-name servicename] [-loggc] classname [opts]\n\nClasses ferry runs:\n  %s\n", strings.Join(classes, "\n  "))
		if len(args) == 0 {
			return &kafkaError{}
		}
		return nil
	}
	for len(args) > 0 && (args[0] == "-daemon" || args[0] == "-loggc" || args[0] == "-name") {
		if args[0] == "-name" && len(args) > 1 {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return &kafkaError{msg: "kafka-run-class.sh: no class named"}
	}
	class, rest := args[0], args[1:]
	if class == "kafka.admin.DeleteTopicCommand" {
		if err := kafkaTopics(append([]string{"--delete"}, rest...)); err != nil {
			return err
		}
		fmt.Println("deletion succeeded!")
		return nil
	}
	tool, ok := runClassTools[class]
	if !ok {
		fmt.Fprintf(os.Stderr, "Error: Could not find or load main class %s\n", class)
		return &kafkaError{}
	}
	return kafkaScripts[tool](rest)
}

// kafka-run-class.sh dispatches to the other scripts, so it joins the
// table after it is built.
func init() { kafkaScripts["kafka-run-class.sh"] = kafkaRunClass }
