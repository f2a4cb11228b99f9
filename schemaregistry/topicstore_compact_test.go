package schemaregistry_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// TestTopicStoreCompactedTopicRebuildsSameState: the store creates its
// topic compacted; after many registrations, soft deletes, purges and
// setting changes, the broker's cleaner leaves about one record per live
// version and setting (decided records, topicstore_decided.go), and a fresh store reading what is left rebuilds
// the same subjects, versions, ids, deletes and settings, and goes on
// handing out ids never used before.
func TestTopicStoreCompactedTopicRebuildsSameState(t *testing.T) {
	zk := zkserver.Start(t)
	node := harness.Start(t, "--broker-id", "1", "--zookeeper", zk.Addr()+"/compacted-registry",
		"--zookeeper-session-timeout-ms", "6000", "--log-cleaner-backoff-ms", "100",
		"--transaction-state-log-replication-factor", "1", "--transaction-state-log-min-isr", "1")
	const topic = "_schemas-compacted"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openTopicStore(t, node.KafkaAddr, topic)
	mustAdd(t, s, "first", "fp-first", 0) // creates the topic

	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := configs.On(topic, nil); err != nil || !hasConfig(c.Configs, "cleanup.policy", "compact") {
		t.Fatalf("the store's topic is not compacted: %+v %v", c, err)
	}
	// Small segments and any dirt cleanable, so the cleaner runs soon.
	small := "1024"
	ratio := "0.01"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: &small},
		{Name: "min.cleanable.dirty.ratio", Value: &ratio}}, topic); err != nil {
		t.Fatal(err)
	}

	written := 1
	for subj := 0; subj < 6; subj++ {
		subject := fmt.Sprintf("subject-%d", subj)
		for v := 0; v < 4; v++ {
			mustAdd(t, s, subject, fmt.Sprintf("fp-%d-%d", subj, v), v)
			written++
		}
		for round := 0; round < 15; round++ { // a client setting the level over and over
			level := []string{"BACKWARD", "FULL", "NONE"}[(round+subj)%3]
			if err := s.SetSetting(ctx, sr.SettingCompatibility, subject, level); err != nil {
				t.Fatal(err)
			}
			written++
		}
	}
	steps := []func() error{
		func() error { return s.SoftDelete(ctx, "subject-1", []int{1, 2}) },
		func() error { return s.Purge(ctx, "subject-1", []int{1}) },
		func() error { return s.SoftDelete(ctx, "subject-2", []int{1, 2, 3, 4}) },
		func() error { return s.Purge(ctx, "subject-2", []int{1, 2, 3, 4}) },
		func() error { return s.SetSetting(ctx, sr.SettingMode, "", "READONLY") },
		func() error { return s.SetSetting(ctx, sr.SettingMode, "", "READWRITE") },
		func() error { return s.DeleteSetting(ctx, sr.SettingCompatibility, "subject-3") },
		func() error { return s.SetSetting(ctx, sr.SettingCompatibility, "", "FORWARD") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		written++
	}
	mustAdd(t, s, "subject-2", "fp-2-0", 0) // a purged subject registered again
	written++
	// A setting as written before settings had keys of their own: read
	// the same way, and kept by compaction (its key is unique).
	old := &kgo.Record{Topic: topic, Key: []byte(`{"writer":"0123456789abcdef","seq":1}`),
		Value: []byte(`{"op":"set","kind":"mode","subject":"subject-5","value":"READONLY"}`)}
	if err := cl.ProduceSync(ctx, old).FirstErr(); err != nil {
		t.Fatal(err)
	}
	written++
	if err := s.(*sr.TopicStore).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := registryState(t, s)
	if want.Settings["mode/subject-5"] != "READONLY" {
		t.Fatalf("a setting record of the old format not applied: %+v", want.Settings)
	}

	// What compaction may keep: a record per live version, per setting
	// key (8), the id mark, the purges' tombstones (5, kept for
	// delete.retention.ms) and the active segment the cleaner never
	// touches (segment.bytes 1024: a few records).
	rows := 0
	for _, vs := range want.Versions {
		rows += len(vs)
	}
	limit := rows + 8 + 1 + 5 + 12
	var left int
	harness.WaitFor(t, "the cleaner to compact the schemas topic", 60*time.Second, func() bool {
		left = countRecords(t, node.KafkaAddr, topic)
		return left <= limit
	})
	t.Logf("%d records written, %d left after compaction (%d live versions, limit %d)", written, left, rows, limit)

	fresh := openTopicStore(t, node.KafkaAddr, topic)
	if got := registryState(t, fresh); !reflect.DeepEqual(got, want) {
		t.Fatalf("a fresh store on the compacted topic:\n got %+v\nwant %+v", got, want)
	}
	before := maxID(want)
	v := mustAdd(t, fresh, "subject-new", "fp-new", 0)
	if v.ID <= before {
		t.Fatalf("id %d handed out after compaction, highest before %d", v.ID, before)
	}
}

func mustAdd(t *testing.T, s sr.Store, subject, fp string, expect int) sr.Version {
	t.Helper()
	v, err := s.AddVersion(context.Background(), sr.NewVersion{Subject: subject,
		Schema: sr.StoredSchema{Type: "AVRO", Text: `"` + fp + `"`, Fingerprint: fp}, ExpectLatest: expect})
	if err != nil {
		t.Fatalf("add %s %s: %v", subject, fp, err)
	}
	return v
}

func hasConfig(cs []kadm.Config, name, value string) bool {
	for _, c := range cs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// state is what a store serves: every subject's versions (with ids and
// deletes), every schema by id, and the settings the test touched.
type state struct {
	Versions map[string][]sr.Version
	Schemas  map[int]sr.StoredSchema
	Settings map[string]string
}

func registryState(t *testing.T, s sr.Store) state {
	t.Helper()
	ctx := context.Background()
	st := state{Versions: map[string][]sr.Version{}, Schemas: map[int]sr.StoredSchema{}, Settings: map[string]string{}}
	subjects, err := s.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range subjects {
		vs, err := s.Versions(ctx, sub.Name)
		if err != nil {
			t.Fatal(err)
		}
		st.Versions[sub.Name] = vs
		for _, v := range vs {
			sc, err := s.Schema(ctx, v.ID)
			if err != nil {
				t.Fatalf("schema %d of %s/%d: %v", v.ID, sub.Name, v.Version, err)
			}
			st.Schemas[v.ID] = sc
		}
	}
	for _, subject := range []string{"", "subject-0", "subject-1", "subject-2", "subject-3", "subject-4", "subject-5"} {
		for _, kind := range []sr.SettingKind{sr.SettingCompatibility, sr.SettingMode} {
			if v, ok, err := s.Setting(ctx, kind, subject); err != nil {
				t.Fatal(err)
			} else if ok {
				st.Settings[string(kind)+"/"+subject] = v
			}
		}
	}
	return st
}

func maxID(st state) int {
	n := 0
	for id := range st.Schemas {
		n = max(n, id)
	}
	return n
}

// countRecords reads the topic's single partition from its start to its
// end and counts the records.
func countRecords(t *testing.T, addr, topic string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	n, last := 0, int64(-1)
	for last < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s to %d: got to %d", topic, end.Offset, last)
		}
		fs.EachRecord(func(r *kgo.Record) { n++; last = r.Offset })
	}
	return n
}
