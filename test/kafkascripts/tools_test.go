package kafkascripts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// groupRows are the --describe rows of a group: topic, partition →
// [current, log end, lag] as printed.
func groupRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || strings.Join(strings.Fields(lines[0]), " ") != "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID" {
		t.Fatalf("describe header:\n%s", out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 9 {
			t.Fatalf("describe row %q has %d columns:\n%s", l, len(f), out)
		}
		rows[f[1]+"-"+f[2]] = f[3:6]
	}
	return rows
}

func scriptGroups(t *testing.T, broker string) {
	ok(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--create", "--topic", "grouped", "--partitions", "2", "--replication-factor", "2")
	ok(t, "k1:v1\nk2:v2\nk3:v3\nk4:v4\nk5:v5\nk6:v6\n", "kafka-console-producer.sh", "--bootstrap-server", broker, "--topic", "grouped",
		"--property", "parse.key=true", "--property", "key.separator=:")
	res := run(t, "", "kafka-console-consumer.sh", "--bootstrap-server", broker, "--topic", "grouped", "--group", "cg", "--from-beginning",
		"--max-messages", "6", "--property", "print.key=true", "--property", "key.separator=:", "--property", "print.partition=true")
	re := regexp.MustCompile(`^Partition:[01]:k([1-6]):v([1-6])$`)
	lines := sortedLines(res.stdout)
	if res.code != 0 || len(lines) != 6 {
		t.Fatalf("group consume: exit %d, %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m == nil || m[1] != m[2] {
			t.Fatalf("formatted record %q (all: %q)", l, res.stdout)
		}
	}
	if out := ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--list"); !strings.Contains("\n"+out, "\ncg\n") {
		t.Fatalf("--list:\n%s", out)
	}
	res = run(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "cg")
	if res.code != 0 || !strings.Contains(res.stderr, "Consumer group 'cg' has no active members.") {
		t.Fatalf("--describe: exit %d, stderr %q", res.code, res.stderr)
	}
	rows := groupRows(t, res.stdout)
	total := 0
	for p, r := range rows {
		cur, _ := strconv.Atoi(r[0])
		if r[0] != r[1] || r[2] != "0" {
			t.Fatalf("partition %s: %v, want committed at the end, lag 0", p, r)
		}
		total += cur
	}
	if len(rows) != 2 || total != 6 {
		t.Fatalf("rows %v: want two partitions, 6 records committed", rows)
	}

	out := ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--group", "cg", "--reset-offsets", "--to-earliest", "--topic", "grouped", "--execute")
	if !strings.Contains(squeeze(out), "GROUP TOPIC PARTITION NEW-OFFSET\ncg grouped 0 0\ncg grouped 1 0") {
		t.Fatalf("--to-earliest --execute:\n%s", out)
	}
	out = ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--group", "cg", "--reset-offsets", "--shift-by", "2", "--topic", "grouped:0", "--execute")
	if !strings.Contains(squeeze(out), "cg grouped 0 2") || strings.Contains(out, "grouped 1") {
		t.Fatalf("--shift-by 2 on partition 0:\n%s", out)
	}
	rows = groupRows(t, ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "cg"))
	if rows["grouped-0"][0] != "2" || rows["grouped-1"][0] != "0" {
		t.Fatalf("after the resets: %v", rows)
	}
	for _, scenario := range [][]string{{"--to-datetime", "2000-01-01T00:00:00.000"}, {"--by-duration", "P1DT1H"}} {
		out = ok(t, "", "kafka-consumer-groups.sh", append([]string{"--bootstrap-server", broker, "--group", "cg", "--reset-offsets", "--all-topics", "--dry-run"}, scenario...)...)
		if !strings.Contains(squeeze(out), "cg grouped 0 0\ncg grouped 1 0") {
			t.Fatalf("%v: everything is younger, so the start:\n%s", scenario, out)
		}
	}
	rows = groupRows(t, ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "cg"))
	if rows["grouped-0"][0] != "2" {
		t.Fatalf("a dry run committed: %v", rows)
	}
	scriptActiveGroup(t, broker)
	if out := ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--delete", "--group", "cg"); out != "Deletion of requested consumer groups ('cg') was successful.\n" {
		t.Fatalf("--delete printed %q", out)
	}
	res = run(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "cg")
	if res.code != 1 || !strings.Contains(res.stderr, "Error: Consumer group 'cg' does not exist.") {
		t.Fatalf("describe after delete: exit %d, stderr %q", res.code, res.stderr)
	}
}

