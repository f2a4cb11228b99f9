package server

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/ferry-mq/ferry/storage/errorfs"
)

// dataDirs lists the partition directories (and other entries) in the data
// dir, without the metadata file.
func dataDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != metadataFile {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	fs := errorfs.New(nil)
	b := newTestBroker(t, func(c *Config) { c.LogFS = fs })
	before := dataDirs(t, b.cfg.DataDir)
	// The third partition's time index cannot be opened.
	fs.Inject(errorfs.Fault{Op: errorfs.OpOpen, PathSuffix: ".timeindex", After: 2, Times: 1})
	err := b.CreateTopic(TopicSpec{Name: "broken", Partitions: 4})
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("create: %v, want ErrStorage", err)
	}
	if got := dataDirs(t, b.cfg.DataDir); len(got) != len(before) {
		t.Fatalf("after a failed create the data dir holds %v, before %v", got, before)
	}
	if _, err := b.lookup("broken"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("lookup after failed create: %v", err)
	}
	b = reopen(t, b)
	if _, err := b.lookup("broken"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("after restart: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "broken", Partitions: 4}); err != nil {
		t.Fatalf("create once the fault is gone: %v", err)
	}
}

func TestFailedAddPartitionsLeavesNothing(t *testing.T) {
	fs := errorfs.New(nil)
	b := newTestBroker(t, func(c *Config) { c.LogFS = fs })
	if err := b.CreateTopic(TopicSpec{Name: "grow", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	before := dataDirs(t, b.cfg.DataDir)
	fs.Inject(errorfs.Fault{Op: errorfs.OpOpen, PathSuffix: ".index", After: 1, Times: 1})
	if err := b.CreatePartitions("grow", 4); !errors.Is(err, ErrStorage) {
		t.Fatalf("create partitions: %v, want ErrStorage", err)
	}
	if got := dataDirs(t, b.cfg.DataDir); len(got) != len(before) {
		t.Fatalf("data dir holds %v, before %v", got, before)
	}
	if n, _ := b.PartitionCount("grow"); n != 1 {
		t.Fatalf("partitions = %d, want 1", n)
	}
}

func TestRestartRemovesHalfCreatedPartitions(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "kept", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	dir := b.cfg.DataDir
	// A crash between creating the logs and recording the topic leaves this.
	if err := markCreating(filepath.Join(dir, "ghost-0")); err != nil {
		t.Fatal(err)
	}
	// A directory without the marker is never ferry's to remove.
	if err := os.MkdirAll(filepath.Join(dir, "foreign-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A recorded partition whose marker was not yet cleared keeps its data.
	if err := markCreating(filepath.Join(dir, "kept-0")); err != nil {
		t.Fatal(err)
	}
	b = reopen(t, b)
	got := dataDirs(t, dir)
	want := []string{"foreign-0", "kept-0"}
	for _, w := range want {
		if !contains(got, w) {
			t.Fatalf("data dir %v lacks %s", got, w)
		}
	}
	if contains(got, "ghost-0") {
		t.Fatalf("half-created ghost-0 survived the restart: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept-0", creatingMarker)); !os.IsNotExist(err) {
		t.Fatalf("marker of a recorded partition not cleared: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPartitionLimit(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.MaxPartitions = 5 })
	if err := b.CreateTopic(TopicSpec{Name: "a", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	before := dataDirs(t, b.cfg.DataDir)
	err := b.CreateTopic(TopicSpec{Name: "b", Partitions: 3})
	if !errors.Is(err, ErrPartitionLimit) || KafkaCode(err) != KafkaPolicyViolation {
		t.Fatalf("create over the limit: %v (code %d), want ErrPartitionLimit / 44", err, KafkaCode(err))
	}
	if err := b.CreatePartitions("a", 6); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("add partitions over the limit: %v", err)
	}
	if got := dataDirs(t, b.cfg.DataDir); len(got) != len(before) {
		t.Fatalf("refused creates left %v (before %v)", got, before)
	}
	if err := b.CreateTopic(TopicSpec{Name: "c", Partitions: 2}); err != nil {
		t.Fatalf("create up to the limit: %v", err)
	}
	// Auto-creation by produce is bounded the same way.
	if _, err := b.Produce(t.Context(), &ProduceRequest{Topic: "auto", Records: []ProduceRecord{{Partition: PartitionAuto}}}); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("auto-create over the limit: %v", err)
	}
}

func TestPartitionAndOpenFileLimits(t *testing.T) {
	// Idle partitions hold no descriptors: 50,000 fit by default whatever
	// the fd limit, and the log files' budget stays well under it.
	if n := partitionLimit(0); n < 50_000 {
		t.Fatalf("default partition limit %d", n)
	}
	if n := partitionLimit(7); n != 7 {
		t.Fatalf("configured limit: %d", n)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if n := openFilesLimit(0); n < 16 || (rl.Cur >= 64 && uint64(n) > rl.Cur/4) {
		t.Fatalf("default open files budget %d with a limit of %d", n, rl.Cur)
	}
	if n := openFilesLimit(9); n != 9 {
		t.Fatalf("configured open files budget: %d", n)
	}
}

// A create whose metadata write fails removes the partitions it made.
func TestFailedMetadataWriteLeavesNothing(t *testing.T) {
	b := newTestBroker(t)
	before := dataDirs(t, b.cfg.DataDir)
	// The temporary metadata file cannot be created where a directory is.
	blocker := filepath.Join(b.cfg.DataDir, metadataFile+".tmp")
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "unrecorded", Partitions: 3}); !errors.Is(err, ErrStorage) {
		t.Fatalf("create: %v, want ErrStorage", err)
	}
	os.Remove(blocker)
	if got := dataDirs(t, b.cfg.DataDir); len(got) != len(before) {
		t.Fatalf("data dir holds %v, before %v", got, before)
	}
	if _, err := b.lookup("unrecorded"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("lookup: %v", err)
	}
}
