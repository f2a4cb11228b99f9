package server

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/errorfs"

	"github.com/ferry-mq/ferry/test/harness"
)

// clusterReplica is a cluster broker's configuration (its partitions wait
// for the controller's roles) with the single-node metadata file standing
// in for ZooKeeper.
func clusterReplica(c *Config) { c.BrokerID, c.AwaitRoles = 1, true }

// followAt makes broker 1's replica of topic-partition a follower of broker
// 2 holding records 0..n-1, of which the leader has committed hw.
func followAt(t *testing.T, b *Broker, topic string, partition int32, n int, hw int64) {
	t.Helper()
	p, err := b.partition(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetRole(replication.Role{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	var rb records.Builder
	for range n {
		rb.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	}
	batch, err := rb.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsFollower(batch); err != nil {
		t.Fatal(err)
	}
	p.FollowHighWatermark(hw)
	if p.HighWatermark() != hw {
		t.Fatalf("follower high watermark %d, want %d", p.HighWatermark(), hw)
	}
}

func checkpointPath(b *Broker) string {
	return filepath.Join(b.cfg.DataDir, checkpoint.ReplicationOffsetFile)
}

func readCheckpoint(t *testing.T, b *Broker) string {
	t.Helper()
	data, err := os.ReadFile(checkpointPath(b))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A follower's high watermark is checkpointed at a clean shutdown, in
// Kafka's format, and is where the replica starts after the restart,
// before it hears from the controller or its leader. A partition the
// leader committed nothing of starts at 0.
func TestFollowerHighWatermarkSurvivesRestart(t *testing.T) {
	b := newTestBroker(t, clusterReplica)
	if err := b.CreateTopic(TopicSpec{Name: "rep", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	followAt(t, b, "rep", 0, 10, 6)
	followAt(t, b, "rep", 1, 3, 0)

	b = reopen(t, b)
	if got, want := readCheckpoint(t, b), "0\n2\nrep 0 6\nrep 1 0\n"; got != want {
		t.Fatalf("checkpoint %q, want %q", got, want)
	}
	p, err := b.partition("rep", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 6 || p.LogEndOffset() != 10 || p.Leader() != replication.NoLeader {
		t.Fatalf("after restart: high watermark %d, log end %d, leader %d; want 6, 10, none",
			p.HighWatermark(), p.LogEndOffset(), p.Leader())
	}
	if p, _ := b.partition("rep", 1); p.HighWatermark() != 0 || p.LogEndOffset() != 3 {
		t.Fatalf("partition 1 after restart: high watermark %d, log end %d", p.HighWatermark(), p.LogEndOffset())
	}
}

// The checkpoint is written on its interval, not only at shutdown, so a
// broker that crashes (kill -9) restarts from a recent high watermark; an
// unchanged state is not rewritten.
func TestHighWatermarksCheckpointedOnTheInterval(t *testing.T) {
	b := newTestBroker(t, clusterReplica, func(c *Config) { c.HighWatermarkCheckpointInterval = 10 * time.Millisecond })
	if err := b.CreateTopic(TopicSpec{Name: "rep", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	followAt(t, b, "rep", 0, 10, 4)
	holds := func(want string) func() bool {
		return func() bool { data, _ := os.ReadFile(checkpointPath(b)); return string(data) == want }
	}
	harness.WaitFor(t, "the checkpoint to hold rep 0 4", 10*time.Second, holds("0\n1\nrep 0 4\n"))
	p, _ := b.partition("rep", 0)
	p.FollowHighWatermark(9)
	harness.WaitFor(t, "the checkpoint to hold rep 0 9", 10*time.Second, holds("0\n1\nrep 0 9\n"))

	before, err := os.Stat(checkpointPath(b))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // ticks with nothing new to write
		b.checkpointHighWatermarks(time.Now())
	}
	after, err := os.Stat(checkpointPath(b))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("an unchanged checkpoint was rewritten")
	}
}

// A single node keeps its behaviour: each partition's high watermark after
// a restart is its log end, whatever the checkpoint says (with one replica
// every record in the log was acknowledged). The file is still written.
func TestSingleNodeHighWatermarkIsTheLogEndAfterRestart(t *testing.T) {
	b := newTestBroker(t)
	produceValues(t, b, "solo", 0, "a", "b", "c", "d")
	cfg := b.cfg
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readCheckpoint(t, b), "0\n1\nsolo 0 4\n"; got != want {
		t.Fatalf("single node's checkpoint %q, want %q", got, want)
	}
	if err := os.WriteFile(checkpointPath(b), []byte("0\n1\nsolo 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nb, err := Open(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if p, _ := nb.partition("solo", 0); p.HighWatermark() != 4 {
		t.Fatalf("single node's high watermark %d after restart, want its log end 4", p.HighWatermark())
	}
	if got := readValues(t, nb, "solo", 0, 0); len(got) != 4 {
		t.Fatalf("visible after restart: %v", got)
	}
}

// A corrupt checkpoint does not stop the broker: it warns, every replica
// starts at its log start (a high watermark too low is safe: the leader's
// answers raise it), and the next checkpoint replaces the file.
func TestCorruptCheckpointFallsBackToLogStart(t *testing.T) {
	for _, corrupt := range []string{
		"0\n2\nrep 0 6\n",            // a torn write: fewer lines than claimed
		"0\n1\nrep 0 -6\n",           // a negative offset
		"0\n999999999999\nrep 0 6\n", // a count beyond int32
		"7\n1\nrep 0 6\n",            // an unknown version
		"\x00\x00\x00\x00",           // zeroes after a crash on some file systems
	} {
		b := newTestBroker(t, clusterReplica)
		if err := b.CreateTopic(TopicSpec{Name: "rep", Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		followAt(t, b, "rep", 0, 10, 6)
		cfg := b.cfg
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(checkpointPath(b), []byte(corrupt), 0o644); err != nil {
			t.Fatal(err)
		}
		logs := &logBuffer{}
		nb, err := Open(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatalf("%q: the broker did not start: %v", corrupt, err)
		}
		p, _ := nb.partition("rep", 0)
		hw := p.HighWatermark()
		if err := nb.Close(); err != nil {
			t.Fatal(err)
		}
		if hw != 0 {
			t.Errorf("%q: high watermark %d, want the log start 0", corrupt, hw)
		}
		if !strings.Contains(logs.String(), "high watermark checkpoint unreadable") {
			t.Errorf("%q: no warning logged; logs: %s", corrupt, logs)
		}
		if got, want := readCheckpoint(t, nb), "0\n1\nrep 0 0\n"; got != want {
			t.Errorf("%q: checkpoint after the next write %q, want %q", corrupt, got, want)
		}
	}
}

// A failed checkpoint write is logged and tried again on the next tick;
// one at shutdown is Close's error. The previous file stays whole.
func TestCheckpointWriteFailure(t *testing.T) {
	fsys := errorfs.New(nil)
	b := newTestBroker(t, clusterReplica, func(c *Config) {
		c.LogFS, c.HighWatermarkCheckpointInterval = fsys, 10*time.Millisecond
	})
	if err := b.CreateTopic(TopicSpec{Name: "rep", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	followAt(t, b, "rep", 0, 10, 4)
	holds := func(want string) func() bool {
		return func() bool { data, _ := os.ReadFile(checkpointPath(b)); return string(data) == want }
	}
	harness.WaitFor(t, "the checkpoint to hold rep 0 4", 10*time.Second, holds("0\n1\nrep 0 4\n"))

	var failed atomic.Int32
	fsys.Inject(errorfs.Fault{Op: errorfs.OpRename, PathSuffix: checkpoint.ReplicationOffsetFile, Err: errorfs.EIO,
		Hook: func(string) { failed.Add(1) }})
	p, _ := b.partition("rep", 0)
	p.FollowHighWatermark(7)
	harness.WaitFor(t, "a few failing ticks", 10*time.Second, func() bool { return failed.Load() >= 3 })
	if !holds("0\n1\nrep 0 4\n")() {
		t.Fatalf("checkpoint after failed writes: %q", readCheckpoint(t, b))
	}
	fsys.Clear()
	harness.WaitFor(t, "the checkpoint to hold rep 0 7", 10*time.Second, holds("0\n1\nrep 0 7\n"))

	fsys.Inject(errorfs.Fault{Op: errorfs.OpRename, PathSuffix: checkpoint.ReplicationOffsetFile})
	p.FollowHighWatermark(8)
	if err := b.Close(); err == nil || !strings.Contains(err.Error(), "high watermark checkpoint") {
		t.Fatalf("Close with a failing checkpoint write: %v", err)
	}
	if got := readCheckpoint(t, b); got != "0\n1\nrep 0 7\n" {
		t.Fatalf("checkpoint after a failed write at shutdown: %q", got)
	}
}

// logBuffer collects a broker's log lines for a test to search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
