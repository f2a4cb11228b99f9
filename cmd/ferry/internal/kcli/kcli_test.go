package kcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newCluster starts an in-process kfake broker; these tests cover the
// client logic, and test/e2e/cli_test.go runs the binary against ferry.
func newCluster(t *testing.T) (string, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	bootstrap := strings.Join(c.ListenAddrs(), ",")
	adm, err := DialAdmin(context.Background(), bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return bootstrap, adm
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTopicsLifecycle(t *testing.T) {
	_, adm := newCluster(t)
	ctx := testContext(t)
	spec := TopicSpec{Name: "orders", Partitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "86400000"}}
	if err := CreateTopic(ctx, adm, spec); err != nil {
		t.Fatal(err)
	}
	if err := CreateTopic(ctx, adm, spec); err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if names, err := ListTopics(ctx, adm); err != nil || fmt.Sprint(names) != "[orders]" {
		t.Fatalf("list = %v, %v", names, err)
	}
	alter := TopicAlter{Name: "orders", Partitions: 3, Set: map[string]string{"segment.bytes": "1048576"}, Delete: []string{"retention.ms"}}
	if err := AlterTopic(ctx, adm, alter); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	infos, err := DescribeTopics(ctx, adm, "orders")
	if err != nil {
		t.Fatal(err)
	}
	WriteTopicInfos(&out, infos, false)
	for _, want := range []string{"PartitionCount: 3", "Configs: segment.bytes=1048576\n", "Partition: 2\tLeader: 0\tReplicas: 0\tIsr: 0\tStartOffset: 0\tEndOffset: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
	if err := DeleteTopic(ctx, adm, "orders"); err != nil {
		t.Fatal(err)
	}
	// Deletion completes asynchronously, as in Kafka.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		infos, err := DescribeTopics(ctx, adm, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if infos[0].Err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic still described after delete: %v", infos)
		}
	}
}

