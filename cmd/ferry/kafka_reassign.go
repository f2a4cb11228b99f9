package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaReassignPartitions is kafka-reassign-partitions.sh over `ferry
// reassign`'s implementation.
func kafkaReassignPartitions(args []string) error {
	t := newKafkaTool("kafka-reassign-partitions.sh", "This tool helps to move topic partitions between replicas.", "command-config", true)
	var o reassignOptions
	var timeoutMs, logDirThrottle int64
	var additional, preserve, disableRack bool
	timeoutMs = 10000
	t.flag(&o.generate, "generate", "Generate a candidate partition reassignment configuration. Note that this only generates a candidate assignment, it does not execute it.")
	t.flag(&o.execute, "execute", "Kick off the reassignment as specified by the --reassignment-json-file option.")
	t.flag(&o.verify, "verify", "Verify if the reassignment completed as specified by the --reassignment-json-file option. If there is a throttle engaged for the replicas specified, and the rebalance has completed, the throttle will be removed.")
	t.flag(&o.cancel, "cancel", "Cancel an active reassignment.")
	t.flag(&o.list, "list", "List all active partition reassignments.")
	t.str(&o.topicsFile, "topics-to-move-json-file", "String: topics to reassign json file path", "Generate a reassignment configuration to move the partitions of the specified topics to the list of brokers specified by the --broker-list option. The format to use is - {\"topics\": [{\"topic\": \"foo\"},{\"topic\": \"foo1\"}], \"version\":1}")
	t.str(&o.brokerList, "broker-list", "String: brokerlist", "The list of brokers to which the partitions need to be reassigned in the form \"0,1,2\". This is required if --topics-to-move-json-file is used to generate reassignment configuration.")
	t.str(&o.planFile, "reassignment-json-file", "String: manual assignment json file path", "The JSON file with the partition reassignment configuration. The format to use is - {\"partitions\": [{\"topic\": \"foo\", \"partition\": 1, \"replicas\": [1,2,3], \"log_dirs\": [\"dir1\",\"dir2\",\"dir3\"]}], \"version\":1}")
	t.num(&o.throttle, "throttle", "Long: throttle", "The movement of partitions between brokers will be throttled to this value (bytes/sec).")
	t.num(&logDirThrottle, "replica-alter-log-dirs-throttle", "Long: replicaAlterLogDirsThrottle", "Not supported: ferry keeps one log directory per broker.")
	t.num(&timeoutMs, "timeout", "Long: timeout", "The maximum time in ms to wait for log directory replica assignment to begin.")
	t.flag(&additional, "additional", "Execute this reassignment in addition to any other ongoing ones.")
	t.flag(&preserve, "preserve-throttles", "Do not modify broker or topic throttles.")
	t.flag(&disableRack, "disable-rack-aware", "Disable rack aware replica assignment.")
	if err := t.parse(args); err != nil {
		return err
	}
	if countTrue(o.generate, o.execute, o.verify, o.cancel, o.list) != 1 {
		return t.usage("Command must include exactly one action: --generate, --execute, --verify, --cancel, or --list")
	}
	if o.generate && (o.topicsFile == "" || o.brokerList == "") {
		return t.usage("Missing required argument \"[topics-to-move-json-file]\" or \"[broker-list]\"")
	}
	if (o.execute || o.verify || o.cancel) && o.planFile == "" {
		return t.usage("Missing required argument \"[reassignment-json-file]\"")
	}
	if logDirThrottle > 0 {
		return fmt.Errorf("--replica-alter-log-dirs-throttle: ferry keeps one log directory per broker")
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return reassign(bootstrap, o, func(msg string) error { return t.usage("%s", msg) })
}

// kafkaLeaderElection is kafka-leader-election.sh.
func kafkaLeaderElection(args []string) error {
	t := newKafkaTool("kafka-leader-election.sh", "This tool attempts to elect a new leader for a set of topic partitions. The type of elections supported are preferred replicas and unclean replicas.", "admin.config", false)
	var typ, topic, jsonFile string
	var partition int64 = -1
	var all bool
	t.str(&typ, "election-type", "[PREFERRED,UNCLEAN]: election type", "Type of election to attempt. Possible values are \"preferred\" for preferred leader election or \"unclean\" for unclean leader election.")
	t.str(&topic, "topic", "String: topic name", "Name of topic for which to perform an election. Not allowed if --path-to-json-file or --all-topic-partitions is specified.")
	t.num(&partition, "partition", "Integer: partition id", "Partition id for which to perform an election. REQUIRED if --topic is specified.")
	t.flag(&all, "all-topic-partitions", "Perform election on all of the eligible topic partitions based on the type of election.")
	t.str(&jsonFile, "path-to-json-file", "String: Path to JSON file", "The JSON file with the list of partition for which leader elections should be performed: {\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}]}")
	if err := t.parse(args); err != nil {
		return err
	}
	if typ == "" {
		return t.usage("Missing required option(s) [election-type]")
	}
	how, err := electionHow(typ)
	if err != nil {
		return t.usage("%v", err)
	}
	set, err := electionPartitions(t, topic, partition, all, jsonFile)
	if err != nil {
		return err
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return electLeaders(bootstrap, how, set)
}

// electionPartitions reads the one way partitions were named: nil for
// all of them.
func electionPartitions(t *kafkaTool, topic string, partition int64, all bool, jsonFile string) (kadm.TopicsSet, error) {
	switch {
	case countTrue(topic != "", all, jsonFile != "") != 1:
		return nil, t.usage("One and only one of the following options is required: --all-topic-partitions, --topic, --path-to-json-file")
	case all:
		return nil, nil
	case topic != "":
		if partition < 0 {
			return nil, t.usage("Missing required option(s) [partition]")
		}
		set := kadm.TopicsSet{}
		set.Add(topic, int32(partition))
		return set, nil
	}
	return readElectionFile(jsonFile)
}

// maxElectionFile bounds a --path-to-json-file.
const maxElectionFile = 16 << 20

// readElectionFile reads {"partitions":[{"topic":"t","partition":0}]}.
func readElectionFile(path string) (kadm.TopicsSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxElectionFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxElectionFile {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxElectionFile)
	}
	var file struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition *int32 `json:"partition"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(file.Partitions) == 0 {
		return nil, fmt.Errorf("%s names no partition", path)
	}
	set := kadm.TopicsSet{}
	seen := map[string]bool{}
	for _, p := range file.Partitions {
		if p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
			return nil, fmt.Errorf("%s: each partition needs a topic and a partition >= 0", path)
		}
		key := fmt.Sprintf("%s-%d", p.Topic, *p.Partition)
		if seen[key] {
			return nil, fmt.Errorf("Replica election data contains duplicate partitions: %s", key)
		}
		seen[key] = true
		set.Add(p.Topic, *p.Partition)
	}
	return set, nil
}

// kafkaPreferredReplicaElection is the 0.8-era
// kafka-preferred-replica-election.sh (removed in Kafka 3.0, still in
// old runbooks): a preferred election for every partition, or those of
// --path-to-json-file.
func kafkaPreferredReplicaElection(args []string) error {
	t := newKafkaTool("kafka-preferred-replica-election.sh", "This tool helps to cause leadership for each partition to be transferred back to the 'preferred replica', it can be used to balance leadership among the servers.", "admin.config", true)
	var jsonFile string
	t.str(&jsonFile, "path-to-json-file", "list of partitions for which preferred replica leader election needs to be triggered", "The JSON file with the list of partitions for which preferred replica leader election should be done, in the following format - {\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}]}. Defaults to all existing partitions.")
	if err := t.parse(args); err != nil {
		return err
	}
	var set kadm.TopicsSet
	if jsonFile != "" {
		var err error
		if set, err = readElectionFile(jsonFile); err != nil {
			return err
		}
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	if t.zookeeper != "" {
		fmt.Fprintln(os.Stderr, "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
	}
	return electLeaders(bootstrap, kadm.ElectPreferredReplica, set)
}
