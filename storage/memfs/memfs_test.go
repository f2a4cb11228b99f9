package memfs_test

import (
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"testing"

	"github.com/ferry-mq/ferry/storage/memfs"
)

func TestCrashImageKeepsOnlySyncedBytes(t *testing.T) {
	m := memfs.New()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("durable"), 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("-lost"), 7)
	img := m.CrashImage(nil)
	g, err := img.OpenFile("/d/a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 20)
	n, _ := g.ReadAt(buf, 0)
	if string(buf[:n]) != "durable" {
		t.Fatalf("crash image holds %q", buf[:n])
	}
	// With a random writeback, a prefix of the unsynced bytes may survive.
	img = m.CrashImage(rand.New(rand.NewSource(3)))
	g, _ = img.OpenFile("/d/a", os.O_RDONLY, 0)
	n, _ = g.ReadAt(buf, 0)
	if got := string(buf[:n]); got != "durable-lost"[:len(got)] || len(got) < 7 {
		t.Fatalf("crash image holds %q", got)
	}
	// A removed name keeps an open handle readable, as on Linux.
	if err := m.Remove("/d/a"); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "durable-lost" {
		t.Fatalf("open handle after remove reads %q", buf[:n])
	}
	if _, err := m.Stat("/d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after remove: %v", err)
	}
	if names, _ := m.ReadDir("/d"); len(names) != 0 {
		t.Fatalf("dir lists %v", names)
	}
}
