package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// librdkafkaTxnScript is a librdkafka transactional producer (Debian's
// python3-confluent-kafka): ten transactions of ten records each, every
// third one aborted, then a consume-transform-produce transaction that
// reads the input at read_committed and commits its group offsets with
// send_offsets_to_transaction. It prints one line per transaction.
const librdkafkaTxnScript = `
import sys, confluent_kafka as ck
seeds, topic, out, group = sys.argv[1:5]
p = ck.Producer({"bootstrap.servers": seeds, "transactional.id": "rdkafka-" + topic,
                 "transaction.timeout.ms": 30000})
p.init_transactions(60)
for i in range(10):
    p.begin_transaction()
    for j in range(10):
        p.produce(topic, value=("t%d-%d" % (i, j)).encode())
    if i % 3 == 2:
        p.flush(60)  # on the broker first: librdkafka's abort purges unsent records
        p.abort_transaction(60)
        print("aborted", i, flush=True)
    else:
        p.commit_transaction(60)
        print("committed", i, flush=True)

c = ck.Consumer({"bootstrap.servers": seeds, "group.id": group, "auto.offset.reset": "earliest",
                 "enable.auto.commit": False, "isolation.level": "read_committed"})
c.subscribe([topic])
got = []
while len(got) < 70:
    m = c.poll(30)
    if m is None:
        sys.exit("consumer: only %d of 70 committed records" % len(got))
    if m.error():
        sys.exit("consumer: %s" % m.error())
    got.append(m)
p.begin_transaction()
for m in got:
    p.produce(out, value=m.value().upper())
p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
p.commit_transaction(60)
print("transformed", len(got), flush=True)
c.close()
`

// TestLibrdkafkaTransactions: librdkafka's transactional producer
// (confluent-kafka-python) against a three-broker cluster commits and
// aborts transactions and runs one consume-transform-produce transaction;
// kcat (librdkafka too, read_committed by default) reads back exactly the
// committed records, kcat at read_uncommitted reads the aborted ones too,
// and the group's committed offset is the input's end.
func TestLibrdkafkaTransactions(t *testing.T) {
	python := "/usr/bin/python3" // Debian's: the package installs the module for it alone
	out, err := exec.Command(python, "-c", "import confluent_kafka").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s -c 'import confluent_kafka': %v %s", python, err, bytes.TrimSpace(out))
	}
	harness.RequireService(t, "python3-confluent-kafka", err)
	_, err = exec.LookPath("kcat")
	harness.RequireService(t, "kcat", err)

	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3")
	const topic, outTopic, group = "rdkafka-txn", "rdkafka-txn-out", "rdkafka-ctp"
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, tp := range []string{topic, outTopic} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, tp); err != nil {
			t.Fatal(err)
		}
		waitISR(t, adm, tp, 3)
	}

	script := filepath.Join(t.TempDir(), "txn.py")
	if err := os.WriteFile(script, []byte(librdkafkaTxnScript), 0o644); err != nil {
		t.Fatal(err)
	}
	bootstrap := strings.Join(seeds(nodes), ",")
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Minute)
	run, err := exec.CommandContext(rctx, python, script, bootstrap, topic, outTopic, group).CombinedOutput()
	rcancel()
	if err != nil {
		t.Fatalf("librdkafka transactional producer: %v\n%s", err, run)
	}
	if !strings.Contains(string(run), "transformed 70") || strings.Count(string(run), "aborted") != 3 {
		t.Fatalf("librdkafka run:\n%s", run)
	}

	var wantCommitted, wantAll, wantOut []string
	for i := range 10 {
		for j := range 10 {
			v := fmt.Sprintf("t%d-%d", i, j)
			wantAll = append(wantAll, v)
			if i%3 != 2 {
				wantCommitted = append(wantCommitted, v)
				wantOut = append(wantOut, strings.ToUpper(v))
			}
		}
	}
	sort.Strings(wantAll)
	sort.Strings(wantCommitted)
	sort.Strings(wantOut)

	kcat := func(topic string, extra ...string) []string {
		t.Helper()
		args := append([]string{"-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n"}, extra...)
		kctx, kcancel := context.WithTimeout(ctx, time.Minute)
		defer kcancel()
		b, err := exec.CommandContext(kctx, "kcat", args...).Output()
		if err != nil {
			t.Fatalf("kcat %v: %v", args, err)
		}
		vals := strings.Fields(string(b))
		sort.Strings(vals)
		return vals
	}
	if got := kcat(topic); !slices.Equal(got, wantCommitted) {
		t.Fatalf("kcat (read_committed) read %d records, want the %d committed: %v", len(got), len(wantCommitted), got)
	}
	if got := kcat(topic, "-X", "isolation.level=read_uncommitted"); !slices.Equal(got, wantAll) {
		t.Fatalf("kcat at read_uncommitted read %d records, want all %d: %v", len(got), len(wantAll), got)
	}
	if got := kcat(outTopic); !slices.Equal(got, wantOut) {
		t.Fatalf("kcat read %d transformed records, want %d: %v", len(got), len(wantOut), got)
	}

	// The transaction committed the group's offset: past the last record
	// (t9-9 at 108; librdkafka's position is the last record's offset + 1,
	// a client that skips the final marker commits 110).
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil || (o.At != 109 && o.At != 110) {
		t.Fatalf("group %s committed %+v, want offset 109 or 110", group, o)
	}
}

