package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/errorfs"

	"github.com/ferry-mq/ferry/test/harness"
)

// diskFaults fail a partition's log mid-append. sync: the produce asks for
// fsync (so an fsync fault hits it). kept: the failed produce's batch was
// written whole, so recovery keeps it (never acknowledged; as after a crash).
var diskFaults = []struct {
	name       string
	fault      errorfs.Fault
	sync, kept bool
}{
	{name: "ENOSPC on write", fault: errorfs.Fault{Op: errorfs.OpWrite, Err: errorfs.ENOSPC}},
	{name: "EIO torn write", fault: errorfs.Fault{Op: errorfs.OpWrite, Err: errorfs.EIO, TornBytes: 30}},
	{name: "EIO on fsync", fault: errorfs.Fault{Op: errorfs.OpSync, Err: errorfs.EIO}, sync: true, kept: true},
	{name: "ENOSPC on fsync", fault: errorfs.Fault{Op: errorfs.OpSync, Err: errorfs.ENOSPC}, sync: true, kept: true},
}

// TestFailedPartitionReportedAndRecovered: a write or fsync fault fails
// the produce and takes the partition offline (PartitionHealth, metrics)
// while the other partition keeps taking writes; while the fault lasts it
// stays offline; once cleared it comes back by itself within the probe
// interval, or through RecoverPartition, with every acknowledged record
// exactly once and the torn write invisible, also after a restart.
func TestFailedPartitionReportedAndRecovered(t *testing.T) {
	for _, tc := range diskFaults {
		for _, byProbe := range []bool{true, false} {
			name := tc.name + "/admin call"
			if byProbe {
				name = tc.name + "/probe"
			}
			t.Run(name, func(t *testing.T) {
				fs := errorfs.New(nil)
				m := metrics.New()
				b := newTestBroker(t, func(c *Config) {
					c.LogFS, c.Metrics = fs, m
					c.FailedLogProbeInterval = time.Hour
					if byProbe {
						c.FailedLogProbeInterval = 20 * time.Millisecond
					}
				})
				if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 2}); err != nil {
					t.Fatal(err)
				}
				want := []string{"a0", "a1", "a2"}
				produceValues(t, b, "t", 0, want...)

				fs.Inject(tc.fault)
				err := produceSync(b, "t", 0, tc.sync, "x")
				if !errors.Is(err, ErrStorage) {
					t.Fatalf("produce under %s: %v, want ErrStorage", tc.name, err)
				}
				if tc.kept {
					want = append(want, "x")
				}
				wantOffline(t, b, m, "t", 0, 2)
				if err := produceSync(b, "t", 0, tc.sync, "y"); !errors.Is(err, ErrStorage) {
					t.Fatalf("produce to the offline partition: %v", err)
				}
				if !byProbe {
					if _, err := b.RecoverPartition("t", 0); !errors.Is(err, ErrStorage) {
						t.Fatalf("RecoverPartition with the fault still there: %v", err)
					}
				}
				wantOffline(t, b, m, "t", 0, 2)
				fs.Clear()
				produceValues(t, b, "t", 1, "other") // never offline

				if byProbe {
					harness.WaitFor(t, "the probe to bring the partition back", 10*time.Second, func() bool { return len(b.PartitionHealth().Offline) == 0 })
				} else if ok, err := b.RecoverPartition("t", 0); !ok || err != nil {
					t.Fatalf("RecoverPartition after the fault cleared: %v %v", ok, err)
				}
				if h := b.PartitionHealth(); len(h.Offline) != 0 {
					t.Fatalf("offline after recovery: %+v", h.Offline)
				}
				if v := gauge(t, m, "ferry_offline_partitions"); v != 0 {
					t.Fatalf("ferry_offline_partitions = %v after recovery", v)
				}
				if v := gathered(t, m, "ferry_log_recoveries_total"); v != 1 {
					t.Fatalf("ferry_log_recoveries_total = %v, want 1", v)
				}
				offs := produceValues(t, b, "t", 0, "c0", "c1")
				if offs[0].Offset != int64(len(want)) {
					t.Fatalf("first offset after recovery %d, want %d", offs[0].Offset, len(want))
				}
				want = append(want, "c0", "c1")
				wantValues(t, b, "t", 0, want)
				wantValues(t, reopen(t, b), "t", 0, want)
			})
		}
	}
}