func TestProduceConsumeKeys(t *testing.T) {
	bootstrap, adm := newCluster(t)
	ctx := testContext(t)
	if err := CreateTopic(ctx, adm, TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	in := "k1:v1\nk2:v:2\n:empty-key\n"
	cfg := ProduceConfig{Topic: "t", KeySeparator: ":", Acks: "all", Compression: "zstd", Partition: -1}
	if n, err := Produce(ctx, bootstrap, cfg, strings.NewReader(in)); err != nil || n != 3 {
		t.Fatalf("produce = %d, %v", n, err)
	}
	var out bytes.Buffer
	ccfg := ConsumeConfig{Topic: "t", Partition: -1, FromBeginning: true, MaxMessages: 3, PrintKey: true, KeySeparator: "="}
	if n, err := Consume(ctx, bootstrap, ccfg, &out); err != nil || n != 3 {
		t.Fatalf("consume = %d, %v", n, err)
	}
	if want := "k1=v1\nk2=v:2\n=empty-key\n"; out.String() != want {
		t.Fatalf("consumed %q, want %q", out.String(), want)
	}
}

func TestProduceMissingSeparator(t *testing.T) {
	bootstrap, _ := newCluster(t)
	cfg := ProduceConfig{Topic: "t", KeySeparator: ":", Acks: "1", Partition: -1}
	_, err := Produce(testContext(t), bootstrap, cfg, strings.NewReader("a:b\nno separator\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want one naming line 2", err)
	}
}

func TestConsumeIdleTimeoutAndPartitionOffset(t *testing.T) {
	bootstrap, adm := newCluster(t)
	ctx := testContext(t)
	if err := CreateTopic(ctx, adm, TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	pcfg := ProduceConfig{Topic: "t", Acks: "1", Partition: 1}
	if _, err := Produce(ctx, bootstrap, pcfg, strings.NewReader("a\nb\nc\n")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ccfg := ConsumeConfig{Topic: "t", Partition: 1, Offset: "1", IdleTimeout: 500 * time.Millisecond}
	if n, err := Consume(ctx, bootstrap, ccfg, &out); err != nil || n != 2 || out.String() != "b\nc\n" {
		t.Fatalf("consume = %d, %v, %q; want b and c", n, err, out.String())
	}
	if _, err := Consume(ctx, bootstrap, ConsumeConfig{Topic: "nope", Partition: -1}, &out); err == nil {
		t.Fatal("consuming a missing topic succeeded")
	}
}

func TestGroupConsumeDescribeReset(t *testing.T) {
	bootstrap, adm := newCluster(t)
	ctx := testContext(t)
	if err := CreateTopic(ctx, adm, TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Produce(ctx, bootstrap, ProduceConfig{Topic: "t", Acks: "all", Partition: -1}, strings.NewReader("1\n2\n3\n4\n5\n")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ccfg := ConsumeConfig{Topic: "t", Group: "g", Partition: -1, FromBeginning: true, MaxMessages: 3}
	if n, err := Consume(ctx, bootstrap, ccfg, &out); err != nil || n != 3 {
		t.Fatalf("group consume = %d, %v", n, err)
	}
	checkGroupLine(t, ctx, adm, "g t 0 3 5 2 - - -")

	plan, err := PlanReset(ctx, adm, "g", ResetScope{Topics: map[string][]int32{"t": nil}}, ResetTarget{Offset: 99})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	WritePlan(&out, "g", plan)
	if !strings.Contains(squeeze(out.String()), "g t 0 5\n") {
		t.Fatalf("plan (clamped to end 5):\n%s", out.String())
	}
	checkGroupLine(t, ctx, adm, "g t 0 3 5 2") // planning commits nothing
	if err := ExecuteReset(ctx, adm, "g", plan); err != nil {
		t.Fatal(err)
	}
	checkGroupLine(t, ctx, adm, "g t 0 5 5 0")

	out.Reset()
	if n, err := Consume(ctx, bootstrap, ConsumeConfig{Topic: "t", Group: "g", Partition: -1, IdleTimeout: 300 * time.Millisecond}, &out); err != nil || n != 0 {
		t.Fatalf("consume after reset to end = %d, %v", n, err)
	}
	if groups, err := ListGroups(ctx, adm); err != nil || len(groups) != 1 || groups[0].Group != "g" {
		t.Fatalf("list groups = %v, %v", groups, err)
	}
	if err := DeleteGroup(ctx, adm, "g"); err != nil {
		t.Fatal(err)
	}
}

// TestPlanResetScenarios covers the reset targets beyond a fixed offset:
// shifting and keeping the committed offset, a time, and partition
// scopes, each clamped to the partition's range.
func TestPlanResetScenarios(t *testing.T) {
	bootstrap, adm := newCluster(t)
	ctx := testContext(t)
	if err := CreateTopic(ctx, adm, TopicSpec{Name: "r", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		if _, err := Produce(ctx, bootstrap, ProduceConfig{Topic: "r", Acks: "all", Partition: int32(p)}, strings.NewReader("1\n2\n3\n4\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := adm.CommitAllOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "r", Partition: 0, Offset: 1}, kgo.Record{Topic: "r", Partition: 1, Offset: 2})); err != nil {
		t.Fatal(err)
	}
	all := ResetScope{Topics: map[string][]int32{"r": nil}}
	shift := func(n int64) *int64 { return &n }
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, c := range []struct {
		name  string
		scope ResetScope
		to    ResetTarget
		want  map[int32]int64
	}{
		{"current", all, ResetTarget{Offset: -1, Current: true}, map[int32]int64{0: 2, 1: 3}},
		{"shift +10 clamps to the end", all, ResetTarget{Offset: -1, Shift: shift(10)}, map[int32]int64{0: 4, 1: 4}},
		{"shift -1", all, ResetTarget{Offset: -1, Shift: shift(-1)}, map[int32]int64{0: 1, 1: 2}},
		{"shift -9 clamps to the start", all, ResetTarget{Offset: -1, Shift: shift(-9)}, map[int32]int64{0: 0, 1: 0}},
		{"a past time: the start", all, ResetTarget{Offset: -1, At: &past}, map[int32]int64{0: 0, 1: 0}},
		{"a future time: the end", all, ResetTarget{Offset: -1, At: &future}, map[int32]int64{0: 4, 1: 4}},
		{"one partition", ResetScope{Topics: map[string][]int32{"r": {1}}}, ResetTarget{Latest: true}, map[int32]int64{1: 4}},
		{"all topics of the group", ResetScope{AllTopics: true}, ResetTarget{Earliest: true}, map[int32]int64{0: 0, 1: 0}},
	} {
		plan, err := PlanReset(ctx, adm, "g", c.scope, c.to)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := map[int32]int64{}
		for _, o := range plan.Sorted() {
			got[o.Partition] = o.At
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: plan %v, want %v", c.name, got, c.want)
		}
	}
	// Kafka answers an unknown group with no offsets, kfake with
	// GROUP_ID_NOT_FOUND: either way, no plan.
	if _, err := PlanReset(ctx, adm, "nobody", all, ResetTarget{Offset: -1, Current: true}); err == nil {
		t.Errorf("--to-current of a group with nothing committed: %v", err)
	}
}

func checkGroupLine(t *testing.T, ctx context.Context, adm *kadm.Client, want string) {
	t.Helper()
	g, err := DescribeGroup(ctx, adm, "g")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WriteGroup(&out, g)
	if !strings.Contains(squeeze(out.String()), want) {
		t.Fatalf("describe lacks %q:\n%s", want, out.String())
	}
}

// squeeze collapses the runs of spaces and tabs that align tables.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestDialUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Dial(context.Background(), addr)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want ErrUnreachable naming %s", err, addr)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// The console producer's line reader: headers, keys, lenient lines and
// the null marker, as kafka-console-producer.sh's properties ask.
func TestLineRecord(t *testing.T) {
	null := "<null>"
	full := LineFormat{ParseHeaders: true, HeadersDelimiter: "|", HeadersSeparator: ",", HeaderKeySeparator: "=", NullMarker: &null}
	for _, c := range []struct {
		line, sep string
		f         LineFormat
		want      string // key/value/headers as %q of each, or the error's start
	}{
		{"v", "", LineFormat{}, `"" "v" []`},
		{"k\tv\tw", "\t", LineFormat{}, `"k" "v\tw" []`},
		{"a=1,b=<null>|k\t<null>", "\t", full, `"k" "" [a="1" b=""]`},
		{"<null>\tv", "\t", full, "line 1: no headers delimiter"},
		{"a|k\tv", "\t", full, "line 1: no header key separator"},
		{"novalue", "\t", LineFormat{}, "line 1: no key separator"},
		{"novalue", "\t", LineFormat{IgnoreError: true}, `"" "novalue" []`},
		{"a|k:v", ":", LineFormat{ParseHeaders: true, HeadersDelimiter: "|", HeadersSeparator: ",", HeaderKeySeparator: "=", IgnoreError: true}, `"k" "v" [a=""]`},
	} {
		r, err := lineRecord(c.line, 1, ProduceConfig{KeySeparator: c.sep, Lines: c.f, Partition: -1})
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, fmt.Sprintf("%s=%q", h.Key, h.Value))
			}
			got = fmt.Sprintf("%q %q %v", r.Key, r.Value, hs)
			if c.f.NullMarker != nil && strings.Contains(c.line, "\t<null>") && r.Value != nil {
				t.Errorf("%q: the null marker gave %q, not null", c.line, r.Value)
			}
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: %s, want %s", c.line, got, c.want)
		}
	}
}