// librdkafkaFenceScript: producer p1 opens a transaction and writes one
// record; p2 initializes the same transactional id, which fences p1 (its
// transaction is aborted); p1 then produces again and tries to commit.
// It prints the late record's fate and the commit's error with
// librdkafka's classification of it.
const librdkafkaFenceScript = `
import sys, confluent_kafka as ck
seeds, topic = sys.argv[1:3]
conf = {"bootstrap.servers": seeds, "transactional.id": "fence-" + topic}
p1 = ck.Producer(conf)
p1.init_transactions(60)
p1.begin_transaction()
p1.produce(topic, value=b"before")
p1.flush(60)
p2 = ck.Producer(conf)
p2.init_transactions(60)
def classify(e):
    err = e.args[0]
    return "%s fatal=%s abortable=%s" % (err.name(), err.fatal(), err.txn_requires_abort())
late = []
p1.produce(topic, value=b"late", on_delivery=lambda err, msg: late.append(err))
try:
    p1.flush(60)  # raises once the producer has a fatal error
    print("late flush: ok", flush=True)
except ck.KafkaException as e:
    print("late flush:", classify(e), flush=True)
print("late delivery:", ("none" if not late else late[0].name() if late[0] else "ok"), flush=True)
try:
    p1.commit_transaction(60)
    print("commit: ok", flush=True)
except ck.KafkaException as e:
    print("commit:", classify(e), flush=True)
p2.begin_transaction()
p2.produce(topic, value=b"p2")
p2.commit_transaction(60)
print("p2 committed", flush=True)
`

// TestLibrdkafkaFencedProducerIsFatal: a librdkafka transactional
// producer fenced by a newer instance, whose next produce goes to the
// partition it wrote before, fails fatally (librdkafka's _FENCED), not
// with an abortable error it could recover from by starting another
// transaction; only the new instance's record is committed. Found by
// librdkafka's own test 0103 (do_test_fenced_txn): ferry answered the
// produce PRODUCER_FENCED, which librdkafka treats as abortable, where
// Kafka answers INVALID_PRODUCER_EPOCH.
func TestLibrdkafkaFencedProducerIsFatal(t *testing.T) {
	python := "/usr/bin/python3"
	out, err := exec.Command(python, "-c", "import confluent_kafka").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s -c 'import confluent_kafka': %v %s", python, err, bytes.TrimSpace(out))
	}
	harness.RequireService(t, "python3-confluent-kafka", err)
	_, err = exec.LookPath("kcat")
	harness.RequireService(t, "kcat", err)

	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3")
	const topic = "rdkafka-fence"
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createFullISRTopic(ctx, t, adm, topic)

	script := filepath.Join(t.TempDir(), "fence.py")
	if err := os.WriteFile(script, []byte(librdkafkaFenceScript), 0o644); err != nil {
		t.Fatal(err)
	}
	bootstrap := strings.Join(seeds(nodes), ",")
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	run, err := exec.CommandContext(rctx, python, script, bootstrap, topic).CombinedOutput()
	rcancel()
	if err != nil {
		t.Fatalf("librdkafka fencing script: %v\n%s", err, run)
	}
	if !strings.Contains(string(run), "commit: _FENCED fatal=True abortable=False") ||
		!strings.Contains(string(run), "p2 committed") {
		t.Fatalf("the fenced producer's commit must fail fatally with _FENCED:\n%s", run)
	}
	if strings.Contains(string(run), "late delivery: ok") {
		t.Fatalf("the fenced producer's late record was delivered:\n%s", run)
	}

	kctx, kcancel := context.WithTimeout(ctx, time.Minute)
	defer kcancel()
	b, err := exec.CommandContext(kctx, "kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	if got := strings.Fields(string(b)); !slices.Equal(got, []string{"p2"}) {
		t.Fatalf("read_committed reader read %v, want only the new instance's [p2]", got)
	}
}