// TestIdempotentRetryAfterRecoveryIsNotDuplicated: an idempotent batch
// whose fsync failed is kept whole by recovery; the producer's retry after
// recovery gets the original offsets instead of a second copy.
func TestIdempotentRetryAfterRecoveryIsNotDuplicated(t *testing.T) {
	fs := errorfs.New(nil)
	b := newTestBroker(t, func(c *Config) { c.LogFS, c.FailedLogProbeInterval = fs, time.Hour })
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1, Configs: map[string]string{CfgFlushMessages: "1"}}); err != nil {
		t.Fatal(err)
	}
	batch := func(seq int32, v string) []byte {
		var bld records.Builder
		bld.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
		data, err := bld.AppendBatch(nil, records.BatchOptions{ProducerID: 7, BaseSequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	ctx := context.Background()
	if _, err := b.produceBatch(ctx, BatchProduce{Topic: "t", Batches: batch(0, "a"), Sync: true}); err != nil {
		t.Fatal(err)
	}
	fs.Inject(errorfs.Fault{Op: errorfs.OpSync, Err: errorfs.EIO})
	if _, err := b.produceBatch(ctx, BatchProduce{Topic: "t", Batches: batch(1, "b"), Sync: true}); !errors.Is(err, ErrStorage) {
		t.Fatalf("produce under fsync fault: %v", err)
	}
	fs.Clear()
	if ok, err := b.RecoverPartition("t", 0); !ok || err != nil {
		t.Fatalf("recover: %v %v", ok, err)
	}
	res, err := b.produceBatch(ctx, BatchProduce{Topic: "t", Batches: batch(1, "b"), Sync: true})
	if err != nil || res.BaseOffset != 1 {
		t.Fatalf("retry after recovery: %+v %v, want the kept batch's offset 1", res, err)
	}
	wantValues(t, b, "t", 0, []string{"a", "b"})
}

func produceSync(b *Broker, topic string, partition int32, sync bool, values ...string) error {
	req := &ProduceRequest{Topic: topic, Sync: sync}
	for _, v := range values {
		req.Records = append(req.Records, ProduceRecord{Partition: partition, Record: records.Record{Value: []byte(v)}})
	}
	_, err := b.Produce(context.Background(), req)
	return err
}

// wantOffline checks that exactly topic-partition is offline, in
// PartitionHealth and in the metrics.
func wantOffline(t *testing.T, b *Broker, m *metrics.Metrics, topic string, partition int32, total int) {
	t.Helper()
	h := b.PartitionHealth()
	if h.Partitions != total || len(h.Offline) != 1 || h.Offline[0].Topic != topic ||
		h.Offline[0].Partition != partition || h.Offline[0].Error == "" {
		t.Fatalf("PartitionHealth = %+v, want %s-%d offline of %d", h, topic, partition, total)
	}
	if !strings.Contains(h.Offline[0].Error, "input/output error") && !strings.Contains(h.Offline[0].Error, "no space left") {
		t.Errorf("offline error does not name the cause: %s", h.Offline[0].Error)
	}
	if v := gauge(t, m, "ferry_offline_partitions"); v != 1 {
		t.Fatalf("ferry_offline_partitions = %v, want 1", v)
	}
	if v := labelledGauge(t, m, "ferry_log_failed", topic, partition); v != 1 {
		t.Fatalf("ferry_log_failed{%s,%d} = %v, want 1", topic, partition, v)
	}
}

func wantValues(t *testing.T, b *Broker, topic string, partition int32, want []string) {
	t.Helper()
	if got := readValues(t, b, topic, partition, 0); !slices.Equal(got, want) {
		t.Fatalf("%s-%d holds %q, want %q", topic, partition, got, want)
	}
}

func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	return labelledGauge(t, m, name, "", -1)
}

// labelledGauge reads a gauge, of the given topic and partition when
// topic is not empty.
func labelledGauge(t *testing.T, m *metrics.Metrics, name, topic string, partition int32) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.Metric {
			labels := map[string]string{}
			for _, l := range mt.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if topic == "" || (labels["topic"] == topic && labels["partition"] == itoa(partition)) {
				return mt.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s,%d}", name, topic, partition)
	return 0
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