// scriptActiveGroup describes a group while a console consumer is its
// member: the member's columns, --members and --state, and a reset
// refused while it is active.
func scriptActiveGroup(t *testing.T, broker string) {
	ctx, cancel := context.WithCancel(context.Background())
	consumer := exec.CommandContext(ctx, filepath.Join(scriptsDir(t), "kafka-console-consumer.sh"), "--bootstrap-server", broker,
		"--topic", "grouped", "--group", "live", "--consumer-property", "client.id=live-client")
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); consumer.Wait() }()
	var out string
	harness.WaitFor(t, "the console consumer owns both partitions", 60*time.Second, func() bool {
		res := run(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "live")
		out = res.stdout
		return res.code == 0 && strings.Count(out, " live-client\n") == 2
	})
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) != 9 || f[0] != "live" || !strings.HasPrefix(f[6], "live-client-") || f[7] != "/127.0.0.1" || f[8] != "live-client" {
			t.Fatalf("member row %q:\n%s", l, out)
		}
	}
	members := squeeze(ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "live", "--members"))
	if !regexp.MustCompile(`(?m)^GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS\nlive live-client-\S+ /127.0.0.1 live-client 2$`).MatchString(members) {
		t.Fatalf("--members:\n%s", members)
	}
	state := squeeze(ok(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--describe", "--group", "live", "--state"))
	if !regexp.MustCompile(`(?m)^live 127.0.0.1:\d+ \([123]\) (range|cooperative-sticky|sticky|roundrobin) Stable 1$`).MatchString(state) {
		t.Fatalf("--state:\n%s", state)
	}
	res := run(t, "", "kafka-consumer-groups.sh", "--bootstrap-server", broker, "--group", "live", "--reset-offsets", "--to-earliest", "--all-topics", "--execute")
	if res.code != 1 || !strings.Contains(res.stderr, "Assignments can only be reset if the group 'live' is inactive") {
		t.Fatalf("reset of an active group: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// squeeze collapses the blanks that align columns.
func squeeze(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// scriptOffsets checks get-offsets, delete-records, log-dirs, dump-log
// and leader-election on idoall_testTopic, which holds one record.
func scriptOffsets(t *testing.T, nodes []*harness.Node, dir string) {
	broker := nodes[0].KafkaAddr
	out := ok(t, "", "kafka-get-offsets.sh", "--bootstrap-server", broker, "--topic", "idoall_testTopic")
	m := regexp.MustCompile(`^idoall_testTopic:0:(\d+)\nidoall_testTopic:1:(\d+)\n$`).FindStringSubmatch(out)
	if m == nil || m[1]+m[2] != "01" && m[1]+m[2] != "10" {
		t.Fatalf("get-offsets: %q", out)
	}
	full := "0"
	if m[2] == "1" {
		full = "1"
	}
	if out := ok(t, "", "kafka-get-offsets.sh", "--bootstrap-server", broker, "--topic-partitions", "idoall_testTopic:"+full, "--time", "-2"); out != "idoall_testTopic:"+full+":0\n" {
		t.Fatalf("earliest of one partition: %q", out)
	}
	file := filepath.Join(dir, "offsets.json")
	if err := os.WriteFile(file, []byte(`{"partitions":[{"topic":"idoall_testTopic","partition":`+full+`,"offset":1}],"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = ok(t, "", "kafka-delete-records.sh", "--bootstrap-server", broker, "--offset-json-file", file)
	if want := "Executing records delete operation\nRecords delete operation completed:\npartition: idoall_testTopic-" + full + "\tlow_watermark: 1\n"; out != want {
		t.Fatalf("delete-records printed %q, want %q", out, want)
	}
	if out := ok(t, "", "kafka-get-offsets.sh", "--bootstrap-server", broker, "--topic-partitions", "idoall_testTopic:"+full, "--time", "earliest"); out != "idoall_testTopic:"+full+":1\n" {
		t.Fatalf("earliest after delete-records: %q", out)
	}

	out = ok(t, "", "kafka-log-dirs.sh", "--bootstrap-server", broker, "--describe", "--topic-list", "idoall_testTopic")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "Querying brokers for log directories information" || lines[1] != "Received log directory information from brokers 1,2,3" {
		t.Fatalf("log-dirs printed:\n%s", out)
	}
	var dirs struct {
		Version int `json:"version"`
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &dirs); err != nil || dirs.Version != 1 || len(dirs.Brokers) != 3 {
		t.Fatalf("log-dirs JSON %s: %v", lines[2], err)
	}
	for _, b := range dirs.Brokers {
		if len(b.LogDirs) != 1 || b.LogDirs[0].Error != nil || len(b.LogDirs[0].Partitions) != 2 {
			t.Fatalf("broker %d's log dirs: %+v", b.Broker, b.LogDirs)
		}
	}

	segment := filepath.Join(nodes[0].DataDir, "idoall_testTopic-"+full, "00000000000000000000.log")
	out = ok(t, "", "kafka-dump-log.sh", "--files", segment, "--print-data-log")
	for _, want := range []string{"Dumping " + segment + "\n", "Log starting offset: 0\n", "baseOffset: 0 lastOffset: 0 count: 1 ",
		" magic: 2 compresscodec: none crc: ", " isvalid: true\n", "| offset: 0 CreateTime: ", " keySize: -1 valueSize: 16 ", " payload: hello idoall.org\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("dump-log lacks %q:\n%s", want, out)
		}
	}

	out = ok(t, "", "kafka-leader-election.sh", "--bootstrap-server", broker, "--election-type", "PREFERRED", "--topic", "idoall_testTopic", "--partition", "0")
	if out != "Successfully completed leader election (PREFERRED) for partitions idoall_testTopic-0\n" && out != "Valid replica already elected for partitions idoall_testTopic-0\n" {
		t.Fatalf("leader-election printed %q", out)
	}
}

func scriptConfigs(t *testing.T, broker, zk string) {
	cfg := func(args ...string) string {
		return ok(t, "", "kafka-configs.sh", append([]string{"--bootstrap-server", broker}, args...)...)
	}
	if out := cfg("--alter", "--entity-type", "topics", "--entity-name", "idoall_testTopic", "--add-config", "retention.ms=3600000,cleanup.policy=[delete]"); out != "Completed updating config for topic idoall_testTopic.\n" {
		t.Fatalf("alter topic printed %q", out)
	}
	out := cfg("--describe", "--entity-type", "topics", "--entity-name", "idoall_testTopic")
	for _, want := range []string{"Dynamic configs for topic idoall_testTopic are:\n",
		"\n  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000",
		"\n  cleanup.policy=delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe topic lacks %q:\n%s", want, out)
		}
	}
	if out := cfg("--describe", "--entity-type", "topics"); !strings.Contains(out, "Dynamic configs for topic grouped are:\n") ||
		!strings.Contains(out, "Dynamic configs for topic idoall_testTopic are:\n  cleanup.policy=delete") {
		t.Fatalf("describe every topic:\n%s", out)
	}
	if out := ok(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--describe", "--topic", "idoall_testTopic"); !strings.Contains(out, "retention.ms=3600000") {
		t.Fatalf("topics --describe lacks the override:\n%s", out)
	}
	cfg("--alter", "--topic", "idoall_testTopic", "--delete-config", "retention.ms")
	if out := cfg("--describe", "--topic", "idoall_testTopic"); strings.Contains(out, "retention.ms=") {
		t.Fatalf("retention.ms still set:\n%s", out)
	}

	if out := cfg("--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "follower.replication.throttled.rate=1000000"); out != "Completed updating default config for brokers in the cluster.\n" {
		t.Fatalf("alter broker default printed %q", out)
	}
	if out := cfg("--describe", "--entity-type", "brokers", "--entity-default"); !strings.HasPrefix(out, "Default configs for brokers in the cluster are:\n  follower.replication.throttled.rate=1000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:") {
		t.Fatalf("describe broker default:\n%s", out)
	}
	if out := cfg("--alter", "--entity-type", "brokers", "--entity-name", "2", "--add-config", "leader.replication.throttled.rate=2000000"); out != "Completed updating config for broker 2.\n" {
		t.Fatalf("alter broker 2 printed %q", out)
	}
	if out := cfg("--describe", "--broker", "2"); !strings.Contains(out, "Dynamic configs for broker 2 are:\n  leader.replication.throttled.rate=2000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:") {
		t.Fatalf("describe broker 2:\n%s", out)
	}
	// KIP-226's log defaults and cleaner threads, cluster-wide and per broker.
	if out := cfg("--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.cleaner.threads=2,log.retention.ms=86400000"); out != "Completed updating default config for brokers in the cluster.\n" {
		t.Fatalf("alter dynamic log defaults printed %q", out)
	}
	cfg("--alter", "--broker", "3", "--add-config", "log.retention.hours=1,log.cleaner.threads=3")
	if out := cfg("--describe", "--broker-defaults"); !strings.Contains(out, "\n  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}\n") ||
		!strings.Contains(out, "\n  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}\n") {
		t.Fatalf("describe broker defaults:\n%s", out)
	}
	if out := cfg("--describe", "--broker", "3"); !strings.Contains(out, "\n  log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=3}\n") {
		t.Fatalf("describe broker 3:\n%s", out)
	}
	harness.WaitFor(t, "every broker gives topics the dynamic log.retention.ms", 30*time.Second, func() bool {
		for _, id := range []string{"1", "2", "3"} {
			out := cfg("--describe", "--broker", id, "--all")
			if !strings.Contains(out, "\n  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:") {
				return false
			}
		}
		return strings.Contains(cfg("--describe", "--topic", "grouped", "--all"), "\n  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.ms=604800000}\n")
	})
	cfg("--alter", "--broker", "3", "--delete-config", "log.retention.hours,log.cleaner.threads")
	cfg("--alter", "--broker-defaults", "--delete-config", "log.cleaner.threads,log.retention.ms")

	cfg("--alter", "--broker", "2", "--delete-config", "leader.replication.throttled.rate")
	cfg("--alter", "--broker-defaults", "--delete-config", "follower.replication.throttled.rate")
	if out := cfg("--describe", "--broker-defaults"); out != "Default configs for brokers in the cluster are:\n" {
		t.Fatalf("broker defaults left: %q", out)
	}
	res := run(t, "", "kafka-configs.sh", "--bootstrap-server", broker, "--alter", "--broker", "1", "--add-config", "no.such.config=1")
	if res.code != 1 || !strings.Contains(res.stderr, "no.such.config") {
		t.Fatalf("unknown broker config: exit %d, stderr %q", res.code, res.stderr)
	}

	if out := cfg("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"); out != "Completed updating config for user alice.\n" {
		t.Fatalf("alter user quota printed %q", out)
	}
	if out := cfg("--describe", "--entity-type", "users", "--entity-name", "alice"); !strings.Contains(out, "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n") {
		t.Fatalf("describe user quota:\n%s", out)
	}
	cfg("--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=bob-secret]")
	if out := cfg("--describe", "--user", "bob"); !strings.Contains(out, "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192\n") {
		t.Fatalf("describe SCRAM user:\n%s", out)
	}
	// Through ZooKeeper, as before brokers start; the brokers see it.
	if out := ok(t, "", "kafka-configs.sh", "--zookeeper", zk, "--alter", "--add-config", "SCRAM-SHA-512=[password=carol-secret]", "--entity-type", "users", "--entity-name", "carol"); out != "Completed updating config for user carol.\n" {
		t.Fatalf("SCRAM through --zookeeper printed %q", out)
	}
	if out := ok(t, "", "kafka-configs.sh", "--zookeeper", zk, "--describe", "--entity-type", "users", "--entity-name", "carol"); out != "Configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe through --zookeeper printed %q", out)
	}
	harness.WaitFor(t, "the brokers know carol", 30*time.Second, func() bool {
		return strings.Contains(cfg("--describe", "--user", "carol"), "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096")
	})
}

func scriptACLs(t *testing.T, broker string) {
	acls := func(args ...string) string {
		return ok(t, "", "kafka-acls.sh", append([]string{"--bootstrap-server", broker}, args...)...)
	}
	out := acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "idoall_testTopic")
	pattern := "`ResourcePattern(resourceType=TOPIC, name=idoall_testTopic, patternType=LITERAL)`:\n \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
	if !strings.Contains(out, "Adding ACLs for resource "+pattern) || !strings.Contains(out, "Current ACLs for resource "+pattern) {
		t.Fatalf("--add printed:\n%s", out)
	}
	out = acls("--add", "--allow-principal", "User:p", "--producer", "--topic", "produced")
	for _, op := range []string{"WRITE", "DESCRIBE", "CREATE"} {
		if !strings.Contains(out, "(principal=User:p, host=*, operation="+op+", permissionType=ALLOW)") {
			t.Fatalf("--producer lacks %s:\n%s", op, out)
		}
	}
	if out := acls("--list", "--topic", "idoall_testTopic"); !strings.Contains(out, "Current ACLs for resource "+pattern) {
		t.Fatalf("--list:\n%s", out)
	}
	acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "idoall_testTopic")
	if out := acls("--list", "--topic", "idoall_testTopic"); strings.Contains(out, "User:alice") {
		t.Fatalf("--list after --remove:\n%s", out)
	}
}

func scriptPerf(t *testing.T, broker string) {
	ok(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--create", "--topic", "perf", "--partitions", "2", "--replication-factor", "3")
	out := ok(t, "", "kafka-producer-perf-test.sh", "--topic", "perf", "--num-records", "3000", "--record-size", "100", "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+broker, "acks=all")
	summary := regexp.MustCompile(`(?m)^3000 records sent, [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.$`)
	if !summary.MatchString(out) {
		t.Fatalf("producer perf printed:\n%s", out)
	}
	out = ok(t, "", "kafka-consumer-perf-test.sh", "--bootstrap-server", broker, "--topic", "perf", "--messages", "3000", "--timeout", "30000")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec" {
		t.Fatalf("consumer perf printed:\n%s", out)
	}
	fields := strings.Split(lines[1], ", ")
	if len(fields) != 10 || fields[4] != "3000" || fields[2] != fmt.Sprintf("%.4f", 3000*100.0/1024/1024) {
		t.Fatalf("consumer perf row %q", lines[1])
	}
}
